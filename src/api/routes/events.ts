import { getAddress, type Address } from 'viem'
import { streamSSE, type SSEStreamingApi } from 'hono/streaming'
import { describeRisk } from '../../chain/transactionRisk.ts'
import type { NodeNotice, NodeStatus, PathfindingNotice } from '../../node/notices.ts'
import type { ChannelState } from '../../protocol/state/types.ts'
import type { NodeClient } from '../../node/actions/client.ts'
import { getChannel } from '../../protocol/state/access.ts'
import { paymentOfEvent } from '../../node/actions/payments.ts'
import type { ApiContext, ApiContextRef } from '../context.ts'
import { DEFAULT_EVENT_LOG_CAPACITY, type EventLog, type MissedReason } from '../eventLog.ts'
import { errorCode, toErrorData } from '../../errors.ts'
import { ApiError } from '../errors.ts'
import { integer, optional, text } from '../fields.ts'
import { stringify } from '../bigintJson.ts'
import { endpoint, type Resources } from '../resource.ts'
import * as v from 'valibot'
import { feeSchema, historyEntry, routeSchema } from '../paymentJson.ts'
import { addressString as address, decimalString as decimal, hex32String as hex32 } from '../schema.ts'
import { statusAnswer, statusAnswerOf } from './node.ts'

/** Seconds between heartbeat comments unless the client asks otherwise (proxies drop idle connections). */
export const DEFAULT_HEARTBEAT_SECONDS = 15
/** How often the stream looks at the node's status for sync progress, which comes without a notice. */
const STATUS_CHECK_MS = 1_000

const query = {
  heartbeat: optional(
    integer({ min: 1n, max: 300n, rangeStatus: 400, description: `seconds between heartbeat comments (default ${DEFAULT_HEARTBEAT_SECONDS})` }),
  ),
  last_event_id: optional(
    text({
      maxLength: 64,
      description: 'resume after this event id, as the Last-Event-ID header does, for a new EventSource (which cannot set headers); the header wins',
    }),
  ),
}

/** One server-sent event: its name and its JSON data (bigints as decimal strings). */
export type PushEvent = { event: string; data: Record<string, unknown> }

const isoTime = v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, with milliseconds'))
const hex = v.pipe(v.string(), v.regex(/^0x([0-9a-f]{2})*$/))
/** The identifiers of a channel (channelData below); the token and the partner are null once a settled channel is forgotten. */
const channelFields = {
  token_network_address: address,
  token_address: v.nullable(address),
  partner_address: v.nullable(address),
  channel_identifier: decimal,
}
const signedCopy = v.object({ type: v.string(), signed: hex, signature: hex })

/** One event as a client reads it: its name (`event:`), its id (`id:`) and its data (`data:`, JSON). */
const pushEvent = <const E extends string, const D extends v.GenericSchema>(event: E, data: D) => v.object({ event: v.literal(event), id: v.string(), data })
const channelEvent = <const S extends ChannelState>(state: S) => pushEvent(`channel_${state}`, v.object({ ...channelFields, state: v.literal(state) }))

/**
 * The events of GET /events (toPushEvent, statusEvent, and pushEvents' events_missed), in the manner of OpenAPI
 * 3.2's itemSchema for text/event-stream: the name tells the data's fields.
 */
