import type { HostRule, OriginPattern } from '../api/hostsAndOrigins.ts'
import { createMonitorApi } from '../monitor/api.ts'
import type { MonitoringService } from '../monitor/service.ts'
import { checkApiExposure } from './apiExposure.ts'
import { listen } from './httpServer.ts'
import type { ServedServiceApi } from './serviceRun.ts'

/**
 * Serves a monitoring service's REST API over HTTP with the access rules of `sluice serve` (docs/decisions/0025):
 * its own Host names, no other site's pages unless `corsOrigins` allows them, a bearer token when given (needed
 * beyond loopback: ApiExposedError). AddressInUseError when the port is taken.
 */
export async function serveMonitorApi({
  service,
  host,
  port,
  access = {},
  peerId,
}: {
  service: Pick<MonitoringService, 'status' | 'channels'>
  host: string
  port: number
  access?: { hosts?: readonly HostRule[]; corsOrigins?: readonly OriginPattern[]; token?: string | undefined }
  peerId?: string | undefined
}): Promise<ServedServiceApi> {
  checkApiExposure({ host, ...access })
  let failed: (error: unknown) => void = () => {}
  const internalError = new Promise<unknown>((resolve) => (failed = resolve))
  // The API checks the Host against the port the OS gave, so it is built once the server listens.
  let app: ReturnType<typeof createMonitorApi> | undefined
  const server = await listen((request) => app!.fetch(request), { host, port })
  app = createMonitorApi({
    service,
    access: { boundHost: host, port: server.port, hosts: access.hosts ?? [], corsOrigins: access.corsOrigins ?? [], token: access.token },
    peerId,
    onInternalError: failed,
  })
  return { server, apiUrl: `${server.url}/api/v1`, internalError }
}
