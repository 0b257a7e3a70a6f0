import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { describeApi } from '../../src/api/describeApi.ts'
import { address, integer, oneOf, optional } from '../../src/api/fields.ts'
import { objectOf, openApiDocument, openApiPath } from '../../src/api/openApiDocument.ts'
import { jsonSchemaOf } from '../../src/api/jsonSchema.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { serveNode, startApiNet, type ApiNet, createApiNode } from './support/apiNet.ts'
import { checkOpenApi31 } from './support/openapiCheck.ts'

let net: ApiNet
beforeAll(async () => {
  net = await startApiNet({ nodes: 1 })
})
afterAll(() => net?.stopAll())

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const r = await net.nodes[0]!.get('/openapi.json')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toMatch(/^application\/json/)
    expect(r.body.openapi).toBe('3.1.0')
    expect(r.body.info.version).toBe('0.1.0')
    expect(r.body.servers).toEqual([{ url: '/api/v1' }])
    expect(checkOpenApi31(r.body)).toEqual([])
  })

  it('is the document describeApi makes without a node, and the one the sluice package ships', async () => {
    const served = (await net.nodes[0]!.get('/openapi.json')).body
    expect(describeApi({ version: served.info.version })).toEqual(served)
    const shipped = JSON.parse(readFileSync(new URL('../../packages/sluice/openapi.json', import.meta.url), 'utf8'))
    expect(shipped).toEqual(served)
  })

  it('documents every route the API serves, with every method, path parameter, query parameter, body field and status', async () => {
    const n = net.nodes[0]!
    const doc = (await n.get('/openapi.json')).body
    const routes = n.api.resources.routes
    expect(routes.length).toBeGreaterThan(5)
    let operations = 0
    for (const route of routes) {
      const { path, parameters } = openApiPath(route.path)
      const where = `${route.method} ${route.path}`
      const item = doc.paths[path]
      expect(item, where).toBeDefined()
      const op = item[route.method.toLowerCase()]
      expect(op, where).toBeDefined()
      operations++
      expect(op.summary, where).toBe(route.doc.summary)
      expect(
        (item.parameters ?? []).map((p: { name: string }) => p.name),
        where,
      ).toEqual(parameters)
      for (const p of item.parameters ?? []) expect(p, where).toMatchObject({ in: 'path', required: true })
      expect((op.parameters ?? []).map((p: { name: string }) => p.name).sort(), where).toEqual(Object.keys(route.doc.query ?? {}).sort())
      for (const status of Object.keys(route.doc.responses))
        expect(op.responses[status], `${where} ${status}`).toMatchObject({ description: route.doc.responses[Number(status)] })
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) >= 400) expect(response.content['application/json'].schema, `${where} ${status}`).toEqual({ $ref: '#/components/schemas/Error' })
      }
      expect(op.responses['503'], where).toBeDefined()
      const body = op.requestBody?.content['application/json'].schema
      if (!route.doc.body) expect(op.requestBody, where).toBeUndefined()
      else if (route.doc.bodyOneOf)
        expect(
          body.oneOf.map((s: { required: string[] }) => s.required[0]),
          where,
        ).toEqual(Object.keys(route.doc.body))
      else expect(Object.keys(body.properties), where).toEqual(Object.keys(route.doc.body))
    }
    const documented = Object.values<Record<string, unknown>>(doc.paths).reduce(
      (sum, item) => sum + Object.keys(item).filter((k) => k !== 'parameters').length,
      0,
    )
    expect(documented).toBe(operations)
    expect(doc.components.schemas.Error).toMatchObject({
      type: 'object',
      properties: { errors: { type: 'string' }, code: { type: 'string' } },
      required: ['errors', 'code'],
      additionalProperties: false,
    })
    // The push events are a stream, not JSON.
    expect(Object.keys(doc.paths['/events'].get.responses['200'].content)).toEqual(['text/event-stream'])
  })

  it('turns Hono paths into templates, bodies into schemas, and one-field bodies into oneOf', () => {
    expect(openApiPath('/channels/:token_address/:partner_address')).toEqual({
      path: '/channels/{token_address}/{partner_address}',
      parameters: ['token_address', 'partner_address'],
    })
    expect(openApiPath('/things/:id{[0-9]+}/x')).toEqual({ path: '/things/{id}/x', parameters: ['id'] })
    expect(objectOf({ amount: integer(), target: optional(address()) })).toEqual({
      type: 'object',
      properties: { amount: jsonSchemaOf(integer()), target: jsonSchemaOf(address()) },
      required: ['amount'],
      additionalProperties: false,
    })
    const doc = openApiDocument(
      [
        {
          method: 'PATCH',
          path: '/items/:item_address',
          doc: {
            summary: 'patch',
            body: { state: oneOf(['closed']), total: integer() },
            bodyOneOf: true,
            responses: { 200: 'ok', 204: 'nothing', 409: 'conflict' },
          },
          handler: () => new Response(),
        },
      ],
      { version: '9', basePath: '/api/v1' },
    )
    expect(checkOpenApi31(doc)).toEqual([])
    const op = doc.paths['/items/{item_address}']!.patch as any
    expect(op.requestBody.content['application/json'].schema.oneOf).toEqual([
      { type: 'object', properties: { state: { type: 'string', enum: ['closed'] } }, required: ['state'], additionalProperties: false },
      { type: 'object', properties: { total: jsonSchemaOf(integer()) }, required: ['total'], additionalProperties: false },
    ])
    expect(op.responses['204']).toEqual({ description: 'nothing' })
    expect(op.responses['500']).toBeDefined()
  })

  it('the structural check finds what a broken document gets wrong', async () => {
    const good = (await net.nodes[0]!.get('/openapi.json')).body
    const broken = structuredClone(good)
    broken.openapi = '3.0.3'
    delete broken.paths['/channels/{token_address}']?.parameters
    broken.paths['/address'].get.responses = { '20x': { description: 'x' }, 404: {} }
    broken.paths['/version'].get.operationId = broken.paths['/address'].get.operationId
    broken.paths['/status'].get.responses['200'].content['application/json'].schema = { type: 'text', required: 'status' }
    broken.paths['/events'].get.parameters[0].schema = { $ref: '#/components/schemas/Nothing' }
    const problems = checkOpenApi31(broken).join('\n')
    expect(problems).toMatch(/openapi: must be 3\.1\.x/)
    expect(problems).toMatch(/bad status key 20x/)
    expect(problems).toMatch(/404: a response needs a description/)
    expect(problems).toMatch(/operationId getAddress is not unique/)
    expect(problems).toMatch(/bad type "text"/)
    expect(problems).toMatch(/required: must be an array/)
    expect(problems).toMatch(/\$ref #\/components\/schemas\/Nothing does not resolve/)
    if (good.paths['/channels/{token_address}']) expect(problems).toMatch(/template \{token_address\} has no path parameter/)
  })

  it('is answered while the node syncs', async () => {
    const node = await createApiNode(net, anvilKeys[7]!)
    const served = await serveNode(node)
    try {
      expect((await served.get('/address')).status).toBe(503)
      const r = await served.get('/openapi.json')
      expect(r.status).toBe(200)
      expect(checkOpenApi31(r.body)).toEqual([])
    } finally {
      await served.server.close(100)
      await node.stop()
    }
  })
})