export const pushEventSchema = v.pipe(
  v.variant('event', [
    pushEvent('status', statusAnswer),
    pushEvent('events_missed', v.object({ last_event_id: v.string(), reason: v.picklist(['too_old', 'unknown']), oldest_event_id: v.string() })),
    pushEvent(
      'payment_sent_success',
      v.object({
        event: v.literal('EventPaymentSentSuccess'),
        amount: decimal,
        target: address,
        identifier: decimal,
        log_time: isoTime,
        token_address: address,
        route: routeSchema,
        fee: feeSchema,
        secret_hash: hex32,
      }),
    ),
    pushEvent(
      'payment_sent_failed',
      v.object({
        event: v.literal('EventPaymentSentFailed'),
        target: address,
        log_time: isoTime,
        token_address: address,
        reason: v.string(),
        identifier: decimal,
        amount: decimal,
        secret_hash: hex32,
      }),
    ),
    pushEvent(
      'payment_received_success',
      v.object({
        event: v.literal('EventPaymentReceivedSuccess'),
        amount: decimal,
        initiator: address,
        identifier: decimal,
        log_time: isoTime,
        token_address: address,
        secret_hash: hex32,
      }),
    ),
    pushEvent(
      'payment_route_failed',
      v.object({
        token_network_address: address,
        token_address: v.nullable(address),
        target: address,
        identifier: decimal,
        route: routeSchema,
        reason: v.string(),
        secret_hash: hex32,
      }),
    ),
    pushEvent(
      'payment_mediated',
      v.object({
        token_network_address: address,
        token_address: v.nullable(address),
        amount: decimal,
        fee: feeSchema,
        initiator: address,
        target: address,
        identifier: decimal,
        secret_hash: hex32,
      }),
    ),
    channelEvent('opened'),
    channelEvent('closing'),
    channelEvent('closed'),
    channelEvent('settling'),
    channelEvent('settled'),
    pushEvent('channel_deposit', v.object({ ...channelFields, participant: address, total_deposit: decimal })),
    pushEvent('channel_withdraw', v.object({ ...channelFields, participant: address, total_withdraw: decimal })),
    pushEvent('channel_withdraw_expired', v.object({ ...channelFields, total_withdraw: decimal })),
    pushEvent('message_rejected', v.object({ sender: address, message_type: v.string(), reason: v.string() })),
    pushEvent('action_rejected', v.object({ action: v.string(), reason: v.string() })),
    pushEvent('partner_equivocated', v.object({ ...channelFields, partner_address: address, nonce: decimal, applied: signedCopy, second: signedCopy })),
    pushEvent(
      'channel_synced',
      v.object({
        ...channelFields,
        partner_address: address,
        our_nonce: decimal,
        partner_nonce: decimal,
        adopted: v.object({ ours: v.boolean(), partner: v.boolean() }),
      }),
    ),
    pushEvent('stale_state', v.object({ ...channelFields, nonce: decimal, our_nonce: decimal, source: v.picklist(['chain', 'message']), reason: v.string() })),
    pushEvent('node_error', v.object({ where: v.string(), message: v.string(), code: v.string() })),
    pushEvent(
      'transaction_at_risk',
      v.object({
        id: v.string(),
        description: v.string(),
        reason: v.picklist(['fee_cap', 'balance', 'not_mined', 'missed']),
        deadline: decimal,
        block_number: decimal,
        nonce: v.nullable(decimal),
        transaction_hash: v.nullable(hex32),
        /** fee_cap: the cap per gas (wei) that would do; balance: the balance (wei) that would. */
        needed: v.nullable(decimal),
        message: v.string(),
      }),
    ),
    pushEvent('transaction_risk_cleared', v.object({ id: v.string() })),
    pushEvent('pathfinding_service', v.object({ url: v.string(), address, price: decimal, operator: v.string(), from_service_registry: v.boolean() })),
    pushEvent('pathfinding_unavailable', v.object({ url: v.nullable(v.string()), reason: v.string() })),
    pushEvent('pathfinding_available', v.object({ url: v.string() })),
    pushEvent('payment_routed_locally', v.object({ target: address, amount: decimal, reason: v.string() })),
    pushEvent(
      'pathfinding_routes',
      v.object({
        url: v.string(),
        target: address,
        amount: decimal,
        routes: v.array(v.object({ route: routeSchema, estimated_fee: v.pipe(v.string(), v.regex(/^-?\d+$/)) })),
        iou_amount: v.nullable(decimal),
      }),
    ),
  ]),
  v.description('One event of the stream: its name (event:), its id (id:, `<run>-<n>`) and its data (data:, JSON), whose fields the name tells'),
)
export type PushEventAnswer = v.InferOutput<typeof pushEventSchema>

