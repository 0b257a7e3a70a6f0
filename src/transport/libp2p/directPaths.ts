import type { Connection, Libp2p, PeerId } from '@libp2p/interface'
import { isPrivate } from '@libp2p/utils'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { DirectPause } from './directPause.ts'
import { isCircuit } from './relayAddress.ts'

/** What a node says of its direct paths, for logs and metrics. */
export type DirectPathsLogEvent =
  | { type: 'directOpen'; peer: string; direction: 'inbound' | 'outbound' }
  | { type: 'directFailed'; peer: string; error: unknown; retryInMs: number }
  | { type: 'directClosed'; peer: string }

export type DirectPathsParameters = {
  /** Our relays: their connections are the relay keeper's, never a peer's direct path. */
  isRelay: (peer: PeerId) => boolean
  /** Dial direct addresses on private networks and loopback too (devnets, tests, a LAN of one's own). */
  allowPrivate: boolean
  /** A direct dial gives up after this long, and the circuit is dialled. */
  dialTimeoutMs: number
  /** The pause after a failed direct dial or a lost direct connection, doubling up to `maxRetryMs`. */
  retryMs: number
  maxRetryMs: number
  /** How often each direct connection is checked, and how long an answer may take before it is given up. */
  pingMs: number
  pingTimeoutMs: number
  /**
   * Whether a DNS name resolves to a private address (Node: the system's resolver). Without it (a page) a name is
   * taken as it is, and only `localhost` names are refused.
   */
  resolvesPrivate?: (host: string) => Promise<boolean>
  /** A first direct connection to the peer opened (`true`: its messages move to it), or its last one closed. */
  onChange: (peer: PeerId, up: boolean) => void
  log?: (event: DirectPathsLogEvent) => void
}

type PeerPaths = {
  addrs: Multiaddr[]
  /** The dial under way, if any: a second caller waits for it rather than dialling by PeerId meanwhile. */
  dialing?: Promise<Connection | undefined>
}

const hostKinds = ['ip4', 'ip6', 'dns', 'dns4', 'dns6']

/**
 * A direct address that `announcer` gave, if it is one we may dial: WebSockets (`/ws`, `/wss` or `/tls/ws`) over
 * an IP address or a DNS name and TCP, ending in `/p2p/<announcer>` (Noise then proves the peer is the announcer),
 * not through a relay; a private or loopback host (or a `localhost` name) only when `allowPrivate`. An
 * announcement must not make us dial anything else: a hostile announcer could otherwise aim every node that talks
 * to it at a host of their own network.
 */
export function directAddress(raw: string, announcer: PeerId, allowPrivate: boolean): Multiaddr | undefined {
  let ma: Multiaddr
  try {
    ma = multiaddr(raw)
  } catch {
    return undefined
  }
  if (isCircuit(ma)) return undefined
  const components = ma.getComponents()
  const names = components.map((c) => c.name)
  const last = components.at(-1)
  if (last?.name !== 'p2p' || last.value !== announcer.toString()) return undefined
  if (!hostKinds.includes(names[0] ?? '') || names[1] !== 'tcp' || !['ws', 'wss', 'tls/ws'].includes(names.slice(2, -1).join('/'))) return undefined
  if (!allowPrivate && privateHost(ma)) return undefined
  return ma
}

/** A loopback, private, link-local or unspecified IP address, or a `localhost` name (RFC 6761). */
function privateHost(ma: Multiaddr): boolean {
  const host = ma.getComponents()[0]?.value?.toLowerCase() ?? ''
  return isPrivate(ma) || host === 'localhost' || host.endsWith('.localhost')
}

/**
 * Direct paths to the peers that announce addresses of their own (docs/transport.md, Direct paths): a headless node
 * that listens (`--p2p-listen`) is dialled there first, the relay stays the fallback.
 * - A stream to a peer dials its direct addresses first, bounded by `dialTimeoutMs`, then the circuit (`dial`).
 * - A peer whose direct dial failed is dialled directly again only after a pause that doubles; meanwhile a send to
 *   it (`talking`) dials in the background once the pause is over, and a direct connection up moves its messages.
 * - Each direct connection is checked every `pingMs`: a path cut without a reset (a dead link) is given up within
 *   `pingMs + pingTimeoutMs`, and the peer's messages go through the relay at once.
 * - libp2p never dials a direct address on its own (the connection gater refuses those we are not dialling now), so
 *   a dial by PeerId goes through the circuits, never into a dead address first.
 */
