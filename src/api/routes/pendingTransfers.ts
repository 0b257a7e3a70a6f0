import type { Context } from 'hono'
import * as v from 'valibot'
import type { Address } from 'viem'
import { pendingTransfers, type PendingTransfer } from '../../node/actions/pendingTransfers.ts'
import type { ApiContextRef } from '../context.ts'
import { json, type Resources, type RouteDoc } from '../resource.ts'
import { addressString as address, decimalString as decimal } from '../schema.ts'

/** A Pending transfer entry as a client receives it (openapi.json). */
export const entrySchema = v.object({
  channel_identifier: decimal,
  initiator: address,
  target: address,
  locked_amount: v.pipe(decimal, v.description("the amount of this transfer's lock")),
  transferred_amount: v.pipe(decimal, v.description("what the lock's sender has transferred in that channel so far")),
  payment_identifier: decimal,
  role: v.picklist(['initiator', 'mediator', 'target']),
  token_address: address,
  token_network_address: address,
})
export type PendingTransferAnswer = v.InferOutput<typeof entrySchema>

export function pendingTransferEntry(t: PendingTransfer): Record<string, unknown> {
  return {
    channel_identifier: t.channelId,
    initiator: t.initiator,
    target: t.target,
    locked_amount: t.lockedAmount,
    transferred_amount: t.transferredAmount,
    payment_identifier: t.paymentId,
    role: t.role,
    token_address: t.token,
    token_network_address: t.tokenNetwork,
  }
}

/** Transfers in flight that this node initiates, mediates or receives. */
export function pendingTransfersRoutes(resources: Resources, ctx: ApiContextRef): void {
  const doc = (summary: string, responses: RouteDoc['responses']): RouteDoc => ({
    summary,
    description:
      'One entry per transfer whose lock is pending. The channel is our outgoing one for an initiator and the incoming one for a mediator or a target (as the Raiden node reports them).',
    responses: { 200: 'array of Pending transfer entries', ...responses },
    schema: v.array(entrySchema),
  })
  const list = (c: Context, token?: Address, partner?: Address) =>
    json(c, pendingTransfers(ctx().client.state, { ...(token ? { token } : {}), ...(partner ? { partner } : {}) }).map(pendingTransferEntry))

  resources.add('/pending_transfers', {
    GET: { doc: doc('All pending transfers', {}), handler: (c) => list(c) },
  })
  resources.add('/pending_transfers/:token_address', {
    GET: {
      doc: doc('Pending transfers of one token', { 404: 'token_address is not an EIP-55 address, or no token network is registered for it' }),
      handler: (c) => list(c, c.req.param('token_address') as Address),
    },
  })
  resources.add('/pending_transfers/:token_address/:partner_address', {
    GET: {
      doc: doc('Pending transfers in our channel with one partner', {
        404: 'an address is not EIP-55, no token network is registered for the token, or we have no channel with the partner',
      }),
      handler: (c) => list(c, c.req.param('token_address') as Address, c.req.param('partner_address') as Address),
    },
  })
}
