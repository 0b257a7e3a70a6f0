import type { Address } from 'viem'
import type { RequestMonitoring, Signed } from '../../protocol/messages/types.ts'
import type { SignRequestMonitoringParameters } from '../../protocol/monitoringRequest.ts'
import type { Delivery } from '../../transport/delivery.ts'
import type { ServiceMessage, Signer } from './signer.ts'

export type ServiceMessagesParameters = {
  delivery: Pick<Delivery, 'enqueue' | 'cancel'>
  /** The node's signer, which refuses once the state is stale (docs/decisions/0029). */
  signer: Pick<Signer, 'signRequestMonitoring'>
  now?: () => number
}

/** Keys of service messages in delivery's queues: apart from the engine's outbox keys (`<address>:<type>:<id>`, `tx:`). */
const PREFIX = 'service|'

/**
 * What a background service signs and sends as the node on its own, outside the core (a RequestMonitoring,
 * docs/decisions/0035; a PFSCapacityUpdate or PFSFeeUpdate, docs/decisions/0073): signed by the node's signer, under its stale-state rule, and sent by delivery, which
 * resends each message with backoff until its recipient acknowledges it, in the recipient's unordered queue (it
 * never waits behind, or holds up, a channel's messages). No commit holds these messages: a service sends them
 * again after a restart, from what the state holds.
 */
export class ServiceMessages {
  /** Waiting for their acknowledgement, by delivery key: what to call then. */
  private readonly waiting = new Map<string, () => void>()

  constructor(private readonly p: ServiceMessagesParameters) {}

  /** Signs a RequestMonitoring as this node; StaleStateError once the state is found stale. */
  signRequestMonitoring(parameters: SignRequestMonitoringParameters): Signed<RequestMonitoring> {
    return this.p.signer.signRequestMonitoring(parameters)
  }

  /**
   * Sends `message` (signed, so that its acknowledgement id is known: transport/acknowledgement.ts) to `recipient`
   * until it acknowledges it, then calls `acknowledged`. A message still waiting under the same key is replaced:
   * only the newest counts, and an acknowledgement of the one replaced is ignored.
   */
  send(key: string, recipient: Address, message: ServiceMessage, acknowledged: () => void): void {
    const k = PREFIX + key
    if (this.waiting.has(k)) this.p.delivery.cancel([k])
    this.waiting.set(k, acknowledged)
    const now = (this.p.now ?? Date.now)()
    this.p.delivery.enqueue([{ key: k, recipient, message, queuedAt: now, attempts: 0, nextAttemptAt: now }])
  }

  /** Stops sending these (a channel no longer open, say). */
  cancel(keys: readonly string[]): void {
    const ks = keys.map((key) => PREFIX + key).filter((k) => this.waiting.delete(k))
    if (ks.length) this.p.delivery.cancel(ks)
  }

  /** How many are waiting for their acknowledgement. */
  get waitingCount(): number {
    return this.waiting.size
  }

  /** Delivery's `onAcknowledged`: calls back for the keys that are service messages, and returns the others (the engine's). */
  acknowledged(keys: readonly string[]): string[] {
    const others: string[] = []
    for (const k of keys) {
      if (!k.startsWith(PREFIX)) {
        others.push(k)
        continue
      }
      const done = this.waiting.get(k)
      this.waiting.delete(k)
      done?.()
    }
    return others
  }
}
