/**
 * `startNode()` of @sluice/node: a headless node in the caller's own process (a hub, a bot, a test harness), with
 * the same typed methods as sluice/browser's node and sluice/client: nodeClient over the node's REST API, called
 * in-process (no HTTP). It takes the path `sluice serve` takes (launchNode), and stops on its own as the command
 * does: on POST /shutdown, on a bug in the API, when the node fails (`onStopped` hears why).
 */
import type { StopRequest } from '../host/hostNode.ts'
import { nodeClient, type NodeClient, type SendRequest } from '../../worker/nodeClient.ts'
import type { Address } from '../../worker/publicTypes.ts'
import { subscribeToEvents, type PushListener } from '../../worker/subscription.ts'
import { launchNode } from './launch.ts'
import { resolveOptions, type StartNodeOptions } from './options.ts'
import { NodeStoppedError } from '../node/errors.ts'

/** Why the node stopped on its own: POST /shutdown, a request that failed with a bug, or the node failing. */
export type NodeStopped = StopRequest

/**
 * The REST operations as methods (GET /address is the `address` property), the event stream, and the node's
 * lifecycle. An error answer throws a NodeApiError with the HTTP status and the API's code.
 */
export type HeadlessNode = Omit<NodeClient, 'address'> & {
  /** The node's account. */
  readonly address: Address
  /** The REST API's base URL (http://host:port/api/v1) when `api` was given, else undefined. */
  readonly apiUrl: string | undefined
  /** The node's libp2p peer id, with the libp2p transport. */
  readonly peerId: string | undefined
  /** The REST API as a Web-standard handler (paths under /api/v1), in-process: to mount it in a server of yours. */
  fetch(request: Request): Promise<Response>
  /** Push events of GET /api/v1/events, resumed without loss if the stream breaks (none once stopped); returns unsubscribe. */
  subscribe(listener: PushListener): () => void
  /** Hears when the node stops on its own (POST /shutdown, a bug in the API, the node failing). */
  onStopped(listener: (stopped: NodeStopped) => void): () => void
  /** The API answers 503, the HTTP server (if any) closes, then the node stops. Idempotent. */
  stop(): Promise<void>
}

/**
 * In-process requests as HTTP would carry them: with the Host (the API checks it when served with `api`). A network
 * fetch ends an answer's body when its request is aborted; in-process nothing would, so an event stream that was
 * unsubscribed would run on: the body is cancelled with the request.
 */
function inProcess(fetch: (request: Request) => Promise<Response>, host: string): SendRequest {
  return async (request) => {
    if (!request.headers.has('host')) {
      const headers = new Headers(request.headers)
      headers.set('host', host)
      request = new Request(request, { headers })
    }
    const response = await fetch(request)
    if (!response.body) return response
    return new Response(response.body.pipeThrough(new TransformStream(), { signal: request.signal }), response)
  }
}

/**
 * Starts a headless node: checks every option first (INVALID_OPTIONS, or the coded error of what they point at;
 * nothing is started then), creates the node, serves its API over HTTP if `api` is given, and resolves once it has
 * synced with the chain (`waitForSync: false`: at once, `status()` shows the sync).
 */
export async function startNode(options: StartNodeOptions): Promise<HeadlessNode> {
  const { launch, waitForSync, apiToken } = await resolveOptions(options)
  const log = launch.log
  const launched = await launchNode(launch)
  const origin = launched.apiUrl ? new URL(launched.apiUrl).origin : 'http://localhost'
  const send = inProcess((request) => launched.fetch(request), new URL(origin).host)
  const client = nodeClient(send, origin, apiToken === undefined ? {} : { token: apiToken })
  const subscriptions = new Set<() => void>()
  const stoppedListeners = new Set<(stopped: NodeStopped) => void>()
  let stopping: Promise<void> | undefined
  const stop = () =>
    (stopping ??= (async () => {
      for (const unsubscribe of subscriptions) unsubscribe()
      subscriptions.clear()
      await launched.stop()
    })())

  // As `sluice serve` does, the node stops on its own when asked to or when it fails; the owner hears why.
  void launched.stopRequested.then(async (request) => {
    if (stopping) return
    if (request.reason === 'shutdown') log.info('POST /shutdown: stopping')
    else log.error(`${request.reason === 'internal error' ? 'internal error in the API' : 'the node failed'}; stopping`, { error: request.error })
    await stop()
    for (const listener of stoppedListeners) listener(request)
  })

  const running = launched.run()
  if (waitForSync) {
    await Promise.race([running, launched.stopRequested])
    if (launched.node.status.status !== 'ready') {
      // It did not get there: a failed sync (its error), or a stop asked for meanwhile.
      const request = await launched.stopRequested
      await stop()
      throw request.reason === 'shutdown' ? new NodeStoppedError('the node was shut down (POST /shutdown) before its first sync ended') : request.error
    }
  }

  const { address: _address, ...methods } = client
  return {
    ...methods,
    address: launched.node.address,
    apiUrl: launched.apiUrl,
    peerId: launched.peerId,
    fetch: (request) => launched.fetch(request),
    subscribe(listener) {
      // A stopped node has no more events; a stream opened now would retry against its 503 for ever.
      if (stopping) return () => {}
      const unsubscribe = subscribeToEvents(
        send,
        (event) => {
          try {
            listener(event)
          } catch (error) {
            // A listener's bug is the owner's to see, and must not end the subscription.
            log.error('a subscribe() listener threw', { error })
          }
        },
        origin,
      )
      subscriptions.add(unsubscribe)
      return () => {
        subscriptions.delete(unsubscribe)
        unsubscribe()
      }
    },
    onStopped(listener) {
      stoppedListeners.add(listener)
      return () => void stoppedListeners.delete(listener)
    },
    stop,
  }
}
