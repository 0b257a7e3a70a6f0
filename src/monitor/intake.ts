import type { Address } from 'viem'
import { hasCode, withCode } from '../errors.ts'
import type { InvalidMessageError } from '../protocol/errors.ts'
import type { Delivered, RequestMonitoring, Signed } from '../protocol/messages/types.ts'
import { parseMessage } from '../protocol/messages/wire.ts'
import { requestMonitoringDelivered } from '../protocol/monitoringRequest.ts'
import type { ChainFactsReader } from './chainFacts.ts'
import type { Limits } from './limits.ts'
import { LineIntake } from './lineIntake.ts'
import { channelKey, type WatchedChannel } from './records.ts'
import { checkChainFacts, checkFields, checkSignatures, compareWithHeld, type RefusalReason, type RequestContext } from './requestCheck.ts'
import type { MonitorStore } from './store.ts'

export type IntakeOutcome =
  | { outcome: 'accepted'; request: Signed<RequestMonitoring> }
  | { outcome: 'resent'; request: Signed<RequestMonitoring> }
  | { outcome: 'refused'; reason: RefusalReason; detail?: string }

export type IntakeCounts = { accepted: number; resent: number; refused: Partial<Record<RefusalReason, number>> }

export type IntakeParameters = {
  store: MonitorStore
  context: RequestContext
  limits: Limits
  facts: ChainFactsReader
  /** Sends the acknowledgement of a request to its requester (signed by the service). */
  acknowledge(to: Address, delivered: Delivered): void
  /** Told about each refusal with its detail, and about bugs: for the log. */
  log?(event: { from: Address; outcome: IntakeOutcome } | { from: Address; error: unknown }): void
  now?: () => number
}

/**
 * Takes RequestMonitoring lines from the transport and decides, line by line, whether the service holds them
 * (docs/decisions/0031): the limits first (size, the peer's rate, the requests in flight), then the fields and the
 * sender, what the service already holds, the signatures (requestCheck.ts), the chain's facts, and last, in the
 * store's own ordered step, the held request again. Only once the request is durable is it acknowledged, with a Delivered whose
 * id is derived from it; a resend of the request held is acknowledged again. Whatever a line holds, it ends as one
 * counted outcome: nothing a peer sends can throw out of here (lineIntake.ts).
 */
export class Intake {
  private readonly counts: IntakeCounts = { accepted: 0, resent: 0, refused: {} }
  private readonly lines: LineIntake<IntakeOutcome>

  constructor(private readonly p: IntakeParameters) {
    this.lines = new LineIntake({
      limits: p.limits,
      now: p.now,
      decide: (line, from) => this.decide(line, from),
      internalError: (from, error) => {
        this.p.log?.({ from, error })
        return { outcome: 'refused', reason: 'internal_error' }
      },
      count: (from, outcome) => this.count(from, outcome),
    })
  }

  /** The transport's handler: each line is handled on its own, concurrently; nothing is returned or thrown. */
  receive(lines: readonly string[], from: Address): void {
    this.lines.receive(lines, from)
  }

  /** Handles one line from `from` (the transport's authenticated peer) and resolves with its outcome, never rejecting. */
  handle(line: string, from: Address): Promise<IntakeOutcome> {
    return this.lines.handle(line, from)
  }

  counters(): IntakeCounts {
    return { accepted: this.counts.accepted, resent: this.counts.resent, refused: { ...this.counts.refused } }
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
      this.p.acknowledge(from, requestMonitoringDelivered(outcome.request))
    }
    return outcome
  }

  private async decide(line: string, from: Address): Promise<IntakeOutcome> {
    const refused = (reason: RefusalReason, detail?: string): IntakeOutcome => ({ outcome: 'refused', reason, ...(detail === undefined ? {} : { detail }) })
    const limited = this.lines.admit(line, from)
    if (limited) return refused(limited.reason, limited.detail)

    let message: ReturnType<typeof parseMessage>
    try {
      message = parseMessage(line)
    } catch (error) {
      const malformed = withCode<InvalidMessageError>(error, 'INVALID_MESSAGE')
      if (malformed) return refused('malformed', malformed.shortMessage)
      throw error
    }
    if (message.type !== 'RequestMonitoring') return refused('not_a_request', message.type)
    const request = message
    const fields = checkFields(request, from, this.p.context)
    if (!fields.ok) return refused(fields.reason, fields.detail)
    const bp = request.balance_proof
    const key = channelKey(bp.token_network_address, bp.channel_identifier)
    const requester = request.non_closing_participant.toLowerCase()

    // What is held now: a resend is answered, and a stale one refused, before any signature recovery or chain read.
    const early = this.judge(this.p.store.channels.get(key), request, requester, this.p.store.requesterChannels(requester))
    if (early) return early
    const signed = checkSignatures(this.p.context.curve, request)
    if (!signed.ok) return refused(signed.reason, signed.detail)
    const closing = signed.closing

    let facts: Awaited<ReturnType<ChainFactsReader['forRequest']>>
    try {
      facts = await this.p.facts.forRequest(request, closing)
    } catch (error) {
      if (hasCode(error, 'CHAIN_RPC')) return refused('chain_unavailable', (error as Error).message.split('\n')[0])
      throw error
    }
    const onChain = checkChainFacts(request, facts)
    if (onChain && !onChain.ok) return refused(onChain.reason, onChain.detail)

    try {
      return await this.p.store.transact((tx): IntakeOutcome => {
        const held = tx.channel(key)
        const again = this.judge(held, request, requester, tx.requesterChannels(requester))
        if (again) return again
        const channel: WatchedChannel = held ?? { tokenNetwork: bp.token_network_address, channelId: bp.channel_identifier, requests: {}, duties: {} }
        channel.requests[requester] = { request, closing, receivedAt: (this.p.now ?? Date.now)() }
        tx.putChannel(channel)
        return { outcome: 'accepted', request }
      })
    } catch (error) {
      if (hasCode(error, 'STORAGE', 'STORAGE_CLOSED')) return refused('store_failed', (error as Error).message.split('\n')[0])
      throw error
    }
  }

  /** The outcome decided by what is held (resent, stale, a closed channel, too many channels), or undefined: go on. */
  private judge(held: WatchedChannel | undefined, request: Signed<RequestMonitoring>, requester: string, requesterChannels: number): IntakeOutcome | undefined {
    const verdict = compareWithHeld(request, held?.requests[requester])
    if (verdict === 'resent') return { outcome: 'resent', request }
    if (verdict === 'stale') return { outcome: 'refused', reason: 'stale', detail: `holds nonce ${held?.requests[requester]?.request.balance_proof.nonce}` }
    // Seen closed on-chain (confirmed): too late to ask, whatever a lagging endpoint says.
    if (held?.closed || held?.settled) return { outcome: 'refused', reason: 'channel_not_open', detail: 'closed' }
    if (!held?.requests[requester] && requesterChannels >= this.p.limits.maxChannelsPerRequester)
      return { outcome: 'refused', reason: 'too_many_channels', detail: `${requesterChannels} channels` }
    return undefined
  }
}
