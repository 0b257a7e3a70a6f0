import { listen, type HttpServer } from '../cli/httpServer.ts'
import type { Metrics } from './registry.ts'

export type MetricsServer = {
  /** http://host:port/metrics, with the port the OS gave when 0 was asked. */
  url: string
  server: HttpServer
  close(graceMs?: number): Promise<void>
}

/**
 * The scrape endpoint's answers: `GET /metrics` (and HEAD) the text exposition; anything else 404 or 405. A collect
 * that fails is a bug of ours: the scrape gets a 500, and the process carries on (Prometheus marks the target down).
 */
export function metricsFetch(metrics: Metrics): (request: Request) => Promise<Response> {
  return async (request) => {
    const { pathname } = new URL(request.url)
    if (pathname !== '/metrics') return new Response('not found: the metrics are at /metrics\n', { status: 404, headers: { 'content-type': 'text/plain' } })
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return new Response('method not allowed\n', { status: 405, headers: { allow: 'GET, HEAD', 'content-type': 'text/plain' } })
    let body: string
    try {
      body = await metrics.text()
    } catch (e) {
      return new Response(`collecting the metrics failed: ${e instanceof Error ? e.message : String(e)}\n`, {
        status: 500,
        headers: { 'content-type': 'text/plain' },
      })
    }
    return new Response(request.method === 'HEAD' ? null : body, { headers: { 'content-type': metrics.contentType, 'cache-control': 'no-store' } })
  }
}

/** Serves `metrics` at http://host:port/metrics; AddressInUseError (src/cli/httpServer.ts) when the port is taken. */
export async function serveMetrics(metrics: Metrics, { host, port }: { host: string; port: number }): Promise<MetricsServer> {
  const server = await listen(metricsFetch(metrics), { host, port })
  return { url: `${server.url}/metrics`, server, close: (graceMs = 1_000) => server.close(graceMs) }
}
