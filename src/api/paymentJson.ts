import { getAddress } from 'viem'
import type { PaymentRecord } from '../storage/storage.ts'
import { addressSchema as address, decimalSchema as decimal } from './schema.ts'

/** Beyond Raiden's API: the hops a sent payment took, ending at its target. */
export const routeSchema = {
  type: 'array',
  items: address,
  description: 'sent successes (beyond Raiden): the hops the payment took, the first our partner, the last the target',
}

export const historyEntrySchema = {
  type: 'object',
  properties: {
    event: { enum: ['EventPaymentSentSuccess', 'EventPaymentSentFailed', 'EventPaymentReceivedSuccess'] },
    amount: decimal,
    target: address,
    initiator: address,
    identifier: decimal,
    log_time: { type: 'string', format: 'date-time', description: 'ISO 8601, UTC, with milliseconds' },
    token_address: address,
    reason: { type: 'string' },
    route: routeSchema,
  },
  required: ['event', 'log_time', 'token_address'],
}

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
      }
    case 'EventPaymentSentFailed':
      return { event: r.event, target: getAddress(r.partner), log_time, token_address, reason: r.reason ?? '' }
    case 'EventPaymentReceivedSuccess':
      return { event: r.event, amount: r.amount, initiator: getAddress(r.partner), identifier: r.identifier, log_time, token_address }
  }
}
