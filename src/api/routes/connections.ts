import * as v from 'valibot'
import type { Address } from 'viem'
import type { ApiContextRef } from '../context.ts'
import { fraction, integer, optional } from '../fields.ts'
import { endpoint, json, type Resources } from '../resource.ts'
import { addressString, decimalString } from '../schema.ts'

const joinBody = {
  funds: integer({ description: 'tokens to put into the token network, in all (required, > 0)' }),
  initial_channel_target: optional(integer({ max: 2n ** 32n, description: 'channels to open proactively; 3 by default' })),
  joinable_funds_target: optional(fraction()),
}

/** GET /connections as a client receives it (openapi.json): a Connection entry per token address. */
export const connectionsAnswer = v.record(addressString, v.object({ sum_deposits: decimalString, channels: decimalString }))
export type ConnectionsAnswer = v.InferOutput<typeof connectionsAnswer>

/** Joining and leaving token networks automatically (the connection manager). */
export function connectionsRoutes(resources: Resources, ctx: ApiContextRef): void {
  const connections = () => ctx().services.connections
  resources.add('/connections', {
    GET: {
      doc: {
        summary: 'Our open channels by token',
        description: 'Tokens with at least one open channel: the sum of our deposits in those channels and their number (decimal strings).',
        responses: { 200: 'object keyed by token address, values Connection entries ({} when there is no open channel)' },
        schema: connectionsAnswer,
      },
      handler: (c) => {
        const out: Record<string, { sum_deposits: bigint; channels: string }> = {}
        for (const [token, { sumDeposits, channels }] of connections().summary()) out[token] = { sum_deposits: sumDeposits, channels: String(channels) }
        return json(c, out)
      },
    },
  })
  resources.add('/connections/:token_address', {
    PUT: endpoint({
      doc: {
        summary: 'Join the token network: open and fund channels automatically',
        description:
          'Opens up to initial_channel_target channels with the best-connected participants of the token network (most open channels first; never ourselves nor an existing partner), ' +
          'each funded with funds * (1 - joinable_funds_target) / initial_channel_target; our open channels funded below that amount are topped up first and count towards the target. ' +
          'The rest of the funds joins channels that other nodes open with us later (we deposit up to their deposit, at most the per-channel amount). With fewer participants than the target, ' +
          'the missing channels are opened as new participants appear. Answers 204 once every on-chain call is done. The settings are kept in memory until the node stops.',
        body: joinBody,
        responses: {
          204: 'joined (empty body)',
          400: 'malformed JSON or fields',
          402: "not enough native currency for the gas reserve of the node's channels and the ones to open, or for a transaction",
          404: 'token_address is not an EIP-55 address',
          409: "invalid input: funds not greater than 0; the token is not registered; the node holds fewer tokens than funds; joinable_funds_target outside 0..1; the per-channel amount is 0 or above the token network's deposit limit; a transaction was refused",
        },
      },
      handler: async (c) => {
        const { funds, initial_channel_target, joinable_funds_target } = c.req.valid('json')
        await connections().connect({
          token: c.req.param('token_address') as Address,
          funds,
          ...(initial_channel_target !== undefined ? { initialChannelTarget: initial_channel_target } : {}),
          ...(joinable_funds_target !== undefined ? { joinableFundsTarget: joinable_funds_target } : {}),
        })
        return c.body(null, 204)
      },
    }),
    DELETE: {
      doc: {
        summary: 'Leave the token network: close and settle every channel of the token',
        description:
          'Closes every open channel of the token and answers once each is closed and settled (settlement follows by itself after the settle window), with the partner addresses of the closed channels ' +
          '(the API description: "array of addresses of the closed channels"; the Raiden node answered channel objects). Forgets the token\'s connection settings.',
        responses: {
          200: 'array of the partner addresses of the closed channels ([] when there was none)',
          402: 'not enough native currency for the gas to close and settle the channels',
          404: 'token_address is not an EIP-55 address, or the token is not registered (no token network)',
          409: 'a close transaction failed (the channels that did close are named in the message)',
        },
        schema: v.array(addressString),
      },
      handler: async (c) => json(c, await connections().leave(c.req.param('token_address') as Address)),
    },
  })
}
