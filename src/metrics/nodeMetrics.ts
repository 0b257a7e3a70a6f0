import type { NodeNotice } from '../node/notices.ts'
import type { SluiceNode } from '../node/sluiceNode.ts'
import type { ChannelState } from '../protocol/state/types.ts'
import { observeSync, observeTransactions } from './chainMetrics.ts'
import type { Metrics } from './registry.ts'

const CHANNEL_STATES: readonly ChannelState[] = ['opened', 'closing', 'closed', 'settling', 'settled']
/** Starts waiting for their result, at most: a payment or mediation never resolved (a crash, a restart) is forgotten. */
const STARTS_KEPT = 10_000

/** Start times by key, the oldest forgotten past STARTS_KEPT. */
class Starts {
  private readonly at = new Map<string, number>()
  constructor(private readonly now: () => number) {}
  /** The first start counts: a LockedTransfer received again (a resend) does not restart the clock. */
  start(key: string): void {
    if (this.at.has(key)) return
    this.at.set(key, this.now())
    if (this.at.size > STARTS_KEPT) this.at.delete(this.at.keys().next().value!)
  }
  /** Seconds since its start, and forgets it; undefined if it was not seen start (a payment before this process). */
  end(key: string): number | undefined {
    const started = this.at.get(key)
    if (started === undefined) return undefined
    this.at.delete(key)
    return (this.now() - started) / 1000
  }
  forget(key: string): void {
    this.at.delete(key)
  }
}

const paymentKey = (target: string, paymentId: bigint) => `${target.toLowerCase()}:${paymentId}`

/**
 * `sluice serve`: a node's payments sent, received and mediated (by outcome) with their latencies, its channels by
 * state, its sync lag and its transactions. The node is observed from outside: its notices (the core's events), each
 * commit's changes (when a payment starts, when a LockedTransfer comes in) and, when scraped, its state and status.
 * The core knows nothing of it. Payment latency runs from the payment's start (its initPayment, once routed) to its
 * result; a mediation's from the LockedTransfer received to the mediation's success (the unlock from upstream).
 */
export function observeNode(
  metrics: Metrics,
  node: Pick<SluiceNode, 'notices'> & { client: Pick<SluiceNode['client'], 'state' | 'status' | 'queue' | 'onApplied'> },
  now: () => number = () => performance.now(),
): () => void {
  const sent = metrics.counter('payments_sent_total', 'payments this node initiated, by outcome: success, failure', ['outcome'])
  const received = metrics.counter('payments_received_total', 'payments received as their target, by outcome: success', ['outcome'])
  const mediated = metrics.counter('payments_mediated_total', 'transfers this node forwarded, by outcome: success (paid on both sides)', ['outcome'])
  const sentSeconds = metrics.histogram('payment_sent_seconds', "a sent payment's time from its start to its result, by outcome", ['outcome'])
  const mediatedSeconds = metrics.histogram('payment_mediated_seconds', "a mediated transfer's time from its LockedTransfer to its unlock")
  for (const outcome of ['success', 'failure']) {
    sent.inc({ outcome }, 0)
    sentSeconds.zero({ outcome })
  }
  received.inc({ outcome: 'success' }, 0)
  mediated.inc({ outcome: 'success' }, 0)
  const payments = new Starts(now)
  const locks = new Starts(now)

  const offApplied = node.client.onApplied((applied) => {
    for (const { change } of applied) {
      if (change.type === 'initPayment') payments.start(paymentKey(change.target, change.paymentId))
      else if (change.type === 'receive' && change.message.type === 'LockedTransfer') locks.start(change.message.lock.secrethash)
    }
  })
  const offNotices = node.notices.subscribe((notice: NodeNotice) => {
    switch (notice.type) {
      case 'paymentSentSuccess':
      case 'paymentSentFailed': {
        const outcome = notice.type === 'paymentSentSuccess' ? 'success' : 'failure'
        sent.inc({ outcome })
        const seconds = payments.end(paymentKey(notice.target, notice.paymentId))
        if (seconds !== undefined) sentSeconds.observe({ outcome }, seconds)
        return
      }
      case 'paymentReceivedSuccess':
        received.inc({ outcome: 'success' })
        locks.forget(notice.secrethash)
        return
      case 'mediationSucceeded': {
        mediated.inc({ outcome: 'success' })
        const seconds = locks.end(notice.secrethash)
        if (seconds !== undefined) mediatedSeconds.observe(seconds)
        return
      }
    }
  })

  metrics.gauge('channels', "this node's channels by state (opened, closing, closed, settling, settled)", ['state'], function collect() {
    const counts = Object.fromEntries(CHANNEL_STATES.map((state) => [state, 0])) as Record<ChannelState, number>
    for (const channel of Object.values(node.client.state.channels)) counts[channel.state]++
    for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
  })
  observeSync(metrics, () => node.client.status)
  observeTransactions(metrics, () => node.client.queue)
  return () => {
    offApplied()
    offNotices()
  }
}
