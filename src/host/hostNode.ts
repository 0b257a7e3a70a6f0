import type { ApiAccess } from '../api/access.ts'
import { API_BASE_PATH, createApi, type Api } from '../api/app.ts'
import type { Environment } from '../api/context.ts'
import type { SluiceNode } from '../node/sluiceNode.ts'

/** Why a hosted node should stop, other than its host deciding so. */
export type StopRequest = { reason: 'shutdown' } | { reason: 'internal error' | 'node failed'; error: unknown }

export type HostNodeParameters = {
  /** Created (createNode) but not run: the API answers /status while it syncs. */
  node: SluiceNode
  /** The software's version (GET /version). */
  version: string
  /** `production` disables token registration and minting (501), as the Raiden node's default does. */
  environment: Environment
  /** Who may call over HTTP (Host, Origin, token); a page's service worker gives none. */
  access?: ApiAccess
  /** A node sharing its store with a standby: active or standing by, as GET /status says (`role`). */
  role?: () => 'active' | 'standby'
}

/**
 * A node with its REST API and its lifecycle, whatever carries the requests (an HTTP server in `sluice serve`,
 * the service worker in a page): `fetch` answers /api/v1/... as a Web-standard Request -> Response; `run` starts
 * the node; `stopRequested` resolves with the first reason to stop (POST /shutdown, a request that failed with
 * a bug, or the node failing to run); `stop` stops accepting requests, then the node. Browser-safe.
 */
export type HostedNode = {
  node: SluiceNode
  api: Api
  /** The REST API under API_BASE_PATH. */
  fetch(request: Request): Promise<Response>
  basePath: string
  stopRequested: Promise<StopRequest>
  /** Runs the node (first sync, then ready) in the background; a failure resolves `stopRequested`. */
  run(): Promise<void>
  /** The API answers 503 from now on, `beforeNodeStops` runs (an HTTP server closes), then the node stops. Idempotent. */
  stop(beforeNodeStops?: () => Promise<void>): Promise<void>
}

export function hostNode({ node, version, environment, access, role }: HostNodeParameters): HostedNode {
  let requestStop!: (request: StopRequest) => void
  const stopRequested = new Promise<StopRequest>((resolve) => (requestStop = resolve))
  const api: Api = createApi({
    node,
    version,
    environment,
    ...(access ? { access } : {}),
    ...(role ? { role } : {}),
    // POST /shutdown answers first; the host stops the node when `stopRequested` resolves.
    shutdown: () => {
      api.shuttingDown()
      requestStop({ reason: 'shutdown' })
    },
    onInternalError: (error) => requestStop({ reason: 'internal error', error }),
  })
  let running: Promise<void> | undefined
  let stopping: Promise<void> | undefined
  // A node that stops itself while it runs (its state found stale) is a failure its host reports.
  void node.halted.then((error) => requestStop({ reason: 'node failed', error }))
  return {
    node,
    api,
    fetch: async (request) => api.app.fetch(request),
    basePath: API_BASE_PATH,
    stopRequested,
    run() {
      running ??= node.run().catch((error: unknown) => {
        if (!stopping) requestStop({ reason: 'node failed', error })
      })
      return running
    },
    stop(beforeNodeStops) {
      stopping ??= (async () => {
        api.shuttingDown()
        await beforeNodeStops?.()
        await node.stop()
        // A first sync that was under way ends with the stop; wait for it so nothing runs on afterwards.
        await running
      })()
      return stopping
    },
  }
}
