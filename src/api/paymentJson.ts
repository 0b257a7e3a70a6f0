import { getAddress } from 'viem'
import type { PaymentRecord } from '../storage/storage.ts'
import * as v from 'valibot'
import { addressString as address, decimalString as decimal } from './schema.ts'

/** Beyond Raiden's API: the hops a sent payment took, ending at its target. */
export const routeSchema = v.pipe(
  v.array(address),
  v.description('sent successes (beyond Raiden): the hops the payment took, the first our partner, the last the target'),
)

/** Beyond Raiden's API: a payment's mediation fees. */
export const feeSchema = v.pipe(
  decimal,
  v.description(
    "beyond Raiden: a sent payment's cost beyond its amount (the route's estimated mediation fee and its margin, as the light client's `fee`); a mediated payment's fee kept (amount in less amount out)",
  ),
)

/** A Payment history entry as a client receives it (openapi.json): which fields are present depends on `event`. */
export const historyEntrySchema = v.object({
  event: v.picklist(['EventPaymentSentSuccess', 'EventPaymentSentFailed', 'EventPaymentReceivedSuccess', 'EventPaymentMediated']),
  amount: v.optional(decimal),
  fee: v.optional(feeSchema),
  target: v.optional(address),
  initiator: v.optional(address),
  identifier: v.optional(decimal),
  log_time: v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, with milliseconds')),
  token_address: address,
  reason: v.optional(v.string()),
  route: v.optional(routeSchema),
})
export type HistoryEntryAnswer = v.InferOutput<typeof historyEntrySchema>

/** One history row as docs/rest-api.md (Payment history entry) shapes it: each kind has its own fields. */
export function historyEntry(r: PaymentRecord): Record<string, unknown> {
  const log_time = new Date(r.time).toISOString()
  const token_address = getAddress(r.token)
  switch (r.event) {
    case 'EventPaymentSentSuccess':
      return {
        event: r.event,
        amount: r.amount,
        target: getAddress(r.partner),
        identifier: r.identifier,
        log_time,
        token_address,
        ...(r.route ? { route: r.route.map((hop) => getAddress(hop)) } : {}),
        ...(r.fee !== undefined ? { fee: r.fee } : {}),
      }
    case 'EventPaymentSentFailed':
      return { event: r.event, target: getAddress(r.partner), log_time, token_address, reason: r.reason ?? '' }
    case 'EventPaymentReceivedSuccess':
      return { event: r.event, amount: r.amount, initiator: getAddress(r.partner), identifier: r.identifier, log_time, token_address }
    case 'EventPaymentMediated':
      return {
        event: r.event,
        amount: r.amount,
        fee: r.fee ?? 0n,
        initiator: getAddress(r.partner),
        ...(r.target ? { target: getAddress(r.target) } : {}),
        identifier: r.identifier,
        log_time,
        token_address,
      }
  }
}
