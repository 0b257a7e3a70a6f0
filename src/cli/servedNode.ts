import type { HostRule, OriginPattern } from '../api/hostsAndOrigins.ts'
import { hostNode, type HostedNode, type HostNodeParameters } from '../host/hostNode.ts'
import { checkApiExposure } from './apiExposure.ts'
import { CliError } from './cliError.ts'
import { listen, type HttpServer } from './httpServer.ts'
import { hasCode } from '../errors.ts'

export type ServedNode = Omit<HostedNode, 'stop'> & {
  server: HttpServer
  /** The REST API's base URL: http://host:port/api/v1. */
  apiUrl: string
  /** The HTTP server closes (open requests get `graceMs`), then the node stops. Idempotent. */
  stop(graceMs?: number): Promise<void>
}

/** Who may call beyond the owner's own programs on loopback (docs/decisions/0025-who-may-call-the-headless-api.md). */
export type ServeAccess = {
  /** More names the API answers to as Host (`--api-host`). */
  hosts?: readonly HostRule[]
  /** Origins whose pages may call it (`--rpccorsdomain`). */
  corsOrigins?: readonly OriginPattern[]
  /** The bearer token every request must carry (`--api-token-file`). */
  token?: string | undefined
}

export type ServeNodeParameters = Omit<HostNodeParameters, 'access'> & { host: string; port: number; access?: ServeAccess }

export class ApiPortInUseError extends CliError {
  override name = 'ApiPortInUseError' as const
  override readonly code = 'API_PORT_IN_USE' as const
  constructor(host: string, port: number) {
    super(`${host}:${port} is already in use (choose another address or port)`, 2)
  }
}

/** Serves a created node's REST API over HTTP before the node runs, so /status reports the first sync. */
export async function serveNode({ host, port, access = {}, ...parameters }: ServeNodeParameters): Promise<ServedNode> {
  checkApiExposure({ host, ...access })
  // The API checks the Host against the port the OS gave, so it is built once the server listens; no request can
  // come in before that (the continuation after `listen` runs before any connection is handled).
  let hosted: HostedNode | undefined
  let server: HttpServer
  try {
    server = await listen((request) => hosted!.fetch(request), { host, port })
  } catch (e) {
    if (hasCode(e, 'ADDRESS_IN_USE')) throw new ApiPortInUseError(host, port)
    throw e
  }
  hosted = hostNode({
    ...parameters,
    access: { boundHost: host, port: server.port, hosts: access.hosts ?? [], corsOrigins: access.corsOrigins ?? [], token: access.token },
  })
  return { ...hosted, server, apiUrl: `${server.url}${hosted.basePath}`, stop: (graceMs: number = 5_000) => hosted.stop(() => server.close(graceMs)) }
}

/** One line for an error: its short message, as viem gives it, without the request dump. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  return `${error.name}: ${((error as { shortMessage?: string }).shortMessage ?? error.message).split('\n')[0]}`
}
