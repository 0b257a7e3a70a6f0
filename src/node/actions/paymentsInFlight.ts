import type { Address, Hex } from 'viem'
import { Semaphore } from './semaphore.ts'

/** What a succeeded payment returns (docs/rest-api.md, Payment result object). */
export type SentPayment = {
  initiator: Address
  target: Address
  token: Address
  amount: bigint
  identifier: bigint
  secret: Hex
  secrethash: Hex
  /** The hops it took, ending at the target (unknown for payments kept before routes were). */
  route?: Address[]
  /** What it cost beyond its amount: the route's estimated mediation fee and its margin (unknown for payments kept before). */
  fee?: bigint
}

/** What makes two payment requests the same payment: the token network, the amount and, when named, the secret hash. */
export type PaymentTerms = { tokenNetwork: Address; amount: bigint; secrethash?: Hex }

/** The payment an identifier stands for, once known: one in flight (new or resumed after a restart), or one paid. */
export type KnownPayment = PaymentTerms & { state: 'in flight' | 'paid'; result: Promise<SentPayment> }

/**
 * A request holding an identifier: what it asked for, and the payment the identifier turns out to stand for (found
 * in the state or the history, or started by this request). Rejects when the request failed before any payment.
 */
export type Claim = { asked: PaymentTerms; payment: Promise<KnownPayment> }

/**
 * One node's payment identifiers in use, by target and identifier: the first request for one claims it
 * synchronously, and every later request waits for what the claim stands for, then joins it or conflicts with it.
 * Also the slots that bound how many payments run at once (a channel end holds at most `maxPendingLocks` locks, so
 * more concurrent payments than that would fail: they wait for a slot instead).
 */
export class PaymentsInFlight {
  readonly slots: Semaphore
  private readonly byKey = new Map<string, Claim>()

  constructor(concurrency: number) {
    this.slots = new Semaphore(concurrency)
  }

  get(target: Address, identifier: bigint): Claim | undefined {
    return this.byKey.get(key(target, identifier))
  }

  /** Holds the identifier for `claim` until it fails or its payment's result settles. */
  claim(target: Address, identifier: bigint, claim: Claim): void {
    const k = key(target, identifier)
    this.byKey.set(k, claim)
    const forget = () => {
      if (this.byKey.get(k) === claim) this.byKey.delete(k)
    }
    claim.payment.then((known) => known.result.then(forget, forget), forget)
  }
}

const key = (target: Address, identifier: bigint) => `${target.toLowerCase()}:${identifier}`
