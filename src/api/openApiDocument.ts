// The OpenAPI document's builder: only GET /openapi.json (routes/openapi.ts, loaded with import() there, so the
// browser worker's first chunk has neither it nor @valibot/to-json-schema) and describeApi use it.
import * as v from 'valibot'
import type { Field, Shape } from './fields.ts'
import { strictShape } from './fields.ts'
import { jsonSchemaOf } from './jsonSchema.ts'
import type { Route } from './resource.ts'
import { addressSchema, isValibot, type Schema } from './schema.ts'

/** The error body of every answer that is not a success (docs/rest-api.md, Errors). */
const errorSchema = {
  type: 'object',
  properties: { errors: { type: 'string' }, code: { type: 'string', description: 'a stable code for the kind of error (src/api/errorCodes.ts)' } },
  required: ['errors', 'code'],
  additionalProperties: false,
}

/** Statuses any route can answer (docs/rest-api.md: 500 and 503 can follow any endpoint), unless its doc says more. */
const commonResponses: Record<number, string> = {
  500: 'internal error: the API stops answering (503) until the node is restarted',
  503: 'the API is unavailable: initial sync, or shutting down',
}

export type OpenApiDocument = {
  openapi: '3.1.0'
  info: { title: string; version: string; description: string }
  jsonSchemaDialect: string
  servers: { url: string }[]
  paths: Record<string, Record<string, unknown>>
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, string>> }
  security?: Record<string, string[]>[]
}

/** The credential `sluice serve --api-token-file` asks for (docs/decisions/0025-who-may-call-the-headless-api.md). */
const bearerScheme = {
  type: 'http',
  scheme: 'bearer',
  description: 'The first line of the file given to sluice serve --api-token-file. Without that flag no credential is asked for.',
}

/** `/channels/:token_address` -> `/channels/{token_address}`, with the names of its parameters. */
export function openApiPath(path: string): { path: string; parameters: string[] } {
  const parameters: string[] = []
  // Hono may give a parameter a pattern (`:id{[0-9]+}`): the document names the parameter only.
  const converted = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)(\{[^}]*\})?/g, (_, name: string) => {
    parameters.push(name)
    return `{${name}}`
  })
  return { path: converted, parameters }
}

/** The OpenAPI 3.1 document of `routes`. */
export function openApiDocument(
  routes: readonly Route[],
  { version, basePath, tokenRequired = false }: { version: string; basePath: string; tokenRequired?: boolean },
): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {}
  const common = tokenRequired ? { ...commonResponses, 401: 'no Authorization: Bearer <token> header, a malformed one, or a wrong token' } : commonResponses
  for (const route of routes) {
    const { path, parameters } = openApiPath(route.path)
    paths[path] ??= parameters.length ? { parameters: parameters.map(pathParameter) } : {}
    const item = paths[path]
    item[route.method.toLowerCase()] = operation(route, common)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice REST API',
      version,
      description:
        'The REST API of a Sluice node (Raiden-compatible payment channels). Amounts, identifiers and block numbers are decimal strings in answers; requests take a JSON integer or a decimal string. Every answer that is not a success has the body {"errors": "..."}.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [{ url: basePath }],
    paths,
    components: { schemas: { Error: errorSchema }, securitySchemes: { bearer: bearerScheme } },
    ...(tokenRequired ? { security: [{ bearer: [] }] } : {}),
  }
}

function pathParameter(name: string) {
  const isAddress = name.endsWith('_address')
  return {
    name,
    in: 'path',
    required: true,
    description: isAddress ? 'EIP-55 checksummed address (any other form is 404)' : name,
    schema: isAddress ? addressSchema : { type: 'string' },
  }
}

function operation(route: Route, common: Record<number, string>) {
  const { doc } = route
  const op: Record<string, unknown> = {
    operationId: operationId(route),
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
  }
  if (doc.query && Object.keys(doc.query).length) {
    op.parameters = Object.entries(doc.query).map(([name, field]) => ({ name, in: 'query', required: !isOptional(field), schema: jsonSchemaOf(field) }))
  }
  if (doc.body) {
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: doc.bodyOneOf ? oneFieldOf(doc.body) : objectOf(doc.body) } },
    }
  }
  const responses: Record<string, unknown> = {}
  // Any request but a GET may be refused for its body's type (src/api/input.ts, checkBodyMediaType).
  const mediaType = route.method === 'GET' ? {} : { 415: 'a Content-Type other than application/json, or a body without one' }
  for (const [status, description] of Object.entries({ ...common, ...mediaType, ...doc.responses })) {
    const code = Number(status)
    if (description === undefined) continue
    responses[status] = response(code, description, route)
  }
  op.responses = responses
  return op
}

function response(status: number, description: string, route: Route) {
  if (status >= 400) return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
  // No body: 204, and a redirect (its Location says where).
  if (status === 204 || (status >= 300 && status < 400)) return { description }
  const contentType = route.doc.contentType ?? 'application/json'
  const { schema = {} } = route.doc
  return { description, content: { [contentType]: { schema: isValibot(schema) ? jsonSchemaOf(schema) : schema } } }
}

/** A body with the fields of `shape`: the required ones are those not optional; nothing else is accepted. */
export function objectOf(shape: Shape): Schema {
  return jsonSchemaOf(strictShape(shape))
}

const isOptional = (field: Field): field is v.NullishSchema<Field, undefined> => field.type === 'nullish'

/** A body with exactly one of the fields of `shape` (PATCH /channels, POST /user_deposit). */
function oneFieldOf(shape: Shape): Schema {
  return { oneOf: Object.entries(shape).map(([name, field]) => objectOf({ [name]: isOptional(field) ? v.unwrap(field) : field })) }
}

/** `PATCH /channels/:token_address/:partner_address` -> `patchChannelsByTokenAddressByPartnerAddress`. */
function operationId({ method, path }: Route): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `by_${segment.slice(1).replace(/\{.*$/, '')}` : segment))
    .join('_')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')
}