/** GET /events: the node's notices pushed as Server-Sent Events (docs/rest-api.md, Beyond Raiden's API). */
export function eventsRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/events', {
    GET: endpoint({
      doc: {
        summary: 'Push events (Server-Sent Events) of payments, channels and the node status',
        description: [
          'A text/event-stream that stays open. Each event has a name (`event:`), an `id:` of the form `<run>-<n>` (n grows by one with each event the node logs), and JSON `data` (amounts and identifiers as decimal strings).',
          'A new stream starts with a `status` event. Payment events (`payment_sent_success`, `payment_sent_failed`, `payment_received_success`) carry a payment history entry (the `event` field as in GET /payments) plus `secret_hash`.',
          "Channel events: `channel_opened`, `channel_closing` (our close transaction is on its way), `channel_closed`, `channel_settling`, `channel_settled`, `channel_deposit` and `channel_withdraw` (a participant's new on-chain total), `channel_withdraw_expired`.",
          "Others: `payment_mediated`, `payment_route_failed` (a route of our payment was given up: its first hop gave the lock back, the target was offered less than the amount, or the lock expired; the payment goes on over its next route or fails), `message_rejected`, `action_rejected`, `partner_equivocated` (a partner signed a second, different message under a nonce it used: both signed copies), `stale_state` (our own nonce came back with content we never signed: the node stops), `channel_synced` (a channel of a node restored from a backup copy is synced with its partner: the nonces it holds now, and which end the answer of the partner made newer), `node_error` (something failed in the background: sync, a transaction, the secret resolver), `transaction_at_risk` (a transaction with a deadline, an update of a partner's close or a secret registration, may miss it: the reason, the deadline and what would help) and `transaction_risk_cleared`, the pathfinding client's (docs/decisions/0073: `pathfinding_service` chosen, `pathfinding_unavailable` while it cannot be used and the node routes locally, `pathfinding_available`, `payment_routed_locally`, and `pathfinding_routes`, the routes and estimated fees a service answered for a payment), and `status` on every change of the node status or of the blocks left to sync.",
          `Reconnecting with the header \`Last-Event-ID\` (EventSource sends it by itself) replays every event after that id, none twice, then goes on live; a new EventSource gives the id as \`?last_event_id=\` instead. The node keeps its last ${DEFAULT_EVENT_LOG_CAPACITY.toLocaleString('en')} events in memory: for an id from before that, or from an earlier run of the node (it restarted), the stream starts with \`events_missed\` (\`last_event_id\`, \`reason\`: \`too_old\` or \`unknown\`, \`oldest_event_id\`), then the status; read GET /payments and GET /channels to catch up.`,
          `A comment line is sent every \`heartbeat\` seconds (default ${DEFAULT_HEARTBEAT_SECONDS}). The stream ends when the node stops or the API shuts down.`,
          'Answered while the node syncs (status events show the progress).',
        ].join('\n\n'),
        query,
        contentType: 'text/event-stream',
        responses: {
          200: 'the event stream',
          400: 'heartbeat is not an integer from 1 to 300, last_event_id is longer than 64 characters, or an unknown query parameter',
          503: 'the node is stopped or the API is shutting down',
        },
        schema: pushEventSchema,
      },
      handler: (c) => {
        const { heartbeat, last_event_id } = c.req.valid('query')
        if (ctx().client.status.status === 'stopped') throw new ApiError(503, 'the node is stopped')
        const heartbeatMs = Number(heartbeat ?? BigInt(DEFAULT_HEARTBEAT_SECONDS)) * 1000
        return streamSSE(c, (stream) => pushEvents(stream, ctx(), heartbeatMs, c.req.header('last-event-id') || last_event_id || undefined))
      },
    }),
  })
}

/**
 * Logs the node's notices as push events for as long as the API is open, whether or not a client listens: a
 * client that reconnects with Last-Event-ID gets what happened while it was away.
 */
export function logNodeEvents(log: EventLog, client: NodeClient, closing: AbortSignal): void {
  if (closing.aborted) return
  let shownStatus = ''
  const logStatus = (status: NodeStatus) => {
    const e = statusEvent(status)
    const shown = stringify(e.data)
    if (shown === shownStatus) return
    shownStatus = shown
    log.append(e.event, shown)
  }
  logStatus(client.status)
  const unsubscribe = client.subscribe((notice) => {
    if (notice.type === 'status') return logStatus(notice.status)
    const e = toPushEvent(notice, client)
    if (e) log.append(e.event, stringify(e.data))
  })
  // Sync progress (blocks to sync) changes without a notice.
  const statusCheck = setInterval(() => logStatus(client.status), STATUS_CHECK_MS)
  closing.addEventListener(
    'abort',
    () => {
      unsubscribe()
      clearInterval(statusCheck)
    },
    { once: true },
  )
}

/**
 * Writes the log to one client from where it resumes until it leaves, the node stops, or the API closes. A
 * new stream starts with the status; a resumed one with the events after its Last-Event-ID; one whose id is
 * unknown or too old with `events_missed`, then the status. Each stream reads the shared log at its own pace,
 * so a client that does not read costs the node nothing but its place in the log.
 */
