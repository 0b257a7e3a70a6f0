import type { Address, Hex } from 'viem'
import { Semaphore } from './semaphore.ts'
import type { SentPayment } from './payments.ts'

export type PaymentInFlight = { tokenNetwork: Address; amount: bigint; secrethash?: Hex; result: Promise<SentPayment> }

/**
 * One node's payments under way: by target and identifier, so a second request for the same payment joins the
 * first; and the slots that bound how many run at once (a channel end holds at most `maxPendingLocks` locks, so
 * more concurrent payments than that would fail: they wait for a slot instead).
 */
export class PaymentsInFlight {
  readonly slots: Semaphore
  private readonly byKey = new Map<string, PaymentInFlight>()

  constructor(concurrency: number) {
    this.slots = new Semaphore(concurrency)
  }

  get(target: Address, identifier: bigint): PaymentInFlight | undefined {
    return this.byKey.get(key(target, identifier))
  }

  /** Tracks `payment` until its result settles. */
  track(target: Address, identifier: bigint, payment: PaymentInFlight): void {
    const k = key(target, identifier)
    this.byKey.set(k, payment)
    const forget = () => {
      if (this.byKey.get(k) === payment) this.byKey.delete(k)
    }
    payment.result.then(forget, forget)
  }
}

const key = (target: Address, identifier: bigint) => `${target.toLowerCase()}:${identifier}`
