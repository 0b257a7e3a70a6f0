import type { Address } from 'viem'
import { PeerRateLimiter } from '../../monitor/limits.ts'
import { forgetClosed, hear, heardCount, hold, tokenNetworkOf, type Heard, type HeardUpdate } from '../../pathfinding/heard.ts'
import type { UpdateRefusal } from '../../pathfinding/updates.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import type { Delivery } from '../../transport/delivery.ts'
import type { ResolvedNodeConfig } from '../nodeConfig.ts'

/** What a peer may make a node check and pass on (docs/decisions/0074). */
export type GossipLimits = {
  /** Each peer's bucket of announcements: this many at once... */
  perPeerBurst: number
  /** ...refilled at this many per second; beyond it one is dropped unread. */
  perPeerPerSecond: number
  /** What was taken is passed on every this many ms: the newest of each channel, participant and kind, once. */
  forwardEveryMs: number
  /** A partner newly seen is sent what the node holds of its token networks, at most this many... */
  syncMax: number
  /** ...and at most once in this many ms. */
  syncEveryMs: number
  /**
   * A partner that announces new fees on our channel itself (as it does at each of its starts) is sent all again, at
   * most once in this many ms: a restarted node hears at once what it missed.
   */
  resyncEveryMs: number
  /**
   * Announcements of a channel not in the graph yet (its opening not synced here yet) held at once, the newest of each
   * channel, participant and kind, each for `deferForMs`, and looked at again every `deferredEveryMs`.
   */
  maxDeferred: number
  deferForMs: number
  deferredEveryMs: number
}

export const defaultGossipLimits: GossipLimits = {
  perPeerBurst: 200,
  perPeerPerSecond: 20,
  forwardEveryMs: 200,
  syncMax: 2_000,
  syncEveryMs: 10 * 60_000,
  resyncEveryMs: 5_000,
  maxDeferred: 1_000,
  deferForMs: 5 * 60_000,
  deferredEveryMs: 1_000,
}

export type GossipRefusal = UpdateRefusal | 'rate_limited'

/** What GET /settings shows of what the node heard. */
export type GossipView = { held: number; accepted: number; refused: number; sent: number }

export type GossipParameters = {
  config: Pick<ResolvedNodeConfig, 'routingMode' | 'secp256k1'>
  /** The latest applied state: the public graph the announcements are checked against, our partners. */
  state: () => NodeState
  delivery: Pick<Delivery, 'sendOnce'>
  limits?: Partial<GossipLimits>
  /** Told of each announcement refused, for the debug log. */
  refused?: (from: Address, reason: GossipRefusal, detail?: string) => void
  now?: () => number
}

/** One channel's participant's announcement of one kind: what a newer one replaces. */
const slotOf = (update: HeardUpdate) => {
  const id = update.canonical_identifier
  return `${id.token_network_address.toLowerCase()}:${id.channel_identifier}:${update.updating_participant.toLowerCase()}:${update.type}`
}

type Outgoing = { update: HeardUpdate; except: ReadonlySet<string> }

/**
 * Route announcements between nodes (docs/decisions/0074), as Lightning's channel_update gossip and Raiden's public
 * path_finding room: a node that is not private sends its own PFSCapacityUpdate and PFSFeeUpdate to its channel
 * partners, and passes on to its other partners those it receives that pass the pathfinding service's checks and are
 * newer than what it holds (heard.ts). Unacknowledged and sent once: a lost one is replaced by the next. Bounded: a
 * peer's announcements beyond its rate are dropped unread, nothing stale, repeated or unchanged is passed on, and what
 * is passed on goes in batches, the newest of each channel, participant and kind once per batch. One of a channel not
 * in the graph yet is held a while (bounded), as the service does. A partner new or newly seen is sent what the node
 * holds. A private node passes nothing on, but hears and routes with what it hears.
 */
