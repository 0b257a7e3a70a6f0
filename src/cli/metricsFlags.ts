import type { Logger } from '../log/logger.ts'
import type { Metrics } from '../metrics/registry.ts'
import type { MetricsServer } from '../metrics/server.ts'
import type { FlagSpec } from './args.ts'
import { CliError } from './cliError.ts'
import { parseHostPort } from './hostPort.ts'
import { hasCode } from '../errors.ts'

// --metrics, which every long-running command takes: serve, relay, monitor, pathfinding, backup-server
// (docs/decisions/0078-prometheus-metrics.md).

export const metricsFlags = {
  metrics: {
    description:
      'serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free one): no token asks for them, so keep it on loopback or a private network (default: none)',
    valueName: 'HOST:PORT',
    expected: 'HOST:PORT (port 0 picks a free one)',
    parse: (raw: string) => (parseHostPort(raw) ? raw : undefined),
    default: undefined,
  } as FlagSpec<string, false>,
}

/** The --metrics address is taken: one line, exit code 2, as the API's (ApiPortInUseError). */
export class MetricsPortInUseError extends CliError {
  override name = 'MetricsPortInUseError' as const
  override readonly code = 'METRICS_PORT_IN_USE' as const
  constructor(flag: string, { host, port }: { host: string; port: number }) {
    super(`--metrics ${flag}: ${host}:${port} is already in use (choose another address or port)`, 2)
  }
}

export type ServedMetrics = { metrics: Metrics; server: MetricsServer }

/**
 * The process's metrics, served at the --metrics address before anything long starts (the first sync shows in them),
 * and the line that says where; undefined without the flag. The address taken is MetricsPortInUseError (exit code 2), as
 * the API's is. prom-client is loaded only here: a command without --metrics never loads it.
 */
export async function startMetrics(flag: string | undefined, command: string, log: Logger): Promise<ServedMetrics | undefined> {
  if (flag === undefined) return undefined
  const { host, port } = parseHostPort(flag)!
  const [{ Metrics }, { serveMetrics }] = await Promise.all([import('../metrics/registry.ts'), import('../metrics/server.ts')])
  const metrics = new Metrics({ command })
  let server: MetricsServer
  try {
    server = await serveMetrics(metrics, { host, port })
  } catch (e) {
    if (hasCode(e, 'ADDRESS_IN_USE')) throw new MetricsPortInUseError(flag, { host, port })
    throw e
  }
  log.info('Metrics: {url}', { url: server.url })
  return { metrics, server }
}
