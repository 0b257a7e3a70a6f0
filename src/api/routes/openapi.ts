import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'

/** GET /openapi.json: the OpenAPI 3.1 document of every route, generated from the routes' own docs. */
export function openapiRoutes(resources: Resources, ctx: ApiContextRef): void {
  // Built at the first request, when every module has added its routes, and kept: routes do not change later.
  let document: string | undefined
  resources.add('/openapi.json', {
    GET: {
      doc: {
        summary: 'This OpenAPI 3.1 document',
        description:
          'Request schemas are generated (@valibot/to-json-schema) from the same valibot schemas that validate each request, so they cannot drift from what the API accepts. Answered while the node syncs.',
        responses: { 200: 'the OpenAPI document' },
        schema: { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' } } },
      },
      handler: async (c) => {
        // The builder is only needed here: imported when asked for, it is a chunk of its own in the browser worker.
        const { openApiDocument } = await import('../openApiDocument.ts')
        document ??= JSON.stringify(openApiDocument(resources.routes, { version: ctx().version, basePath: ctx().basePath, tokenRequired: ctx().tokenRequired }))
        return c.body(document, 200, { 'content-type': 'application/json' })
      },
    },
  })
}
