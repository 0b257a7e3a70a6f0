import type { Context } from 'hono'
import type { Address } from 'viem'
import { readChainEvents, readNodeEvents, type ChainEventScope } from '../../node/actions/debugEvents.ts'
import type { StoredChainEvent, StoredEvent } from '../../storage/storage.ts'
import type { ApiContextRef } from '../context.ts'
import { maxUint64 } from 'viem'
import * as v from 'valibot'
import { integer, optional, type Parsed } from '../fields.ts'
import { endpoint, json, type Resources, type RouteDoc } from '../resource.ts'
import { addressString as address, hex32String as hex32 } from '../schema.ts'

const blockQuery = {
  from_block: optional(integer({ max: maxUint64, description: 'first block (inclusive), 0..2^64-1' })),
  to_block: optional(integer({ max: maxUint64, description: 'last block (inclusive), 0..2^64-1' })),
}

const pageQuery = {
  limit: optional(integer({ rangeStatus: 400, description: 'at most this many events' })),
  offset: optional(integer({ rangeStatus: 400, description: 'skip this many events first' })),
}

const index = v.pipe(v.number(), v.integer(), v.minValue(0))

/** A chain event as a client receives it (openapi.json). */
export const chainEventSchema = v.object({
  // Open: each contract event has its own arguments (the contracts' ABIs say which); integers are decimal strings.
  args: v.pipe(v.record(v.string(), v.unknown()), v.description("the event's arguments by their ABI names; integers as decimal strings")),
  event: v.pipe(v.string(), v.description('the ABI name of the event (ChannelOpened, ChannelNewDeposit, ...)')),
  logIndex: index,
  transactionIndex: v.nullable(index),
  transactionHash: hex32,
  address,
  blockHash: v.nullable(hex32),
  block_number: index,
})
export type ChainEventAnswer = v.InferOutput<typeof chainEventSchema>

/**
 * A node event as a client receives it: `event` and `log_time` always, then the event's own fields in snake case,
 * left open here: every kind of node event has its own (src/protocol/state/effects.ts, NodeEvent), and the list
 * grows with the protocol; GET /payments and GET /events describe the payment and channel events field by field.
 */
export const nodeEventSchema = v.objectWithRest(
  {
    event: v.pipe(v.string(), v.regex(/^Event[A-Z]/), v.description('EventPaymentSentSuccess, EventChannelStateChanged, ...')),
    log_time: v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, with milliseconds')),
  },
  v.unknown(),
)
export type NodeEventAnswer = v.InferOutput<typeof nodeEventSchema>

/** A chain event as the earlier revisions' debug endpoints gave it (docs/rest-api.md, Debug endpoints: blockchain and node events). */
export function chainEventEntry(e: StoredChainEvent): Record<string, unknown> {
  return {
    args: e.args,
    event: e.name,
    logIndex: e.logIndex,
    transactionIndex: e.transactionIndex ?? null,
    transactionHash: e.transactionHash,
    address: e.address,
    blockHash: e.blockHash ?? null,
    // Stored block numbers are safe integers; the earlier revisions gave them as JSON integers.
    block_number: Number(e.blockNumber),
  }
}

/** Raiden-style names: `tokenNetwork` was `token_network_identifier`, `paymentId` the `identifier`. */
const fieldNames: Record<string, string> = {
  tokenNetwork: 'token_network_identifier',
  paymentId: 'identifier',
  token: 'token_address',
  channelId: 'channel_identifier',
}
const snake = (name: string) => fieldNames[name] ?? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
const snakeKeys = (counts: Readonly<Record<string, number>>) => Object.fromEntries(Object.entries(counts).map(([k, n]) => [snake(k), n]))

/** A node event: `event` (EventPaymentSentSuccess...), `log_time`, and the event's own fields in snake case. */
export function nodeEventEntry(e: StoredEvent, registry: Address): Record<string, unknown> {
  const { type, ...fields } = e.event
  const out: Record<string, unknown> = { event: `Event${type[0]!.toUpperCase()}${type.slice(1)}`, log_time: new Date(e.time).toISOString() }
  for (const [name, value] of Object.entries(fields)) out[snake(name)] = value
  if ('tokenNetwork' in fields) out.payment_network_identifier = registry
  return out
}

const count = (description: string) => v.pipe(index, v.description(description))

/** What GET /_debug/transport answers (openapi.json): delivery's counts, field by field, and the transport's. */
export const messageStatsSchema = v.object({
  delivery: v.object({
    pending: count('messages waiting for their acknowledgement now'),
    send_calls: count('batches handed to the transport'),
    lines_sent: count('messages handed to the transport'),
    retries: count('sends of a message after its first'),
    received: count('valid messages received, duplicates included'),
    invalid: count('lines that did not decode, whose signature did not verify, or signed by this node: dropped'),
    wrong_signer: count('lines signed by another than the peer that sent them: dropped (a peer speaks for itself only)'),
    duplicates: count('messages received again (resends, replays): answered again, not handed up twice'),
    redelivered: count('duplicates handed up again because the node had not answered them yet'),
    acknowledged: count('messages of ours acknowledged'),
  }),
  transport: v.pipe(
    v.record(v.string(), index),
    v.description(
      "the transport's own counts; libp2p: known_peers, streams_opened, inbound_streams, frames_sent, frames_received, invalid_frames (not a JSON array of lines: the stream closed), oversized_frames (longer than 4 MiB: refused unread, the stream closed), rate_limited (frames held back because their peer was over its rate: nothing lost), announcements_received (presence records and announcements heard), direct_peers (peers with a direct WebSockets connection open now, docs/decisions/0066), direct_connections (WebRTC connections open now, docs/decisions/0065)",
    ),
  ),
})
export type MessageStatsAnswer = v.InferOutput<typeof messageStatsSchema>