export class DirectPaths {
  readonly #parameters: DirectPathsParameters
  readonly #peers = new Map<string, PeerPaths>()
  /** No direct dial to a peer while it is paused: its last one failed, or its last direct connection was lost. */
  readonly #pause: DirectPause
  /** The direct addresses being dialled now: all the gater lets through besides relays and circuits. */
  readonly #dialingAddrs = new Map<string, number>()
  #node: Libp2p | undefined
  #ping: ReturnType<typeof setInterval> | undefined

  constructor(parameters: DirectPathsParameters) {
    this.#parameters = parameters
    this.#pause = new DirectPause({ initialMs: parameters.retryMs, maxMs: parameters.maxRetryMs })
  }

  /** Follows `node`'s connections and checks its direct ones, until `stop`. */
  attach(node: Libp2p): void {
    this.#node = node
    node.addEventListener('connection:open', this.#onOpen)
    node.addEventListener('connection:close', this.#onClose)
    this.#ping = setInterval(() => this.#checkAll(), this.#parameters.pingMs)
  }

  /** The direct addresses a peer announced (checked by `directAddress`); a new session may dial at once again. */
  note(peer: PeerId, addrs: Multiaddr[], newSession: boolean): void {
    const id = peer.toString()
    const known = this.#peers.get(id)
    if (!known) {
      if (addrs.length > 0) this.#peers.set(id, { addrs })
      return
    }
    const changed = addrs.map(String).join(' ') !== known.addrs.map(String).join(' ')
    known.addrs = addrs
    if (changed || newSession) this.#pause.clear(id)
  }

  /** An open direct connection to the peer, if any. */
  connection(peer: PeerId): Connection | undefined {
    return this.#node?.getConnections(peer).find((c) => c.status === 'open' && this.#isDirectPeer(c))
  }

  /** Peers with a direct connection open now. */
  count(): number {
    return new Set((this.#node?.getConnections() ?? []).filter((c) => c.status === 'open' && this.#isDirectPeer(c)).map((c) => c.remotePeer.toString())).size
  }

  /**
   * A direct connection to the peer: the open one, else a dial of its direct addresses (bounded by `dialTimeoutMs`
   * and `signal`), else undefined: it announced none, its last dial failed lately (it is paused), or this dial
   * failed (it is paused now). A dial already under way is waited for, not doubled. Never rejects.
   */
  async dial(peer: PeerId, signal?: AbortSignal): Promise<Connection | undefined> {
    const open = this.connection(peer)
    if (open) return open
    const paths = this.#peers.get(peer.toString())
    if (!paths) return undefined
    if (paths.dialing) return paths.dialing
    if (paths.addrs.length === 0 || this.#pause.waitMs(peer.toString()) > 0 || !this.#node) return undefined
    const dialing = this.#dial(peer, paths, signal)
    paths.dialing = dialing
    void dialing.finally(() => {
      if (paths.dialing === dialing) paths.dialing = undefined
    })
    return dialing
  }

  /** A send to the peer: without a direct connection, dial one in the background once its pause is over. */
  talking(peer: PeerId): void {
    const paths = this.#peers.get(peer.toString())
    if (!paths || paths.dialing || paths.addrs.length === 0 || this.#pause.waitMs(peer.toString()) > 0 || this.connection(peer)) return
    void this.dial(peer)
  }

  /** Whether a dial of `ma` (neither a relay's nor a circuit) is refused: all but the direct addresses being dialled now. */
  deniesDial(ma: Multiaddr): boolean {
    return !this.#dialingAddrs.has(ma.toString())
  }

  stop(): void {
    const node = this.#node
    this.#node = undefined
    node?.removeEventListener('connection:open', this.#onOpen)
    node?.removeEventListener('connection:close', this.#onClose)
    clearInterval(this.#ping)
    this.#peers.clear()
    this.#pause.clearAll()
    this.#dialingAddrs.clear()
  }

  async #dial(peer: PeerId, paths: PeerPaths, signal: AbortSignal | undefined): Promise<Connection | undefined> {
    const { dialTimeoutMs, resolvesPrivate, allowPrivate, log } = this.#parameters
    const bound = AbortSignal.timeout(dialTimeoutMs)
    const addrs = await this.#dialable(paths.addrs, allowPrivate ? undefined : resolvesPrivate)
    const keys = addrs.map(String)
    for (const key of keys) this.#dialingAddrs.set(key, (this.#dialingAddrs.get(key) ?? 0) + 1)
    try {
      const node = this.#node
      if (!node) return undefined
      if (addrs.length === 0) throw new Error('no direct address may be dialled (a name resolves to a private address)')
      const connection = await node.dial(addrs, { signal: signal ? AbortSignal.any([signal, bound]) : bound })
      // libp2p joined our dial to one by PeerId under way, which took the circuit: not a failure of the direct path.
      if (!this.#isDirectPeer(connection)) return undefined
      this.#pause.clear(peer.toString())
      return connection
    } catch (error) {
      if (!this.#node) return undefined
      const pause = this.#pause.failed(peer.toString())
      log?.({ type: 'directFailed', peer: peer.toString(), error, retryInMs: pause })
      return undefined
    } finally {
      for (const key of keys) {
        const n = (this.#dialingAddrs.get(key) ?? 1) - 1
        if (n > 0) this.#dialingAddrs.set(key, n)
        else this.#dialingAddrs.delete(key)
      }
    }
  }

  /** The addresses left once names that resolve to private addresses are taken out (when a resolver is given). */
  async #dialable(addrs: Multiaddr[], resolvesPrivate: ((host: string) => Promise<boolean>) | undefined): Promise<Multiaddr[]> {
    if (!resolvesPrivate) return addrs
    const checked = await Promise.all(
      addrs.map(async (ma) => {
        const [host] = ma.getComponents()
        if (!host?.name.startsWith('dns') || !host.value) return ma
        return (await resolvesPrivate(host.value).catch(() => true)) ? undefined : ma
      }),
    )
    return checked.filter((ma) => ma !== undefined)
  }

  /** A direct connection to a Sluice peer: not through a relay, and not to one of our relays. */
  #isDirectPeer(connection: Connection): boolean {
    return connection.direct && !isCircuit(connection.remoteAddr) && !this.#parameters.isRelay(connection.remotePeer)
  }

  readonly #onOpen = (event: CustomEvent<Connection>) => {
    const connection = event.detail
    if (!this.#isDirectPeer(connection)) return
    const peer = connection.remotePeer
    this.#parameters.log?.({ type: 'directOpen', peer: peer.toString(), direction: connection.direction })
    this.#pause.clear(peer.toString())
    // The first one to this peer moves its messages; a second (both dialled at once) changes nothing.
    if (this.#node?.getConnections(peer).filter((c) => c.status === 'open' && this.#isDirectPeer(c)).length === 1) this.#parameters.onChange(peer, true)
  }

  readonly #onClose = (event: CustomEvent<Connection>) => {
    const connection = event.detail
    if (!this.#isDirectPeer(connection) || !this.#node) return
    const peer = connection.remotePeer
    this.#parameters.log?.({ type: 'directClosed', peer: peer.toString() })
    if (this.connection(peer)) return
    // Not at once again: the peer may be gone, or the path cut.
    if (this.#peers.has(peer.toString())) this.#pause.failed(peer.toString())
    this.#parameters.onChange(peer, false)
  }

  /**
   * A round trip on each direct connection: libp2p's ping protocol, which a Sluice node does not serve, so the
   * answer is multistream-select's refusal; either way the peer answered. A connection that does not answer in
   * time is aborted (libp2p's own monitor does the same every 10 s with at least 5 s to answer, for every connection).
   */
  #checkAll(): void {
    const node = this.#node
    if (!node) return
    for (const connection of node.getConnections()) {
      if (connection.status !== 'open' || !this.#isDirectPeer(connection)) continue
      const signal = AbortSignal.timeout(this.#parameters.pingTimeoutMs)
      connection.newStream(pingProtocol, { signal, runOnLimitedConnection: true }).then(
        (stream) => stream.abort(new Error('ping')),
        (error: unknown) => {
          if ((error as Error)?.name === 'UnsupportedProtocolError') return
          if (connection.status === 'open') connection.abort(error instanceof Error ? error : new Error(String(error)))
        },
      )
    }
  }
}

const pingProtocol = '/ipfs/ping/1.0.0'