export class Gossip {
  /** What the node heard, and its own: in memory only (hints; heard again after a restart). */
  readonly heard: Heard = new Map()
  private readonly limits: GossipLimits
  private readonly limiter: PeerRateLimiter
  private readonly outgoing = new Map<string, Outgoing>()
  /** Our own announcements waiting for the next batch, unsigned, by channel and kind. */
  private readonly unsigned = new Map<string, () => HeardUpdate | undefined>()
  /** When each peer was last sent all (for `peerSeen`, and for `resync`), and the partners sent all once. */
  private readonly synced = new Map<string, number>()
  private readonly resynced = new Map<string, number>()
  private readonly known = new Set<string>()
  private readonly counts = { accepted: 0, refused: 0, sent: 0 }
  private timer: ReturnType<typeof setTimeout> | undefined
  /** Announcements of channels not in the graph yet, by slot: who sent them and when. */
  private readonly deferred = new Map<string, { update: HeardUpdate; from: Address; at: number }>()
  private deferredTimer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private readonly now: () => number

  constructor(private readonly p: GossipParameters) {
    this.limits = { ...defaultGossipLimits, ...p.limits }
    this.now = p.now ?? Date.now
    this.limiter = new PeerRateLimiter(this.limits.perPeerBurst, this.limits.perPeerPerSecond, this.now)
  }

  /** Whether the node announces its channels to its partners and passes on what it hears: not in `private` mode. */
  get passesOn(): boolean {
    return this.p.config.routingMode !== 'private'
  }

  view(): GossipView {
    return { held: heardCount(this.heard), ...this.counts }
  }

  /** Delivery's: an announcement a peer sent (its own, or passed on). Returns whether it was taken. */
  receive(update: HeardUpdate, from: Address): boolean {
    if (this.stopped) return false
    if (!this.limiter.take(from)) return this.refuse(from, 'rate_limited')
    return this.take(update, from, false)
  }

  private take(update: HeardUpdate, from: Address, again: boolean): boolean {
    const outcome = hear(this.heard, this.p.state(), update, { now: this.now(), curve: this.p.config.secp256k1 })
    // A partner may announce a channel before its opening is synced here: held a while, as the service does.
    if (outcome.outcome === 'refused' && outcome.reason === 'unknown_channel' && !again && this.defer(update, from)) return false
    if (outcome.outcome === 'refused') return this.refuse(from, outcome.reason, outcome.detail)
    if (outcome.outcome === 'resent') return false
    this.counts.accepted++
    if (update.type === 'PFSFeeUpdate' && update.updating_participant.toLowerCase() === from.toLowerCase()) this.resync(from)
    // Not back to who sent it, nor to the channel's participants: they had it first-hand.
    const id = update.type === 'PFSCapacityUpdate' ? [update.updating_participant, update.other_participant] : [update.updating_participant]
    if (this.passesOn) this.queue(update, new Set([from, ...id].map((a) => a.toLowerCase())))
    return true
  }

  /** Our own announcement, signed: held, and sent to our partners in its token network (the channel's partner too). */
  own(update: HeardUpdate): void {
    hold(this.heard, update)
    if (this.passesOn) this.queue(update, new Set())
  }

  /**
   * Our own announcement, signed when the next batch goes, as `own`: only the newest of each `slot` (a channel and a
   * kind) is signed, so a busy channel costs one signature a batch, not one per payment. Nothing in `private` mode.
   */
  ownLater(slot: string, sign: () => HeardUpdate | undefined): void {
    if (!this.passesOn || this.stopped) return
    this.unsigned.set(slot, sign)
    this.arm()
  }

  /** A peer came online: a partner is sent what the node holds of their token networks (at most once in `syncEveryMs`). */
  peerSeen(peer: Address): void {
    if (this.stopped || !this.passesOn) return
    const last = this.synced.get(peer.toLowerCase())
    if (last !== undefined && this.now() - last < this.limits.syncEveryMs) return
    if (this.sync(peer, this.p.state())) this.synced.set(peer.toLowerCase(), this.now())
  }

  /** A partner announced new fees on a channel, itself: it may have restarted, and missed all that went meanwhile. */
  private resync(peer: Address): void {
    if (!this.passesOn) return
    const last = this.resynced.get(peer.toLowerCase())
    if (last !== undefined && this.now() - last < this.limits.resyncEveryMs) return
    if (this.sync(peer, this.p.state())) this.resynced.set(peer.toLowerCase(), this.now())
  }

