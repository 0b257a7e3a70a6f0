import type { Address } from 'viem'
import { hasCode } from '../../errors.ts'
import { LineIntake } from '../../monitor/lineIntake.ts'
import type { Delivered, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../../protocol/messages/types.ts'
import { pfsUpdateDelivered } from '../../protocol/pfsUpdateAck.ts'
import { participantIndex, withParticipant, type PfsChannel } from '../channel.ts'
import type { PathfindingState } from '../network.ts'
import { timestampMicros } from '../timestamps.ts'
import { checkUpdate, isNewerCapacityUpdate, readUpdate, type UpdateRefusal } from '../updates.ts'
import type { PfsStore } from './store.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'

type Update = Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>

/** Why an update is refused: the core's reasons (updates.ts), and the intake's own. */
export type IntakeRefusal = UpdateRefusal | 'too_large' | 'rate_limited' | 'overloaded' | 'not_updater' | 'store_failed' | 'internal_error'

export type IntakeOutcome =
  | { outcome: 'accepted' | 'resent'; update: Update }
  /** For a channel not confirmed yet: held in memory, and taken once its ChannelOpened is. */
  | { outcome: 'deferred' }
  | { outcome: 'refused'; reason: IntakeRefusal; detail?: string }

export type IntakeCounts = { accepted: number; resent: number; deferred: number; refused: Partial<Record<IntakeRefusal, number>> }

/** What one peer, and everyone together, may send the service. */
export type IntakeLimits = {
  /** A wire line of more characters is refused unread. A fee update with Raiden's 21 penalty points is about 2,500; with 100, 16,000. */
  maxLineLength: number
  /** Each peer's bucket: this many updates at once... */
  perPeerBurst: number
  /** ...refilled at this many per second. */
  perPeerPerSecond: number
  /** Updates being checked at once, all peers together. */
  maxInFlight: number
  /** Updates for channels not confirmed yet held at once (the newest of each channel, participant and kind), and for how long. */
  maxDeferred: number
  deferredForMs: number
}

export const defaultIntakeLimits: IntakeLimits = {
  maxLineLength: 20_000,
  perPeerBurst: 200,
  perPeerPerSecond: 50,
  maxInFlight: 1_024,
  maxDeferred: 10_000,
  deferredForMs: 15 * 60_000,
}

export type IntakeParameters = {
  store: PfsStore
  /** The service's view (durable: the store's channels), which the checks read. */
  state: PathfindingState
  /** The service's curve engine: an update's signer is recovered with it. */
  curve: Secp256k1Engine
  limits: IntakeLimits
  /** Sends the service's acknowledgement to the node (signed by the service). */
  acknowledge(to: Address, delivered: Delivered): void
  /** Told of each refusal with its detail, and of bugs: for the log. */
  log?(event: { from: Address; outcome: IntakeOutcome } | { from: Address; error: unknown }): void
  now?: () => number
}

type Deferred = { line: string; from: Address; at: number }

/**
 * Takes PFSCapacityUpdate and PFSFeeUpdate lines from the transport (docs/decisions/0072), as the monitoring service's
 * intake takes requests: the limits first (size, the peer's rate, the updates in flight), then the message, its sender
 * (the updating participant itself: the transport authenticated the peer), the core's checks against the view
 * (src/pathfinding/updates.ts: a replay costs no signature recovery), and last, in the store's own ordered step, the
 * channel as it is then (a newer update, or a chain event, may have come in between). Once durable, the update is
 * acknowledged with a Delivered whose id is derived from it; a resend of the update held is acknowledged again. An
 * update for a channel whose opening is not confirmed yet is held in memory (bounded) and taken once it is, as
 * raiden-services does. Whatever a line holds, it ends as one counted outcome (src/monitor/lineIntake.ts).
 */
export class UpdateIntake {
  private readonly counts: IntakeCounts = { accepted: 0, resent: 0, deferred: 0, refused: {} }
  private readonly lines: LineIntake<IntakeOutcome>
  /** By channel (`tokenNetwork:id`), then by `participant:type`: the newest of each, in arrival order. */
  private readonly deferred = new Map<string, Map<string, Deferred>>()
  private deferredCount = 0

  constructor(private readonly p: IntakeParameters) {
    this.lines = new LineIntake({
      limits: p.limits,
      now: p.now,
      decide: (line, from, again) => this.decide(line, from, again),
      internalError: (from, error) => {
        this.p.log?.({ from, error })
        return { outcome: 'refused', reason: 'internal_error' }
      },
      count: (from, outcome) => this.count(from, outcome),
    })
  }

  /** The transport's handler: each line on its own, concurrently; nothing is returned or thrown. */
  receive(lines: readonly string[], from: Address): void {
    this.lines.receive(lines, from)
  }

  /** Handles one line from `from` (the transport's authenticated peer); resolves with its outcome, never rejecting. */
  handle(line: string, from: Address, again = false): Promise<IntakeOutcome> {
    return this.lines.handle(line, from, again)
  }

  /** A channel's ChannelOpened is confirmed: the updates held for it are taken now. */
  channelConfirmed(tokenNetwork: Address, channelId: bigint): void {
    const key = `${tokenNetwork.toLowerCase()}:${channelId}`
    const held = this.deferred.get(key)
    if (!held) return
    this.deferred.delete(key)
    this.deferredCount -= held.size
    const now = (this.p.now ?? Date.now)()
    for (const { line, from, at } of held.values()) if (now - at <= this.p.limits.deferredForMs) void this.handle(line, from, true)
  }

  counters(): IntakeCounts {
    return { ...this.counts, refused: { ...this.counts.refused } }
  }

  /** Updates held for channels not confirmed yet. */
  get deferredSize(): number {
    return this.deferredCount
  }

  /** Takes no more lines and waits for those being handled. */
  stop(): Promise<void> {
    return this.lines.stop()
  }

  private count(from: Address, outcome: IntakeOutcome): IntakeOutcome {
    if (outcome.outcome === 'refused') {
      this.counts.refused[outcome.reason] = (this.counts.refused[outcome.reason] ?? 0) + 1
      this.p.log?.({ from, outcome })
    } else {
      this.counts[outcome.outcome]++
      if (outcome.outcome !== 'deferred') this.p.acknowledge(from, pfsUpdateDelivered(outcome.update))
    }
    return outcome
  }

  private async decide(line: string, from: Address, again: boolean): Promise<IntakeOutcome> {
    const refused = (reason: IntakeRefusal, detail?: string): IntakeOutcome => ({ outcome: 'refused', reason, ...(detail === undefined ? {} : { detail }) })
    // A held update taken again was counted against its peer when it came.
    const limited = this.lines.admit(line, from, again)
    if (limited) return refused(limited.reason, limited.detail)
    const read = readUpdate(line)
    if (!read.ok) return refused(read.reason, read.detail)
    const update = read.update
    // The transport authenticated the peer: a node sends its own updates, and spends its own limits.
    if (update.updating_participant.toLowerCase() !== from.toLowerCase()) return refused('not_updater', `sent by ${from}`)

    const now = (this.p.now ?? Date.now)()
    const checked = checkUpdate(this.p.state, update, { now, curve: this.p.curve })
    if (checked.outcome === 'resent') return { outcome: 'resent', update }
    if (checked.outcome === 'refused') {
      if (checked.reason === 'unknown_channel' && !again) return this.defer(line, from, update, now) ?? refused(checked.reason, checked.detail)
      return refused(checked.reason, checked.detail)
    }
    try {
      return await this.p.store.transact((tx): IntakeOutcome => {
        const id = update.canonical_identifier
        const current = tx.channel(id.token_network_address, id.channel_identifier)
        if (!current) return refused('unknown_channel', `channel ${id.channel_identifier}`)
        const next = withUpdate(current, update)
        if (typeof next === 'string') return refused(next)
        tx.putChannel(next)
        return { outcome: 'accepted', update }
      })
    } catch (error) {
      if (hasCode(error, 'STORAGE', 'STORAGE_CLOSED')) return refused('store_failed', (error as Error).message.split('\n')[0])
      throw error
    }
  }

  /** Holds an update for a channel not confirmed yet, the newest of its channel, participant and kind; undefined when full. */
  private defer(line: string, from: Address, update: Update, now: number): IntakeOutcome | undefined {
    const id = update.canonical_identifier
    const key = `${id.token_network_address.toLowerCase()}:${id.channel_identifier}`
    const slot = `${update.updating_participant.toLowerCase()}:${update.type}`
    let held = this.deferred.get(key)
    if (!held?.has(slot)) {
      if (this.deferredCount >= this.p.limits.maxDeferred) this.dropOldDeferred(now)
      if (this.deferredCount >= this.p.limits.maxDeferred) return undefined
      this.deferredCount++
    }
    if (!held) {
      held = new Map()
      this.deferred.set(key, held)
    }
    held.set(slot, { line, from, at: now })
    return { outcome: 'deferred' }
  }

  private dropOldDeferred(now: number): void {
    for (const [key, held] of this.deferred) {
      for (const [slot, d] of held)
        if (now - d.at > this.p.limits.deferredForMs) {
          held.delete(slot)
          this.deferredCount--
        }
      if (held.size === 0) this.deferred.delete(key)
    }
  }
}

/**
 * The channel with `update` as its participant's newest, or why not, judged on the channel as it is in the store's
 * step: the core checked the update against the view already (signature included); between that check and this step
 * a newer update of the same participant, or the channel's close, may have come.
 */
function withUpdate(channel: PfsChannel, update: Update): PfsChannel | 'channel_not_open' | 'not_a_participant' | 'stale' {
  if (channel.closed) return 'channel_not_open'
  const index = participantIndex(channel, update.updating_participant)
  if (index === -1) return 'not_a_participant'
  const side = channel.participants[index]
  if (update.type === 'PFSCapacityUpdate') {
    if (!isNewerCapacityUpdate(update, side.capacityUpdate)) return 'stale'
    return withParticipant(channel, index, { ...side, capacityUpdate: update })
  }
  if (side.feeUpdate && timestampMicros(update.timestamp)! <= timestampMicros(side.feeUpdate.timestamp)!) return 'stale'
  return withParticipant(channel, index, { ...side, feeUpdate: update })
}