/** The debug endpoints of earlier revisions: raw chain events and the node's own events; and what the messaging counted. */
export function debugRoutes(resources: Resources, ctx: ApiContextRef): void {
  const chainDoc = (summary: string, responses: RouteDoc['responses']): RouteDoc & { query: typeof blockQuery } => ({
    summary,
    description: 'Oldest first (block, then log index). from_block and to_block are inclusive bounds.',
    query: blockQuery,
    responses: {
      200: 'array of blockchain events',
      400: 'from_block or to_block is not an integer, or an unknown query parameter',
      409: 'from_block or to_block is outside 0..2^64-1',
      ...responses,
    },
    schema: v.array(chainEventSchema),
  })
  const chainEvents = async (c: Context, { from_block, to_block }: Parsed<typeof blockQuery>, scope: ChainEventScope) => {
    const events = await readChainEvents(ctx().client, scope, {
      ...(from_block !== undefined ? { fromBlock: from_block } : {}),
      ...(to_block !== undefined ? { toBlock: to_block } : {}),
    })
    return json(c, events.map(chainEventEntry))
  }
  const token = (c: Context) => c.req.param('token_address') as Address
  const notFound = 'token_address is not EIP-55, or no token network is registered for it'

  resources.add('/_debug/blockchain_events/network', {
    GET: endpoint({
      doc: chainDoc('TokenNetworkCreated events of the token network registry', {}),
      handler: (c) => chainEvents(c, c.req.valid('query'), { of: 'network' }),
    }),
  })
  resources.add('/_debug/blockchain_events/tokens/:token_address', {
    GET: endpoint({
      doc: chainDoc("Every event of a token's token network contract", { 404: notFound }),
      handler: (c) => chainEvents(c, c.req.valid('query'), { of: 'tokenNetwork', token: token(c) }),
    }),
  })
  resources.add('/_debug/blockchain_events/payment_networks/:token_address/channels', {
    GET: endpoint({
      doc: chainDoc("Events of every channel of a token's token network", { 404: notFound }),
      handler: (c) => chainEvents(c, c.req.valid('query'), { of: 'channels', token: token(c) }),
    }),
  })
  resources.add('/_debug/blockchain_events/payment_networks/:token_address/channels/:partner_address', {
    GET: endpoint({
      doc: chainDoc('Events of our channel with a partner', { 404: `${notFound}; or partner_address is not EIP-55, or we have no channel with the partner` }),
      handler: (c) => chainEvents(c, c.req.valid('query'), { of: 'channels', token: token(c), partner: c.req.param('partner_address') as Address }),
    }),
  })
  resources.add('/_debug/transport', {
    GET: endpoint({
      doc: {
        summary: 'What the messaging counted since the node started: sent, received, and what was dropped or held back and why',
        description:
          "delivery: the messages; transport: the adapter's frames and streams (libp2p), with what its limits refused or held back (docs/decisions/0064). Every count is since start.",
        responses: { 200: 'the counts' },
        schema: messageStatsSchema,
      },
      handler: (c) => {
        const { delivery, transport } = ctx().client.messageStats()
        return json(c, { delivery: snakeKeys(delivery), transport: snakeKeys(transport) })
      },
    }),
  })
  resources.add('/_debug/node_events', {
    GET: endpoint({
      doc: {
        summary: "The node's own events, oldest first",
        description:
          'Each has event (EventPaymentSentSuccess, EventPaymentSentFailed, EventPaymentReceivedSuccess, EventMediationSucceeded, EventChannelStateChanged...), log_time (ISO 8601, UTC, milliseconds) and its fields in snake case. Messages sent (SendLockedTransfer, SendSecretReveal) are not node events here.',
        query: pageQuery,
        responses: { 200: 'array of node events', 400: 'limit or offset is not a non-negative integer, or an unknown query parameter' },
        schema: v.array(nodeEventSchema),
      },
      handler: async (c) => {
        const { limit, offset } = c.req.valid('query')
        const clamp = (n: bigint) => Number(n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : n)
        const events = await readNodeEvents(ctx().client, {
          ...(limit !== undefined ? { limit: clamp(limit) } : {}),
          ...(offset !== undefined ? { offset: clamp(offset) } : {}),
        })
        const registry = ctx().client.config.deployment.contracts.TokenNetworkRegistry.address
        return json(
          c,
          events.map((e) => nodeEventEntry(e, registry)),
        )
      },
    }),
  })
}
