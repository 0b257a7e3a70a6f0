import type { Connection, PeerId } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Libp2p } from 'libp2p'
import { DirectPause } from './directPause.ts'

/**
 * WebRTC connections to the peers a node talks to (docs/transport.md, docs/decisions/0065). A node whose host has
 * WebRTC (a page, through its bridge) listens on `/webrtc` and announces `<relay>/p2p-circuit/webrtc/p2p/<id>`;
 * libp2p dials such an address through the relay to exchange the offer, the answer and the ICE candidates, and the
 * connection that comes of it is direct. This part decides when to dial one:
 * - only to peers we send to, never to every peer that announces (a relay may list thousands);
 * - in the background: messages never wait for ICE, which can take seconds to fail; they go through the relay until
 *   the direct connection is up, then over it (libp2p opens a stream on a direct connection first);
 * - once per pair: of two peers that both send, the one whose id sorts first dials at once, the other only if no
 *   connection came within `yieldMs` (longer than a dial takes: two at once would make two connections);
 * - after a failed dial, again only after a pause that doubles (`retryMs` up to `maxRetryMs`): a peer behind a NAT
 *   no candidate crosses costs one try now and then, not one per message.
 * libp2p itself never dials a WebRTC address on its own (the connection gater refuses those this part is not
 * dialling), so a send to a peer without a connection goes through the relay at once, never through a slow ICE.
 */
export type DirectConnectionsOptions = {
  /** This node's PeerId. */
  self: PeerId
  /** A dial to a peer whose id sorts before ours waits this long for the peer's own (default 10 s). */
  yieldMs?: number
  /** The pause after a failed dial, or after a direct connection closed (default 5 s), doubling to `maxRetryMs`. */
  retryMs?: number
  /** The longest pause between tries (default 5 min). */
  maxRetryMs?: number
  /** A dial may take this long (default 20 s): ICE checks against candidates that do not answer take seconds. */
  dialTimeoutMs?: number
  /** A direct connection to the peer opened (its messages move to it) or its last one closed (back to the relay). */
  onChange?: (peer: PeerId, direct: boolean) => void
  log?: (event: DirectConnectionsLogEvent) => void
}

export type DirectConnectionsLogEvent =
  | { type: 'directDialing'; peer: string }
  | { type: 'directOpen'; peer: string; direction: 'inbound' | 'outbound' }
  | { type: 'directFailed'; peer: string; error: unknown; retryInMs: number }
  | { type: 'directClosed'; peer: string }

export type DirectConnections = {
  /** What libp2p listens on for them: `/webrtc`. */
  readonly listen: string[]
  /** Starts following the node's connections. */
  attach(node: Libp2p): void
  /** A peer's announced WebRTC addresses (each ending at the peer: the caller checks). */
  noteAddresses(peer: PeerId, addrs: Multiaddr[]): void
  /** We send to this peer: dial it directly if it announced how and no direct connection is up or under way. */
  talkingTo(peer: PeerId): void
  /** For the connection gater: a WebRTC address that this part is not dialling now. */
  deniesDial(ma: Multiaddr): boolean
  /** Open direct connections now. */
  count(): number
  stop(): void
}

/** A WebRTC address (`.../webrtc/...`), not WebRTC Direct's. */
export const isWebRtc = (ma: Multiaddr): boolean => ma.getComponents().some((c) => c.name === 'webrtc')

/** A connection over WebRTC: libp2p counts it direct (not through a relay), and its address names WebRTC. */
export const isDirectWebRtc = (connection: Connection): boolean => connection.direct && isWebRtc(connection.remoteAddr)

type PeerState = {
  addrs: Multiaddr[]
  dialing: boolean
  timer?: ReturnType<typeof setTimeout>
  /** Dials that libp2p joined to another one to the peer, which gave a relayed connection. */
  joined: number
  retryNow: boolean
}

/** A dial that would join one under way waits this long, as one that libp2p joined to one under way. */
const JOINED_RETRY_MS = 200

