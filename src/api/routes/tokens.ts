import * as v from 'valibot'
import { getAddress, type Address } from 'viem'
import { unsettledChannels } from '../../node/actions/channels.ts'
import { NotFoundError } from '../../node/errors.ts'
import { knownTokens, registerToken } from '../../node/actions/tokens.ts'
import { distributable } from '../../protocol/channel/amounts.ts'
import { tokenNetworkOf } from '../../protocol/state/access.ts'
import { apiChannelState } from '../channelJson.ts'
import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'
import { addressString as address, decimalString as decimal } from '../schema.ts'

/** Tokens registered in the node's registry, their token networks and partners, and registering a token. */
export function tokensRoutes(resources: Resources, ctx: ApiContextRef): void {
  const client = () => ctx().client

  /** The token network of a path's token, or 404. */
  const networkOf = (token: Address): Address => {
    const tokenNetwork = tokenNetworkOf(client().state, token)
    if (!tokenNetwork) throw new NotFoundError(`No token network registered for token "${token}"`)
    return tokenNetwork
  }

  resources.add('/tokens', {
    GET: {
      doc: {
        summary: 'Every token registered in the registry that the node knows, with or without channels',
        responses: { 200: 'array of token addresses' },
        schema: v.array(address),
      },
      handler: (c) => json(c, knownTokens(client().state)),
    },
  })

  resources.add('/tokens/:token_address', {
    GET: {
      doc: {
        summary: 'The token network of a token',
        responses: { 200: 'the token network address, a JSON string', 404: 'token_address is not EIP-55, or the token has no token network' },
        schema: address,
      },
      handler: (c) => json(c, networkOf(c.req.param('token_address') as Address)),
    },
    PUT: {
      doc: {
        summary: 'Registers a token: creates its token network (without deposit limits) and returns once the node has synced it',
        description: 'Concurrent registrations of one token are handled one after the other: the first gets 201, the next 409.',
        responses: {
          201: 'Token registration result',
          402: 'not enough ETH for gas',
          403: "the registry's maximum number of token networks is reached",
          404: 'token_address is not EIP-55',
          409: 'the token is already registered, is the zero address, has no code or no totalSupply() (not ERC20), or the registering transaction failed',
          501: 'the node runs with environment production: registration is for test networks only',
          503: 'the node is syncing or shutting down',
        },
        schema: tokenRegistrationSchema,
      },
      handler: async (c) => {
        const tokenNetwork = await registerToken(client(), c.req.param('token_address') as Address, { environment: ctx().environment })
        return json(c, { token_network_address: tokenNetwork }, 201)
      },
    },
  })

  resources.add('/tokens/:token_address/partners', {
    GET: {
      doc: {
        summary: 'The partners of our unsettled channels of a token, each with the path of its channel resource',
        description: 'An unknown token is 404, as the API description says (the Raiden node answers []). The channel link is a plain path: no 302.',
        responses: { 200: 'array of Partner entries', 404: 'token_address is not EIP-55, or the token has no token network' },
        schema: v.array(partnerSchema),
      },
      handler: (c) => {
        const token = c.req.param('token_address') as Address
        // One entry per partner: a closed channel and a newer open one with the same partner share a link.
        const partners = [...new Set(unsettledChannels(client().state, networkOf(token)).map((channel) => getAddress(channel.partner)))]
        return json(
          c,
          partners.map((partner) => ({ partner_address: partner, channel: `${ctx().basePath}/channels/${token}/${partner}` })),
        )
      },
    },
  })

  resources.add('/tokens/:token_address/network', {
    GET: {
      doc: {
        summary: 'The channel network of a token as this node knows it (beyond Raiden): every channel it routes over',
        description: [
          'What the node finds routes in: every open or closed channel of the token network the chain told it about, ours and others.',
          'balance1 and balance2 are what each participant could pay the other now: for our channels, exactly (deposits, withdrawals, transfers and locks off-chain); for the others, what the chain shows (deposit minus withdrawal).',
          'Our closed channels also give closed_block and settle_block (the first block at which the channel can be settled); synced_block is the block the node has synced to.',
        ].join('\n\n'),
        responses: { 200: 'the token network', 404: 'token_address is not EIP-55, or the token has no token network' },
        schema: networkSchema,
      },
      handler: (c) => {
        const tokenNetwork = networkOf(c.req.param('token_address') as Address)
        const ours = new Map(unsettledChannels(client().state, tokenNetwork).map((channel) => [channel.id, channel]))
        const graph = client().state.tokenNetworks[tokenNetwork]?.graph ?? {}
        const channels = Object.entries(graph).map(([id, g]) => {
          const own = ours.get(BigInt(id))
          if (own) {
            return {
              channel_identifier: own.id,
              participant1: client().address,
              participant2: getAddress(own.partner),
              state: apiChannelState[own.state],
              balance1: distributable(own.our, own.partnerEnd),
              balance2: distributable(own.partnerEnd, own.our),
              settle_timeout: own.settleTimeout,
              ...(own.closedBlock !== undefined ? { closed_block: own.closedBlock, settle_block: own.closedBlock + own.settleTimeout } : {}),
            }
          }
          return {
            channel_identifier: BigInt(id),
            participant1: getAddress(g.participant1),
            participant2: getAddress(g.participant2),
            state: g.open ? 'opened' : 'closed',
            balance1: g.deposit1 - g.withdrawn1,
            balance2: g.deposit2 - g.withdrawn2,
            ...(g.settleTimeout !== undefined ? { settle_timeout: g.settleTimeout } : {}),
          }
        })
        return json(c, { token_network_address: tokenNetwork, our_address: client().address, synced_block: client().status.syncedBlock, channels })
      },
    },
  })
}

/** Token registration result. */
export const tokenRegistrationSchema = v.object({ token_network_address: address })
export type TokenRegistration = v.InferOutput<typeof tokenRegistrationSchema>

/** A Partner entry: the partner and the path of our channel with it. */
export const partnerSchema = v.object({ partner_address: address, channel: v.string() })
export type PartnerEntry = v.InferOutput<typeof partnerSchema>

/** GET /tokens/:token_address/network. */
export const networkSchema = v.object({
  token_network_address: address,
  our_address: address,
  synced_block: decimal,
  channels: v.array(
    v.object({
      channel_identifier: decimal,
      participant1: address,
      participant2: address,
      state: v.picklist(['opened', 'closed']),
      balance1: decimal,
      balance2: decimal,
      settle_timeout: v.optional(decimal),
      closed_block: v.optional(decimal),
      settle_block: v.optional(decimal),
    }),
  ),
})
export type TokenNetworkAnswer = v.InferOutput<typeof networkSchema>
