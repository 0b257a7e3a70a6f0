import { sleep } from '../../waits.ts'
import type { Hex } from 'viem'
import type { SecretResolverRequest } from '../../protocol/state/effects.ts'
import { retryDelay, type Backoff } from '../../transport/backoff.ts'

export type ResolveSecretParameters = {
  /** The resolver's URL (docs/rest-api.md, The secret resolver). */
  endpoint: string
  fetch: typeof fetch
  /** Hands the secret to the core (a `secretResolved` change); resolves once it is durable. */
  resolved(secret: Hex): Promise<unknown>
  /** The last block the node has applied: asking stops once the lock has expired. */
  blockNumber(): bigint
  backoff: Backoff
  /** Aborted when the node stops. */
  stopped: AbortSignal
  /** Reports a failed attempt (the node publishes it as an error notice). */
  report(error: unknown): void
}

/**
 * Asks the resolver endpoint for the secret of a payment started with only its hash. A resolver that is
 * unreachable or answers 503 is asked again with the delivery backoff until the lock expires (as the Raiden
 * node does); any other answer than 200 with a 32-byte secret ends it (the payment then fails when the lock
 * expires). Resolves when it is done asking.
 */
export async function resolveSecret(request: SecretResolverRequest, p: ResolveSecretParameters): Promise<void> {
  const body = resolverRequestBody(request)
  for (let attempt = 1; !p.stopped.aborted; attempt++) {
    let response: Response | undefined
    try {
      response = await p.fetch(p.endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: p.stopped })
    } catch (error) {
      if (p.stopped.aborted) return
      p.report(error)
    }
    if (response && response.status !== 503) {
      try {
        if (!response.ok) throw new Error(`resolver answered ${response.status}`)
        const answer = (await response.json()) as { secret?: unknown }
        if (typeof answer.secret !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(answer.secret)) throw new Error('resolver gave no 32-byte secret')
        await p.resolved(answer.secret.toLowerCase() as Hex)
      } catch (error) {
        p.report(error)
      }
      return
    }
    if (response) p.report(new Error('resolver answered 503; asking again'))
    await sleep(retryDelay(p.backoff, attempt), p.stopped)
    if (p.blockNumber() >= request.expiration) return
  }
}

/** docs/rest-api.md (The secret resolver) types the numbers as JSON integers: written digit for digit (JSON.stringify cannot write a bigint). */
export function resolverRequestBody(request: SecretResolverRequest): string {
  return JSON.stringify(
    {
      token: request.token,
      secrethash: request.secrethash,
      amount: request.amount,
      payment_identifier: request.paymentIdentifier,
      payment_sender: request.paymentSender,
      payment_recipient: request.paymentRecipient,
      expiration: request.expiration,
      reveal_timeout: request.revealTimeout,
      settle_timeout: request.settleTimeout,
    },
    (_, v) => (typeof v === 'bigint' ? `#int:${v}` : v),
  ).replace(/"#int:(\d+)"/g, '$1')
}
