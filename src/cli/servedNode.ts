import { readFileSync } from 'node:fs'
import { createApi, API_BASE_PATH, type Api } from '../api/app.ts'
import type { Environment } from '../api/context.ts'
import type { SluiceNode } from '../node/sluiceNode.ts'
import { CliError } from './cliError.ts'
import { AddressInUseError, listen, type HttpServer } from './httpServer.ts'

/** Why a served node should stop, other than a signal to the whole process. */
export type StopRequest = { reason: 'shutdown' } | { reason: 'internal error' | 'node failed'; error: unknown }

export type ServedNode = {
  node: SluiceNode
  api: Api
  server: HttpServer
  /** The REST API's base URL: http://host:port/api/v1. */
  apiUrl: string
  /** Resolves with the first reason to stop: POST /shutdown, a request that failed with a bug, or run() failing. */
  stopRequested: Promise<StopRequest>
  /** Runs the node (first sync, then ready) in the background; a failure resolves `stopRequested`. */
  run(): Promise<void>
  /** The API answers 503, the HTTP server closes (open requests get `graceMs`), then the node stops. Idempotent. */
  stop(graceMs?: number): Promise<void>
}

export type ServeNodeParameters = {
  /** Created (SluiceNode.create) but not run: the API answers /status while it syncs. */
  node: SluiceNode
  host: string
  port: number
  environment: Environment
  pathfindingServiceAddress?: string | null
}

/** The package version (GET /version). */
export const packageVersion: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

export class ApiPortInUseError extends CliError {
  override name = 'ApiPortInUseError' as const
  override readonly code = 'API_PORT_IN_USE' as const
  constructor(host: string, port: number) {
    super(`${host}:${port} is already in use (choose another address or port)`, 2)
  }
}

/** Serves a created node's REST API over HTTP before the node runs, so /status reports the first sync. */
export async function serveNode({ node, host, port, environment, pathfindingServiceAddress = null }: ServeNodeParameters): Promise<ServedNode> {
  let requestStop!: (request: StopRequest) => void
  const stopRequested = new Promise<StopRequest>((resolve) => (requestStop = resolve))
  const api: Api = createApi({
    node,
    version: packageVersion,
    environment,
    pathfindingServiceAddress,
    // POST /shutdown answers first; the owner stops the node when `stopRequested` resolves.
    shutdown: () => {
      api.shuttingDown()
      requestStop({ reason: 'shutdown' })
    },
    onInternalError: (error) => requestStop({ reason: 'internal error', error }),
  })
  let server: HttpServer
  try {
    server = await listen(api.app.fetch, { host, port })
  } catch (e) {
    if (e instanceof AddressInUseError) throw new ApiPortInUseError(host, port)
    throw e
  }
  let running: Promise<void> | undefined
  let stopping: Promise<void> | undefined
  return {
    node,
    api,
    server,
    apiUrl: `${server.url}${API_BASE_PATH}`,
    stopRequested,
    run() {
      running ??= node.run().catch((error: unknown) => {
        if (!stopping) requestStop({ reason: 'node failed', error })
      })
      return running
    },
    stop(graceMs = 5_000) {
      stopping ??= (async () => {
        api.shuttingDown()
        await server.close(graceMs)
        await node.stop()
        // A first sync that was under way ends with the stop; wait for it so nothing runs on afterwards.
        await running
      })()
      return stopping
    },
  }
}

/** One line for an error: its short message, as viem gives it, without the request dump. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  return `${error.name}: ${((error as { shortMessage?: string }).shortMessage ?? error.message).split('\n')[0]}`
}

/** Resolves with the first of `signals` to arrive; until then they no longer end the process. */
export function nextSignal(signals: readonly NodeJS.Signals[]): { received: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal: (signal: NodeJS.Signals) => void = () => {}
  const received = new Promise<NodeJS.Signals>((resolve) => (onSignal = resolve))
  for (const s of signals) process.on(s, onSignal)
  return { received, dispose: () => signals.forEach((s) => process.off(s, onSignal)) }
}
