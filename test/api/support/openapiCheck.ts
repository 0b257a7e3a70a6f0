/**
 * A structural check of an OpenAPI 3.1 document: the rules of the specification that a generator can get wrong
 * (required fields, path templates and their parameters, response keys, unique operation ids, resolvable $refs)
 * and the JSON Schema keywords the schemas use. Returns every problem found, as `where: what`.
 */
export function checkOpenApi31(doc: any): string[] {
  const problems: string[] = []
  const fail = (where: string, what: string) => problems.push(`${where}: ${what}`)
  const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

  if (typeof doc?.openapi !== 'string' || !/^3\.1\.\d+$/.test(doc.openapi)) fail('openapi', `must be 3.1.x, got ${doc?.openapi}`)
  if (!isObject(doc?.info) || typeof doc.info.title !== 'string' || typeof doc.info.version !== 'string') fail('info', 'needs title and version strings')
  if (doc.jsonSchemaDialect !== undefined && typeof doc.jsonSchemaDialect !== 'string') fail('jsonSchemaDialect', 'must be a URI string')
  if (!isObject(doc.paths) && !isObject(doc.webhooks) && !isObject(doc.components)) fail('document', 'needs paths, webhooks or components')
  for (const key of Object.keys(doc))
    if (
      !['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'externalDocs'].includes(key) &&
      !key.startsWith('x-')
    )
      fail(key, 'not a field of the OpenAPI object')
  for (const [i, server] of (doc.servers ?? []).entries()) if (typeof server?.url !== 'string') fail(`servers[${i}]`, 'needs a url')

  const resolve = (ref: string, where: string): any => {
    if (!ref.startsWith('#/')) return fail(where, `$ref ${ref} is not local`)
    let at: any = doc
    for (const part of ref.slice(2).split('/')) {
      at = at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')]
      if (at === undefined) return fail(where, `$ref ${ref} does not resolve`)
    }
    return at
  }

  const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object', 'null'])
  const checkSchema = (schema: any, where: string): void => {
    if (typeof schema === 'boolean') return
    if (!isObject(schema)) return void fail(where, 'a schema must be an object or a boolean')
    if (schema.$ref !== undefined) resolve(schema.$ref, where)
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type]
      if (types.length === 0 || !types.every((t: unknown) => typeof t === 'string' && TYPES.has(t))) fail(where, `bad type ${JSON.stringify(schema.type)}`)
    }
    for (const k of ['oneOf', 'anyOf', 'allOf'] as const) {
      if (schema[k] === undefined) continue
      if (!Array.isArray(schema[k]) || schema[k].length === 0) fail(`${where}.${k}`, 'must be a non-empty array')
      else schema[k].forEach((s: unknown, i: number) => checkSchema(s, `${where}.${k}[${i}]`))
    }
    if (schema.not !== undefined) checkSchema(schema.not, `${where}.not`)
    if (schema.items !== undefined) checkSchema(schema.items, `${where}.items`)
    if (schema.properties !== undefined) {
      if (!isObject(schema.properties)) fail(`${where}.properties`, 'must be an object')
      else for (const [name, s] of Object.entries(schema.properties)) checkSchema(s, `${where}.properties.${name}`)
    }
    if (schema.additionalProperties !== undefined) checkSchema(schema.additionalProperties, `${where}.additionalProperties`)
    if (schema.required !== undefined) {
      if (
        !Array.isArray(schema.required) ||
        !schema.required.every((r: unknown) => typeof r === 'string') ||
        new Set(schema.required).size !== schema.required.length
      )
        fail(`${where}.required`, 'must be an array of unique strings')
      // With no other properties allowed, a required one that is not listed could never be given.
      else if (schema.additionalProperties === false)
        for (const r of schema.required) if (!Object.hasOwn(schema.properties ?? {}, r)) fail(`${where}.required`, `${r} is not among the properties`)
    }
    if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.length === 0)) fail(`${where}.enum`, 'must be a non-empty array')
    if (schema.pattern !== undefined) {
      try {
        new RegExp(schema.pattern, 'u')
      } catch {
        fail(`${where}.pattern`, `not a regular expression: ${schema.pattern}`)
      }
    }
    for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
      if (schema[k] !== undefined && typeof schema[k] !== 'number') fail(`${where}.${k}`, 'must be a number')
    }
    if (schema.description !== undefined && typeof schema.description !== 'string') fail(`${where}.description`, 'must be a string')
  }

  const checkContent = (content: any, where: string) => {
    if (!isObject(content) || Object.keys(content).length === 0) return void fail(where, 'content must name at least one media type')
    for (const [type, media] of Object.entries(content)) {
      if (!/^[a-z]+\/[a-z0-9.+-]+$/i.test(type)) fail(`${where}`, `bad media type ${type}`)
      if (!isObject(media)) fail(`${where}.${type}`, 'must be a Media Type object')
      else if (media.schema !== undefined) checkSchema(media.schema, `${where}.${type}.schema`)
    }
  }

  const checkParameter = (p: any, where: string) => {
    if (isObject(p) && p.$ref) p = resolve(p.$ref, where)
    if (!isObject(p) || typeof p.name !== 'string' || !['query', 'header', 'path', 'cookie'].includes(p.in))
      return void fail(where, 'a parameter needs a name and in (query, header, path or cookie)')
    if (p.in === 'path' && p.required !== true) fail(where, `path parameter ${p.name} must be required`)
    if ((p.schema === undefined) === (p.content === undefined)) fail(where, 'a parameter has exactly one of schema and content')
    if (p.schema !== undefined) checkSchema(p.schema, `${where}.schema`)
    return p
  }

  const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
  const operationIds = new Set<string>()
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    if (!path.startsWith('/')) fail(path, 'a path must start with /')
    if (!isObject(item)) {
      fail(path, 'must be a Path Item object')
      continue
    }
    for (const key of Object.keys(item))
      if (![...METHODS, 'summary', 'description', 'servers', 'parameters', '$ref'].includes(key) && !key.startsWith('x-'))
        fail(path, `${key} is not a field of a Path Item`)
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
    if (new Set(templated).size !== templated.length) fail(path, 'a template name appears twice')
    const pathLevel = (item.parameters ?? []).map((p: unknown, i: number) => checkParameter(p, `${path}.parameters[${i}]`))
    for (const method of METHODS) {
      const op = item[method]
      if (op === undefined) continue
      const where = `${method.toUpperCase()} ${path}`
      if (!isObject(op)) {
        fail(where, 'must be an Operation object')
        continue
      }
      if (op.operationId !== undefined) {
        if (operationIds.has(op.operationId)) fail(where, `operationId ${op.operationId} is not unique`)
        operationIds.add(op.operationId)
      }
      const own = (op.parameters ?? []).map((p: unknown, i: number) => checkParameter(p, `${where}.parameters[${i}]`))
      const seen = new Set<string>()
      for (const p of own) {
        if (!p) continue
        if (seen.has(`${p.in}:${p.name}`)) fail(where, `parameter ${p.name} in ${p.in} appears twice`)
        seen.add(`${p.in}:${p.name}`)
      }
      // Operation parameters override path-level ones with the same name and location.
      const all = [...own, ...pathLevel.filter((p: any) => p && !seen.has(`${p.in}:${p.name}`))].filter(Boolean)
      const pathParams = all.filter((p: any) => p.in === 'path').map((p: any) => p.name as string)
      for (const name of templated) if (!pathParams.includes(name)) fail(where, `template {${name}} has no path parameter`)
      for (const name of pathParams) if (!templated.includes(name)) fail(where, `path parameter ${name} is not in the template`)
      if (op.requestBody !== undefined) {
        if (!isObject(op.requestBody)) fail(`${where}.requestBody`, 'must be a Request Body object')
        else checkContent(op.requestBody.content, `${where}.requestBody.content`)
      }
      if (!isObject(op.responses) || Object.keys(op.responses).length === 0) {
        fail(where, 'needs at least one response')
        continue
      }
      for (const [code, response] of Object.entries<any>(op.responses)) {
        if (code !== 'default' && !/^[1-5](\d\d|XX)$/.test(code)) fail(`${where}.responses`, `bad status key ${code}`)
        const r = isObject(response) && response.$ref ? resolve(response.$ref, `${where}.responses.${code}`) : response
        if (!isObject(r) || typeof r.description !== 'string') fail(`${where}.responses.${code}`, 'a response needs a description')
        else if (r.content !== undefined) checkContent(r.content, `${where}.responses.${code}.content`)
      }
    }
  }
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) checkSchema(schema, `components.schemas.${name}`)
  const schemes: Record<string, any> = doc.components?.securitySchemes ?? {}
  for (const [name, scheme] of Object.entries(schemes)) {
    const where = `components.securitySchemes.${name}`
    if (!['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'].includes(scheme?.type)) fail(where, `bad type ${scheme?.type}`)
    else if (scheme.type === 'http' && typeof scheme.scheme !== 'string') fail(where, 'an http scheme needs its scheme name')
  }
  if (doc.security !== undefined && !Array.isArray(doc.security)) fail('security', 'must be an array of requirements')
  for (const [i, requirement] of (Array.isArray(doc.security) ? doc.security : []).entries())
    for (const name of Object.keys(requirement ?? {})) if (!schemes[name]) fail(`security[${i}]`, `${name} is not in components.securitySchemes`)
  return problems
}
