import type { Address, Hex } from 'viem'
import { toErrorData } from '../errors.ts'
import { TransportClosedError, TransportError } from './errors.ts'
import type { Transport } from './transport.ts'

export type LazyTransportOptions = {
  /**
   * Start in the background: `start` resolves at once, and the node does not wait for the adapter to load and
   * reach its relays before it is ready. Sends wait for it meanwhile; a failure goes to `onError`.
   */
  background?: boolean
  /** A background start that failed (the adapter did not load or start); the transport is unusable then. */
  onError?: (error: unknown) => void
  /**
   * In the background, load the adapter only once this resolves (called at start), or at the first send if that
   * comes sooner. The browser worker waits for its first requests to be answered (docs/decisions/0024).
   */
  loadWhen?: () => Promise<unknown>
}

/**
 * A Transport whose adapter is loaded when it starts, not when the node is built. The browser worker builds its
 * node with this around libp2p (most of the worker's bytes, in chunks of their own, and a relay to reach): in the
 * background, the node answers and syncs while libp2p loads and reserves its place on the relay, and the messages
 * it sends meanwhile wait for that (delivery resends whatever a peer did not acknowledge).
 */
export function lazyTransport(load: () => Promise<Transport>, { background = false, onError, loadWhen }: LazyTransportOptions = {}): Transport {
  let started: Promise<Transport> | undefined
  let stopped = false
  const peerSeen: ((peer: Address, publicKey?: Hex) => void)[] = []
  /** Peers `connect` named before the adapter started: it opens the way to them once it has. */
  const toConnect = new Set<Address>()
  let adapter: Transport | undefined
  // Settles the wait for loadWhen: on the first send, or on stop (which must not wait for it).
  let needed!: () => void
  const neededNow = new Promise<void>((resolve) => (needed = resolve))
  const startAdapter = async (onMessages: Parameters<Transport['start']>[0]) => {
    if (background && loadWhen) await Promise.race([loadWhen().catch(() => {}), neededNow])
    if (stopped) throw new TransportClosedError('start')
    const transport = await load()
    // Stopped while it loaded: stop() stops the adapter, which must not start after that.
    if (stopped) throw new TransportClosedError('start')
    for (const listener of peerSeen) transport.onPeerSeen?.(listener)
    await transport.start(onMessages)
    adapter = transport
    for (const peer of toConnect) transport.connect?.(peer)
    toConnect.clear()
    return transport
  }
  return {
    async start(onMessages) {
      if (stopped) throw new TransportClosedError('start')
      if (started) throw new TransportError('transport already started')
      started = startAdapter(onMessages)
      if (!background) {
        await started
        return
      }
      started.catch((error: unknown) => {
        if (!stopped) onError?.(error)
      })
    },
    async send(to, lines) {
      if (!started || stopped) throw new TransportClosedError('send')
      needed()
      let transport: Transport
      try {
        transport = await started
      } catch (error) {
        throw new TransportError(`the transport did not start: ${toErrorData(error).message}`)
      }
      await transport.send(to, lines)
    },
    onPeerSeen(listener) {
      peerSeen.push(listener)
    },
    stats: () => adapter?.stats?.() ?? {},
    connect(peer) {
      if (stopped) return
      if (adapter) adapter.connect?.(peer)
      else toConnect.add(peer)
    },
    // Before the adapter started (a page's libp2p still loading), a record cannot be checked: the relays are asked later.
    peerRecord: async (peer, record, options) =>
      adapter?.peerRecord ? adapter.peerRecord(peer, record, options) : { ok: false, reason: 'the transport has not started yet' },
    async stop() {
      stopped = true
      needed()
      // Never started: nothing to stop. A start in progress is stopped once it is done (a failed one has nothing).
      const transport = await started?.catch(() => undefined)
      await transport?.stop()
    },
  }
}