async function pushEvents(stream: SSEStreamingApi, ctx: ApiContext, heartbeatMs: number, lastEventId: string | undefined): Promise<void> {
  const { client, events: log } = ctx
  let ended = false
  let heartbeatDue = false
  let wake: (() => void) | undefined
  const poke = () => wake?.()
  const end = () => {
    ended = true
    poke()
  }
  const unsubscribe = log.subscribe(poke)
  const heartbeat = setInterval(() => {
    heartbeatDue = true
    poke()
  }, heartbeatMs)
  stream.onAbort(end)
  ctx.closing.addEventListener('abort', end)
  // The first event also tells EventSource to reconnect after 2 s rather than its default 3 s.
  let retry: number | undefined = 2_000
  const write = (e: { id: string; event: string; data: string }) => {
    const written = stream.writeSSE({ ...e, ...(retry ? { retry } : {}) })
    retry = undefined
    return written
  }
  // The status and events_missed are not in the log: they carry the head's id, the point they are true at.
  const writeStatus = () => write({ id: log.headId, event: 'status', data: stringify(statusEvent(client.status).data) })
  const writeMissed = (reason: MissedReason, id: string) =>
    write({ id: log.headId, event: 'events_missed', data: stringify({ last_event_id: id, reason, oldest_event_id: log.idOf(log.first) }) })

  try {
    let cursor = log.next
    const resumed = lastEventId === undefined ? undefined : log.resume(lastEventId)
    if (resumed && 'from' in resumed) cursor = resumed.from
    else {
      if (resumed) await writeMissed(resumed.missed, lastEventId!)
      await writeStatus()
    }
    while (!ended && !ctx.closing.aborted && !stream.aborted) {
      if (cursor < log.next) {
        const e = log.at(cursor)
        if (e) {
          await write(e)
          cursor++
        } else {
          // This client fell further behind than the log keeps.
          await writeMissed('too_old', log.idOf(cursor - 1))
          cursor = log.first
        }
        continue
      }
      // Everything the node logged before it stopped has been written.
      if (client.status.status === 'stopped') break
      if (heartbeatDue) {
        heartbeatDue = false
        await stream.write(': heartbeat\n\n')
        continue
      }
      await new Promise<void>((resolve) => {
        wake = resolve
        // The node may have stopped without a further event (the stop is logged as a status change).
        if (client.status.status === 'stopped') resolve()
      })
      wake = undefined
    }
  } finally {
    unsubscribe()
    clearInterval(heartbeat)
    ctx.closing.removeEventListener('abort', end)
  }
}

/** The status as GET /status shows it. */
function statusEvent(status: NodeStatus): PushEvent {
  return { event: 'status', data: statusAnswerOf(status) }
}

const pushEventName = {
  EventPaymentSentSuccess: 'payment_sent_success',
  EventPaymentSentFailed: 'payment_sent_failed',
  EventPaymentReceivedSuccess: 'payment_received_success',
  EventPaymentMediated: 'payment_mediated',
} as const

