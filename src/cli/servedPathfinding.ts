import { createPfsApi } from '../pathfinding/service/api.ts'
import type { PathfindingService } from '../pathfinding/service/service.ts'
import { listen } from './httpServer.ts'
import type { ServedServiceApi } from './serviceRun.ts'

/**
 * Serves a pathfinding service's REST API over HTTP: a public API (docs/decisions/0072), on any address. AddressInUseError
 * when the port is taken.
 */
export async function servePathfindingApi({
  service,
  host,
  port,
  transportInfo,
}: {
  service: PathfindingService
  host: string
  port: number
  transportInfo?: { peerId: string; relays: readonly string[] } | undefined
}): Promise<ServedServiceApi> {
  let failed: (error: unknown) => void = () => {}
  const internalError = new Promise<unknown>((resolve) => (failed = resolve))
  const app = createPfsApi({ service, transportInfo, onInternalError: failed })
  const server = await listen((request) => app.fetch(request), { host, port })
  return { server, apiUrl: `${server.url}/api/v1`, internalError }
}
