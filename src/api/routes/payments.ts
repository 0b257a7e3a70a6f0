import type { Context } from 'hono'
import * as v from 'valibot'
import { getAddress, type Address } from 'viem'
import { maxUint64 } from 'viem'
import { readPaymentHistory, sendPayment } from '../../node/actions/payments.ts'
import type { ApiContextRef } from '../context.ts'
import { feeSchema, historyEntry, historyEntrySchema, routeSchema } from '../paymentJson.ts'
import { bytes32, integer, optional, type Parsed } from '../fields.ts'
import { endpoint, json, type Resources, type RouteDoc } from '../resource.ts'
import { addressString as address, decimalString as decimal, hex32String as hex32 } from '../schema.ts'

const historyQuery = {
  limit: optional(integer({ rangeStatus: 400, description: 'at most this many entries' })),
  offset: optional(integer({ rangeStatus: 400, description: 'skip this many entries first' })),
}

const paymentBody = {
  amount: integer({ min: 1n, description: "amount sent to the target, in the token's smallest unit" }),
  identifier: optional(integer({ min: 1n, max: maxUint64, description: 'payment identifier (1..2^64-1); random when absent' })),
  lock_timeout: optional(
    integer({
      min: 1n,
      description: 'blocks until the lock expires: more than the reveal timeout, at most the settle timeout; default twice the reveal timeout',
    }),
  ),
  secret: optional(bytes32()),
  secret_hash: optional(bytes32()),
}

/** The Payment result object as a client receives it (openapi.json). */
export const paymentResultSchema = v.object({
  initiator_address: address,
  target_address: address,
  token_address: address,
  amount: decimal,
  identifier: decimal,
  secret: hex32,
  secret_hash: hex32,
  route: v.optional(routeSchema),
  fee: v.optional(feeSchema),
})
export type PaymentResult = v.InferOutput<typeof paymentResultSchema>

const page = (n: bigint | undefined) => (n === undefined ? undefined : Number(n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : n))

/** Payment history (GET) and sending payments (POST). */
export function paymentsRoutes(resources: Resources, ctx: ApiContextRef): void {
  const historyDoc = (summary: string): RouteDoc & { query: typeof historyQuery } => ({
    summary,
    description:
      'Oldest first. log_time is the time the event was stored, in UTC with milliseconds (e.g. 2024-05-01T12:00:00.123Z). For a partner, sent payments match on their target, received and mediated ones (EventPaymentMediated, beyond Raiden: what came in and the fee kept) on their initiator.',
    query: historyQuery,
    responses: {
      200: 'array of Payment history entries',
      400: 'limit or offset is not a non-negative integer, or an unknown query parameter',
      404: 'an address in the path is not EIP-55',
      409: 'no token network is registered for token_address',
    },
    schema: v.array(historyEntrySchema),
  })
  const history = async (c: Context, { limit, offset }: Parsed<typeof historyQuery>, token?: Address, partner?: Address) => {
    const lim = page(limit)
    const off = page(offset)
    const rows = await readPaymentHistory(ctx().client, {
      ...(token ? { token } : {}),
      ...(partner ? { partner } : {}),
      ...(lim !== undefined ? { limit: lim } : {}),
      ...(off !== undefined ? { offset: off } : {}),
    })
    return json(c, rows.map(historyEntry))
  }

  resources.add('/payments', {
    GET: endpoint({ doc: historyDoc('Payment history of all tokens and partners'), handler: (c) => history(c, c.req.valid('query')) }),
  })
  resources.add('/payments/:token_address', {
    GET: endpoint({
      doc: historyDoc('Payment history of one token'),
      handler: (c) => history(c, c.req.valid('query'), c.req.param('token_address') as Address),
    }),
  })
  resources.add('/payments/:token_address/:target_address', {
    GET: endpoint({
      doc: historyDoc('Payment history of one token with one partner (target_address)'),
      handler: (c) => history(c, c.req.valid('query'), c.req.param('token_address') as Address, c.req.param('target_address') as Address),
    }),
    POST: endpoint({
      doc: {
        summary: 'Sends a payment to the target and answers once it succeeded or failed',
        description:
          "Direct when a channel with the target can carry it, else mediated over a route, whose lock carries the amount, the route's estimated mediation fee and a margin (the answer's fee, beyond Raiden), at most --pathfinding-max-fee beyond the amount. With only secret_hash the node asks its secret resolver for the secret when the target requests it. A request with the identifier and target of a payment in flight, the same amount and token, joins it and gets its result.",
        body: paymentBody,
        responses: {
          200: 'the payment succeeded (our Unlock is on its way): Payment result object',
          400: 'malformed JSON, a field of the wrong type or format, a missing amount or an unknown field',
          402: 'insufficient balance to start: no channel of ours (the one with the target, when there is one) can send the amount',
          404: 'token_address or target_address is not an EIP-55 address',
          409: 'invalid amount (not in 1..2^256-1), the target is us or the zero address, no token network for the token, identifier not in 1..2^64-1, secret and secret_hash do not match, the secret hash is in use or already registered on-chain, lock_timeout not in (reveal_timeout, settle_timeout], no channel or no path to the target, the identifier is in flight for another payment, or the payment failed (lock expired, target offline, every route fee and margin beyond --pathfinding-max-fee, the mediators took more than the estimate allowed...)',
        },
        schema: paymentResultSchema,
      },
      handler: async (c) => {
        const body = c.req.valid('json')
        const paid = await sendPayment(ctx().client, {
          token: c.req.param('token_address') as Address,
          target: c.req.param('target_address') as Address,
          amount: body.amount,
          ...(body.identifier !== undefined ? { identifier: body.identifier } : {}),
          ...(body.lock_timeout !== undefined ? { lockTimeout: body.lock_timeout } : {}),
          ...(body.secret !== undefined ? { secret: body.secret } : {}),
          ...(body.secret_hash !== undefined ? { secrethash: body.secret_hash } : {}),
        })
        return json(c, {
          initiator_address: paid.initiator,
          target_address: getAddress(paid.target),
          token_address: getAddress(paid.token),
          amount: paid.amount,
          identifier: paid.identifier,
          secret: paid.secret,
          secret_hash: paid.secrethash,
          ...(paid.route ? { route: paid.route.map((hop) => getAddress(hop)) } : {}),
          ...(paid.fee !== undefined ? { fee: paid.fee } : {}),
        })
      },
    }),
  })
}
