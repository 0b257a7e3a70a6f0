import * as v from 'valibot'
import type { Address } from 'viem'
import {
  channelOf,
  closeChannel,
  depositToChannel,
  openChannel,
  setRevealTimeout,
  unsettledChannels,
  withdrawFromChannel,
} from '../../node/actions/channels.ts'
import { ChannelNotFoundError } from '../../node/errors.ts'
import { tokenNetworkOf } from '../../protocol/state/access.ts'
import { channelJson } from '../channelJson.ts'
import type { ApiContextRef } from '../context.ts'
import { ApiError } from '../errors.ts'
import { address, integer, oneOf, optional } from '../fields.ts'
import { endpoint, json, type Resources } from '../resource.ts'
import { addressString, decimalString as decimal } from '../schema.ts'

const openShape = {
  partner_address: address(),
  token_address: address(),
  total_deposit: optional(integer({ description: 'our first deposit; 0 or absent: none' })),
  settle_timeout: optional(integer({ description: "blocks; the node's default settle timeout when absent" })),
  reveal_timeout: optional(integer({ description: "blocks; the node's default reveal timeout when absent" })),
}

const patchShape = {
  state: optional(oneOf(['opened', 'closed', 'settled'] as const)),
  total_deposit: optional(integer({ description: 'the new total deposit (not the increment); must exceed the current one' })),
  total_withdraw: optional(integer({ description: 'the new total withdrawn; must exceed the current one and fit the balance' })),
  reveal_timeout: optional(integer({ description: 'the new reveal timeout; settle_timeout must stay at least twice as long' })),
}

const PATCH_FIELDS = ['state', 'total_deposit', 'total_withdraw', 'reveal_timeout'] as const

/** A Channel object as a client receives it (openapi.json): amounts as decimal strings. */
export const channelSchema = v.object({
  channel_identifier: decimal,
  token_network_address: addressString,
  partner_address: addressString,
  token_address: addressString,
  balance: v.pipe(decimal, v.description('our deposit - our withdraw total - our transferred + partner transferred; locked amounts are not subtracted')),
  total_deposit: decimal,
  total_withdraw: v.pipe(decimal, v.description('withdrawn on-chain by us')),
  state: v.pipe(v.picklist(['opened', 'closed', 'settled']), v.description('closing shows as opened and settling as closed until the transaction is mined')),
  settle_timeout: decimal,
  reveal_timeout: decimal,
})
export type ChannelAnswer = v.InferOutput<typeof channelSchema>

const channelList = v.array(channelSchema)