  /**
   * Sends a partner what the node holds of the token networks they share (Lightning's sync with a new peer): it may
   * have missed what went before it was a partner or online. Bounded by `syncMax`. False when it is no partner.
   */
  private sync(peer: Address, state: NodeState): boolean {
    const key = peer.toLowerCase()
    const networks = new Set(
      Object.values(state.channels)
        .filter((c) => c.state === 'opened' && c.partner.toLowerCase() === key)
        .map((c) => c.tokenNetwork.toLowerCase()),
    )
    if (networks.size === 0) return false
    this.known.add(key)
    forgetClosed(this.heard, state)
    let sent = 0
    for (const [channelKey, sides] of this.heard) {
      if (!networks.has(channelKey.split(':')[0]!)) continue
      for (const [participant, side] of sides) {
        if (participant === key) continue
        for (const update of [side.capacityUpdate, side.feeUpdate]) {
          if (!update || sent >= this.limits.syncMax) continue
          this.p.delivery.sendOnce(peer, update)
          sent++
        }
      }
    }
    this.counts.sent += sent
    return true
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.deferredTimer !== undefined) clearTimeout(this.deferredTimer)
    this.timer = undefined
    this.deferredTimer = undefined
    this.outgoing.clear()
    this.unsigned.clear()
    this.deferred.clear()
  }

  /** Holds an announcement of a channel not in the graph yet; false when full (it is refused then). */
  private defer(update: HeardUpdate, from: Address): boolean {
    const slot = slotOf(update)
    if (!this.deferred.has(slot) && this.deferred.size >= this.limits.maxDeferred) return false
    this.deferred.set(slot, { update, from, at: this.now() })
    if (this.deferredTimer === undefined) {
      this.deferredTimer = setTimeout(() => this.retryDeferred(), this.limits.deferredEveryMs)
      ;(this.deferredTimer as { unref?: () => void }).unref?.()
    }
    return true
  }

  /** Takes the held announcements whose channel the graph has now; forgets those held too long. */
  private retryDeferred(): void {
    this.deferredTimer = undefined
    if (this.stopped) return
    const state = this.p.state()
    const now = this.now()
    for (const [slot, { update, from, at }] of this.deferred) {
      const id = update.canonical_identifier
      if (tokenNetworkOf(state, id.token_network_address)?.graph[id.channel_identifier.toString()]) {
        this.deferred.delete(slot)
        this.take(update, from, true)
      } else if (now - at > this.limits.deferForMs) {
        this.deferred.delete(slot)
        this.refuse(from, 'unknown_channel', `channel ${id.channel_identifier}`)
      }
    }
    if (this.deferred.size > 0) {
      this.deferredTimer = setTimeout(() => this.retryDeferred(), this.limits.deferredEveryMs)
      ;(this.deferredTimer as { unref?: () => void }).unref?.()
    }
  }

  private refuse(from: Address, reason: GossipRefusal, detail?: string): false {
    this.counts.refused++
    this.p.refused?.(from, reason, detail)
    return false
  }

  private queue(update: HeardUpdate, except: ReadonlySet<string>): void {
    this.outgoing.set(slotOf(update), { update, except })
    this.arm()
  }

  private arm(): void {
    if (this.timer !== undefined || this.stopped) return
    this.timer = setTimeout(() => this.flush(), this.limits.forwardEveryMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private flush(): void {
    this.timer = undefined
    if (this.stopped) return
    const waiting = [...this.unsigned.values()]
    this.unsigned.clear()
    for (const sign of waiting) {
      const update = sign()
      if (update) this.own(update)
    }
    const state = this.p.state()
    const partners = new Map<string, Address[]>()
    const fresh = new Set<string>()
    for (const c of Object.values(state.channels)) {
      if (c.state !== 'opened') continue
      const network = c.tokenNetwork.toLowerCase()
      partners.set(network, [...(partners.get(network) ?? []), c.partner])
      // A new partner (its channel just opened) hears all the node holds, what is queued now included.
      if (!this.known.has(c.partner.toLowerCase())) {
        this.sync(c.partner, state)
        fresh.add(c.partner.toLowerCase())
      }
    }
    for (const { update, except } of this.outgoing.values()) {
      for (const partner of partners.get(update.canonical_identifier.token_network_address.toLowerCase()) ?? []) {
        const key = partner.toLowerCase()
        if (fresh.has(key) || except.has(key) || key === update.updating_participant.toLowerCase()) continue
        this.p.delivery.sendOnce(partner, update)
        this.counts.sent++
      }
    }
    this.outgoing.clear()
  }
}
