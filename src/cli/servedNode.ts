import { hostNode, type HostedNode, type HostNodeParameters } from '../host/hostNode.ts'
import { CliError } from './cliError.ts'
import { AddressInUseError, listen, type HttpServer } from './httpServer.ts'

export type ServedNode = Omit<HostedNode, 'stop'> & {
  server: HttpServer
  /** The REST API's base URL: http://host:port/api/v1. */
  apiUrl: string
  /** The HTTP server closes (open requests get `graceMs`), then the node stops. Idempotent. */
  stop(graceMs?: number): Promise<void>
}

export type ServeNodeParameters = HostNodeParameters & { host: string; port: number }

export class ApiPortInUseError extends CliError {
  override name = 'ApiPortInUseError' as const
  override readonly code = 'API_PORT_IN_USE' as const
  constructor(host: string, port: number) {
    super(`${host}:${port} is already in use (choose another address or port)`, 2)
  }
}

/** Serves a created node's REST API over HTTP before the node runs, so /status reports the first sync. */
export async function serveNode({ host, port, ...parameters }: ServeNodeParameters): Promise<ServedNode> {
  const hosted = hostNode(parameters)
  let server: HttpServer
  try {
    server = await listen(hosted.fetch, { host, port })
  } catch (e) {
    if (e instanceof AddressInUseError) throw new ApiPortInUseError(host, port)
    throw e
  }
  return { ...hosted, server, apiUrl: `${server.url}${hosted.basePath}`, stop: (graceMs: number = 5_000) => hosted.stop(() => server.close(graceMs)) }
}

/** One line for an error: its short message, as viem gives it, without the request dump. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  return `${error.name}: ${((error as { shortMessage?: string }).shortMessage ?? error.message).split('\n')[0]}`
}