/** Payment channels: list, open, close, top up, withdraw, change the reveal timeout. */
export function channelsRoutes(resources: Resources, ctx: ApiContextRef): void {
  const client = () => ctx().client

  resources.add('/channels', {
    GET: {
      doc: {
        summary: 'All unsettled channels of the node',
        description: 'Settled channels are not listed. A channel being closed shows as opened, one being settled as closed.',
        responses: { 200: 'array of Channel objects' },
        schema: channelList,
      },
      handler: (c) => json(c, unsettledChannels(client().state).map(channelJson)),
    },
    PUT: endpoint({
      doc: {
        summary: 'Opens a channel, with our first deposit if total_deposit is given',
        description:
          'Returns once the channel is open and synced. If a channel with the partner is already open, answers 200 with it; ' +
          'a total_deposit above its deposit then tops it up, an equal one or 0 changes nothing, a lower one is 409; its timeouts are left as they are.',
        body: openShape,
        responses: {
          201: 'the channel was opened: the Channel object',
          200: 'a channel with the partner was open already: the Channel object',
          400: 'malformed JSON, a missing or unknown field, an address that is not EIP-55 or the zero address, a value that is not an integer',
          402: 'total_deposit above our token balance (checked before opening), or not enough ETH for gas',
          409:
            'invalid input: a negative or too large number, reveal_timeout not above 0, settle_timeout below twice the reveal_timeout or outside the registry minimum/maximum, ' +
            'unregistered token, token without code, partner equal to our address, deprecated token network, a deposit above a deposit limit, ' +
            "a channel with the partner that is not open (closing, closed), a total_deposit below the open channel's deposit, a reverted transaction",
          503: 'the node is syncing or shutting down',
        },
        schema: channelSchema,
      },
      handler: async (c) => {
        const body = c.req.valid('json')
        const { channel, created } = await openChannel(client(), {
          token: body.token_address,
          partner: body.partner_address,
          ...(body.total_deposit !== undefined ? { totalDeposit: body.total_deposit } : {}),
          ...(body.settle_timeout !== undefined ? { settleTimeout: body.settle_timeout } : {}),
          ...(body.reveal_timeout !== undefined ? { revealTimeout: body.reveal_timeout } : {}),
        })
        return json(c, channelJson(channel), created ? 201 : 200)
      },
    }),
  })

  resources.add('/channels/:token_address', {
    GET: {
      doc: {
        summary: 'The unsettled channels of one token',
        description: 'An unknown or unregistered token has none: 200 with [].',
        responses: { 200: 'array of Channel objects', 404: 'token_address is not EIP-55' },
        schema: channelList,
      },
      handler: (c) => {
        const tokenNetwork = tokenNetworkOf(client().state, c.req.param('token_address') as Address)
        return json(c, tokenNetwork ? unsettledChannels(client().state, tokenNetwork).map(channelJson) : [])
      },
    },
  })

  resources.add('/channels/:token_address/:partner_address', {
    GET: {
      doc: {
        summary: 'Our channel with a partner for a token',
        description: 'The open channel, else the latest one while the node still keeps it (a settled channel is kept until its locks are unlocked).',
        responses: { 200: 'Channel object', 404: 'an address is not EIP-55, or there is no channel' },
        schema: channelSchema,
      },
      handler: (c) => {
        const token = c.req.param('token_address') as Address
        const partner = c.req.param('partner_address') as Address
        const channel = channelOf(client(), token, partner)
        if (!channel) throw new ApiError(404, `Channel with partner '${partner}' for token '${token}' could not be found.`)
        return json(c, channelJson(channel))
      },
    },
    PATCH: endpoint({
      doc: {
        summary: 'Closes the channel, raises our deposit or withdraw, or changes the reveal timeout: one field per request',
        description:
          'state "closed" returns once the close is mined and synced (state closed). total_deposit returns once the deposit is synced; ' +
          'a repeated total_deposit did not increase and is 409, as on the Raiden node. total_withdraw needs the partner to co-sign: it returns once ' +
          'the withdraw is synced from the chain, or 409 when the request expired unconfirmed. reveal_timeout is local to the node.',
        body: patchShape,
        bodyOneOf: true,
        responses: {
          200: 'the updated Channel object',
          400: 'malformed JSON, an unknown field, none of the fields given, or state other than closed (opened, settled, anything else)',
          402: 'total_deposit above our token balance, or not enough ETH for gas',
          404: 'an address is not EIP-55',
          409:
            'no such channel; two or more fields in one request; a negative or too large number; the channel is not open; total_deposit or total_withdraw ' +
            'does not increase; total_withdraw above our balance; a deposit limit exceeded; reveal_timeout not above 0 or above half the settle_timeout; ' +
            'the withdraw expired before the partner confirmed it; a reverted transaction',
          503: 'the node is syncing or shutting down',
        },
        schema: channelSchema,
      },
      handler: async (c) => {
        const token = c.req.param('token_address') as Address
        const partner = c.req.param('partner_address') as Address
        const body = c.req.valid('json')
        const given = PATCH_FIELDS.filter((f) => body[f] !== undefined)
        if (given.length === 0)
          throw new ApiError(400, "Nothing to do. Should either provide 'total_deposit', 'total_withdraw', 'reveal_timeout' or 'state' argument")
        if (given.length > 1) throw new ApiError(409, `Can not update a channel's ${given.join(' and ')} at the same time`)
        const target = { token, partner }
        if (body.state !== undefined) {
          // As on the Raiden node: the channel is looked up first, so a missing one is 409 whatever the state.
          if (!channelOf(client(), token, partner)) throw new ChannelNotFoundError(`Requested channel for token ${token} and partner ${partner} not found`)
          if (body.state !== 'closed') throw new ApiError(400, `Provided invalid channel state ${body.state}: only closed can be requested`)
          return json(c, channelJson(await closeChannel(client(), target)))
        }
        if (body.total_deposit !== undefined) return json(c, channelJson(await depositToChannel(client(), { ...target, totalDeposit: body.total_deposit })))
        if (body.total_withdraw !== undefined)
          return json(c, channelJson(await withdrawFromChannel(client(), { ...target, totalWithdraw: body.total_withdraw })))
        return json(c, channelJson(await setRevealTimeout(client(), { ...target, revealTimeout: body.reveal_timeout! })))
      },
    }),
  })
}