export function createDirectConnections(options: DirectConnectionsOptions): DirectConnections {
  const { self, onChange, log } = options
  const yieldMs = options.yieldMs ?? 10_000
  const retryMs = options.retryMs ?? 5_000
  const maxRetryMs = options.maxRetryMs ?? 300_000
  const dialTimeoutMs = options.dialTimeoutMs ?? 20_000
  const peers = new Map<string, PeerState>()
  /** No dial to a peer while it is paused: its last one failed, or its last direct connection closed. */
  // A connection that closes as it opens fails its dial too: one failure (DirectPause's oneFailureMs), not two.
  const pause = new DirectPause({ initialMs: retryMs, maxMs: maxRetryMs }, Date.now, { oneFailureMs: Math.min(2_000, retryMs / 2) })
  /** Peers this part is dialling now: the gater lets their WebRTC addresses through. */
  const dialing = new Set<string>()
  let node: Libp2p | undefined
  let stopped = false

  const directTo = (peer: PeerId) => (node?.getConnections(peer) ?? []).filter((c) => c.status === 'open' && isDirectWebRtc(c))

  const dial = (peer: PeerId, state: PeerState) => {
    state.timer = undefined
    const id = peer.toString()
    if (stopped || !node || state.dialing || directTo(peer).length > 0) return
    // A dial to the peer under way (a message's stream, by PeerId) would take ours in and give its relayed connection,
    // and the WebRTC addresses added to it would be tried beside a second handshake of ours: after it, then.
    if (node.getDialQueue().some((pending) => pending.peerId?.equals(peer))) {
      state.timer = setTimeout(() => dial(peer, state), JOINED_RETRY_MS)
      return
    }
    state.dialing = true
    dialing.add(id)
    log?.({ type: 'directDialing', peer: id })
    node
      .dial(state.addrs, { signal: AbortSignal.timeout(dialTimeoutMs) })
      .then(
        (connection) => {
          if (isDirectWebRtc(connection)) {
            pause.clear(id)
            state.joined = 0
            return
          }
          // libp2p joined our dial to one by PeerId under way (a message's stream), which took the relay: once more,
          // soon, and then again only after a pause.
          if (++state.joined > 1) pause.hold(id, retryMs)
          else state.retryNow = true
        },
        (error: unknown) => {
          log?.({ type: 'directFailed', peer: id, error, retryInMs: pause.failed(id) })
        },
      )
      .finally(() => {
        state.dialing = false
        dialing.delete(id)
        if (state.retryNow) {
          state.retryNow = false
          state.timer = setTimeout(() => dial(peer, state), JOINED_RETRY_MS)
        }
      })
  }

  const onOpen = (connection: Connection) => {
    if (!isDirectWebRtc(connection)) return
    const peer = connection.remotePeer
    log?.({ type: 'directOpen', peer: peer.toString(), direction: connection.direction })
    pause.clear(peer.toString())
    // The first one to this peer moves its messages; a second (both dialled at once) changes nothing.
    if (directTo(peer).length === 1) onChange?.(peer, true)
  }

  const onClose = (connection: Connection) => {
    if (!isDirectWebRtc(connection)) return
    const peer = connection.remotePeer
    log?.({ type: 'directClosed', peer: peer.toString() })
    // Not at once again: the peer may be gone, or its network changed.
    if (peers.has(peer.toString())) pause.failed(peer.toString())
    if (!stopped && directTo(peer).length === 0) onChange?.(peer, false)
  }

  return {
    listen: ['/webrtc'],

    attach(attached) {
      node = attached
      attached.addEventListener('connection:open', (e) => onOpen(e.detail))
      attached.addEventListener('connection:close', (e) => onClose(e.detail))
    },

    noteAddresses(peer, addrs) {
      const id = peer.toString()
      const state = peers.get(id) ?? { addrs: [], dialing: false, joined: 0, retryNow: false }
      state.addrs = addrs
      peers.set(id, state)
    },

    talkingTo(peer) {
      const state = peers.get(peer.toString())
      if (stopped || !node || !state || state.addrs.length === 0 || state.dialing || state.timer !== undefined) return
      if (directTo(peer).length > 0) return
      let wait = pause.waitMs(peer.toString())
      if (peer.toString() < self.toString()) wait = Math.max(wait, yieldMs)
      state.timer = setTimeout(() => dial(peer, state), wait)
    },

    deniesDial(ma) {
      if (!isWebRtc(ma)) return false
      const target = ma
        .getComponents()
        .filter((c) => c.name === 'p2p')
        .pop()?.value
      return target === undefined || !dialing.has(target)
    },

    count: () => (node?.getConnections() ?? []).filter((c) => c.status === 'open' && isDirectWebRtc(c)).length,

    stop() {
      stopped = true
      for (const state of peers.values()) clearTimeout(state.timer)
      peers.clear()
      pause.clearAll()
    },
  }
}
