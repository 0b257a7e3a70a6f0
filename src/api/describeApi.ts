import { API_BASE_PATH, registerRoutes } from './app.ts'
import { openApiDocument, type OpenApiDocument } from './openApiDocument.ts'
import { Resources } from './resource.ts'

/**
 * The OpenAPI document of the API without a node: the routes registered with a context that fails if read, so
 * this is the very document GET /openapi.json serves (scripts/openapi.ts writes it into the sluice package). Its
 * own module: app.ts, which the browser worker loads, must not import the document's builder.
 */
export function describeApi({ version, tokenRequired = false }: { version: string; tokenRequired?: boolean }): OpenApiDocument {
  const resources = new Resources()
  registerRoutes(resources, () => {
    throw new Error('describeApi has no node: a route read its context while registering, not in its handler')
  })
  return openApiDocument(resources.routes, { version, basePath: API_BASE_PATH, tokenRequired })
}