/** A node notice as a push event; undefined for those that are not for clients (none today). */
export function toPushEvent(notice: NodeNotice, client: NodeClient): PushEvent | undefined {
  switch (notice.type) {
    case 'paymentSentSuccess':
    case 'paymentSentFailed':
    case 'paymentReceivedSuccess': {
      // A history entry as GET /payments gives it, with what a live client also wants to match it by.
      const record = paymentOfEvent(notice, Date.now())!
      return {
        event: pushEventName[record.event],
        data: { ...historyEntry(record), identifier: record.identifier, amount: record.amount, secret_hash: record.secrethash },
      }
    }
    case 'pathfinding':
      return pathfindingEvent(notice)
    case 'routeFailed':
      return {
        event: 'payment_route_failed',
        data: {
          token_network_address: notice.tokenNetwork,
          token_address: tokenOf(client, notice.tokenNetwork),
          target: getAddress(notice.target),
          identifier: notice.paymentId,
          route: notice.route.map((a) => getAddress(a)),
          reason: notice.reason,
          secret_hash: notice.secrethash,
        },
      }
    case 'mediationSucceeded':
      return {
        event: 'payment_mediated',
        data: {
          token_network_address: notice.tokenNetwork,
          token_address: tokenOf(client, notice.tokenNetwork),
          amount: notice.amount,
          fee: notice.fee,
          initiator: getAddress(notice.initiator),
          target: getAddress(notice.target),
          identifier: notice.paymentId,
          secret_hash: notice.secrethash,
        },
      }
    case 'channelStateChanged':
      return { event: `channel_${notice.state}`, data: { ...channelData(client, notice.tokenNetwork, notice.channelId), state: notice.state } }
    case 'channelDeposit':
      return {
        event: 'channel_deposit',
        data: { ...channelData(client, notice.tokenNetwork, notice.channelId), participant: notice.participant, total_deposit: notice.totalDeposit },
      }
    case 'channelWithdraw':
      return {
        event: 'channel_withdraw',
        data: { ...channelData(client, notice.tokenNetwork, notice.channelId), participant: notice.participant, total_withdraw: notice.totalWithdraw },
      }
    case 'withdrawExpired':
      return {
        event: 'channel_withdraw_expired',
        data: { ...channelData(client, notice.tokenNetwork, notice.channelId), total_withdraw: notice.totalWithdraw },
      }
    case 'messageRejected':
      return { event: 'message_rejected', data: { sender: notice.sender, message_type: notice.messageType, reason: notice.reason } }
    case 'actionRejected':
      return { event: 'action_rejected', data: { action: notice.action, reason: notice.reason } }
    case 'partnerEquivocated':
      return {
        event: 'partner_equivocated',
        data: {
          ...channelData(client, notice.tokenNetwork, notice.channelId),
          partner_address: notice.partner,
          nonce: notice.nonce,
          applied: { type: notice.applied.type, signed: notice.applied.signed, signature: notice.applied.signature },
          second: { type: notice.second.type, signed: notice.second.signed, signature: notice.second.signature },
        },
      }
    case 'channelSynced':
      return {
        event: 'channel_synced',
        data: {
          ...channelData(client, notice.tokenNetwork, notice.channelId),
          partner_address: notice.partner,
          our_nonce: notice.ourNonce,
          partner_nonce: notice.partnerNonce,
          adopted: notice.adopted,
        },
      }
    case 'staleState':
      return {
        event: 'stale_state',
        data: {
          ...channelData(client, notice.tokenNetwork, notice.channelId),
          nonce: notice.nonce,
          our_nonce: notice.ourNonce,
          source: notice.source,
          reason: notice.reason,
        },
      }
    case 'transactionRisk': {
      const { id, risk } = notice
      if (!risk) return { event: 'transaction_risk_cleared', data: { id } }
      return {
        event: 'transaction_at_risk',
        data: {
          id,
          description: risk.description,
          reason: risk.reason,
          deadline: risk.deadline,
          block_number: risk.head,
          // A decimal string on the wire, as every number of the API's events is.
          nonce: risk.nonce === undefined ? null : BigInt(risk.nonce),
          transaction_hash: risk.hash ?? null,
          needed: 'needed' in risk ? risk.needed : null,
          message: describeRisk(risk),
        },
      }
    }
    case 'error':
      return {
        event: 'node_error',
        data: { where: notice.detail ? `${notice.where} ${notice.detail}` : notice.where, message: errorMessage(notice.error), code: errorCode(notice.error) },
      }
    default:
      return undefined
  }
}

/** The pathfinding client's notices (docs/decisions/0073): the service chosen, unusable or back, a payment routed locally, a service's routes. */
function pathfindingEvent(notice: PathfindingNotice): PushEvent {
  switch (notice.what) {
    case 'chosen':
      return {
        event: 'pathfinding_service',
        data: { url: notice.url, address: notice.address, price: notice.price, operator: notice.operator, from_service_registry: notice.registered },
      }
    case 'unavailable':
      return { event: 'pathfinding_unavailable', data: { url: notice.url ?? null, reason: notice.reason } }
    case 'available':
      return { event: 'pathfinding_available', data: { url: notice.url } }
    case 'routedLocally':
      return { event: 'payment_routed_locally', data: { target: getAddress(notice.target), amount: notice.amount, reason: notice.reason } }
    case 'routes':
      return {
        event: 'pathfinding_routes',
        data: {
          url: notice.url,
          target: getAddress(notice.target),
          amount: notice.amount,
          routes: notice.routes.map((r) => ({ route: r.route.map((a) => getAddress(a)), estimated_fee: r.fee.toString() })),
          iou_amount: notice.iou ?? null,
        },
      }
  }
}

function tokenOf(client: NodeClient, tokenNetwork: Address): Address | null {
  return client.state.tokenNetworks[tokenNetwork]?.token ?? null
}

/** The identifiers of a channel; the partner is looked up in the state (null once a settled channel is forgotten). */
function channelData(client: NodeClient, tokenNetwork: Address, channelId: bigint) {
  const channel = getChannel(client.state, tokenNetwork, channelId)
  return {
    token_network_address: tokenNetwork,
    token_address: channel?.token ?? tokenOf(client, tokenNetwork),
    partner_address: channel?.partner ?? null,
    channel_identifier: channelId,
  }
}

function errorMessage(error: unknown): string {
  return toErrorData(error).message
}
