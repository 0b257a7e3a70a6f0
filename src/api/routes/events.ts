import type { Address } from 'viem'
import { streamSSE, type SSEStreamingApi } from 'hono/streaming'
import type { NodeNotice, NodeStatus } from '../../node/notices.ts'
import type { SluiceNode } from '../../node/sluiceNode.ts'
import { getChannel } from '../../protocol/state/access.ts'
import { paymentRecord } from '../../node/records.ts'
import type { ApiContext } from '../context.ts'
import { errorCode, toErrorData } from '../../errors.ts'
import { ApiError } from '../errors.ts'
import { integer, optional, readQuery } from '../input.ts'
import { historyEntry } from '../paymentJson.ts'
import { stringify, type Resources } from '../resource.ts'

/** Seconds between heartbeat comments unless the client asks otherwise (proxies drop idle connections). */
export const DEFAULT_HEARTBEAT_SECONDS = 15
/** How often the stream looks at the node's status for sync progress, which comes without a notice. */
const STATUS_CHECK_MS = 1_000
/**
 * Messages waiting for a client that does not read. Past this the stream ends (the client reconnects) instead
 * of buffering without bound in the node.
 */
const MAX_PENDING = 1_000

const query = {
  heartbeat: optional(
    integer({ min: 1n, max: 300n, rangeStatus: 400, description: `seconds between heartbeat comments (default ${DEFAULT_HEARTBEAT_SECONDS})` }),
  ),
}

/** One server-sent event: its name and its JSON data (bigints as decimal strings). */
export type PushEvent = { event: string; data: Record<string, unknown> }

const addressSchema = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' }
const decimal = { type: 'string', pattern: '^(0|[1-9][0-9]*)$' }
const channelFields = {
  token_network_address: addressSchema,
  token_address: addressSchema,
  partner_address: addressSchema,
  channel_identifier: decimal,
}

/** GET /events: the node's notices pushed as Server-Sent Events (docs/rest-api.md, Beyond Raiden's API). */
export function eventsRoutes(resources: Resources, ctx: ApiContext): void {
  resources.add('/events', {
    GET: {
      doc: {
        summary: 'Push events (Server-Sent Events) of payments, channels and the node status',
        description: [
          'A text/event-stream that stays open. Each event has a name (`event:`), an `id:` that grows by one within the stream, and JSON `data` (amounts and identifiers as decimal strings).',
          'It starts with a `status` event. Payment events (`payment_sent_success`, `payment_sent_failed`, `payment_received_success`) carry a payment history entry (the `event` field as in GET /payments) plus `secret_hash`.',
          "Channel events: `channel_opened`, `channel_closing` (our close transaction is on its way), `channel_closed`, `channel_settling`, `channel_settled`, `channel_deposit` and `channel_withdraw` (a participant's new on-chain total), `channel_withdraw_expired`.",
          'Others: `payment_mediated`, `message_rejected`, `action_rejected`, `node_error` (something failed in the background: sync, a transaction, the secret resolver), and `status` on every change of the node status or of the blocks left to sync.',
          `A comment line is sent every \`heartbeat\` seconds (default ${DEFAULT_HEARTBEAT_SECONDS}). The stream ends when the node stops or the API shuts down. Missed events are not replayed on reconnect: read GET /payments and GET /channels after reconnecting.`,
          'Answered while the node syncs (status events show the progress).',
        ].join('\n\n'),
        query,
        contentType: 'text/event-stream',
        responses: {
          200: 'the event stream',
          400: 'heartbeat is not an integer from 1 to 300, or an unknown query parameter',
          503: 'the node is stopped or the API is shutting down',
        },
        schema: {
          type: 'object',
          description: 'The JSON data of one event; which fields are present depends on the event name',
          properties: {
            ...channelFields,
            status: { enum: ['ready', 'syncing', 'unavailable'] },
            blocks_to_sync: decimal,
            event: { enum: ['EventPaymentSentSuccess', 'EventPaymentSentFailed', 'EventPaymentReceivedSuccess'] },
            amount: decimal,
            identifier: decimal,
            target: addressSchema,
            initiator: addressSchema,
            secret_hash: { type: 'string' },
            reason: { type: 'string' },
            log_time: { type: 'string' },
            state: { type: 'string' },
            participant: addressSchema,
            total_deposit: decimal,
            total_withdraw: decimal,
          },
        },
      },
      handler: (c) => {
        const { heartbeat } = readQuery(c.req.url, query)
        if (ctx.node.status.status === 'stopped') throw new ApiError(503, 'the node is stopped')
        const heartbeatMs = Number(heartbeat ?? BigInt(DEFAULT_HEARTBEAT_SECONDS)) * 1000
        return streamSSE(c, (stream) => pushEvents(stream, ctx, heartbeatMs))
      },
    },
  })
}

type Outgoing = { event: string; data: string; id: string; retry?: number } | { comment: string }

/** Writes events to one client until it leaves, the node stops, or the API closes; then unsubscribes everything. */
async function pushEvents(stream: SSEStreamingApi, ctx: ApiContext, heartbeatMs: number): Promise<void> {
  const { node } = ctx
  const pending: Outgoing[] = []
  let wake: (() => void) | undefined
  let ended = false
  let lastId = 0
  let cleanup = () => {}
  // Ending unsubscribes at once, even if a write is still waiting for a client that does not read.
  const end = () => {
    ended = true
    cleanup()
    wake?.()
  }
  const push = (item: Outgoing) => {
    if (ended) return
    if (pending.length >= MAX_PENDING) return end()
    pending.push(item)
    wake?.()
  }
  const send = (e: PushEvent, retry?: number) => push({ event: e.event, data: stringify(e.data), id: String(++lastId), ...(retry ? { retry } : {}) })

  let shownStatus = ''
  const sendStatus = (status: NodeStatus) => {
    const e = statusEvent(status)
    const shown = stringify(e.data)
    if (shown === shownStatus) return
    shownStatus = shown
    // The first event also tells EventSource to reconnect after 2 s rather than its default 3 s.
    send(e, lastId === 0 ? 2_000 : undefined)
  }

  sendStatus(node.status)
  const unsubscribe = node.notices.subscribe((notice) => {
    if (notice.type === 'status') {
      sendStatus(notice.status)
      if (notice.status.status === 'stopped') end()
      return
    }
    const e = toPushEvent(notice, node)
    if (e) send(e)
  })
  const heartbeat = setInterval(() => push({ comment: 'heartbeat' }), heartbeatMs)
  const statusCheck = setInterval(() => sendStatus(node.status), STATUS_CHECK_MS)
  cleanup = () => {
    unsubscribe()
    clearInterval(heartbeat)
    clearInterval(statusCheck)
    ctx.closing.removeEventListener('abort', end)
  }
  stream.onAbort(end)
  ctx.closing.addEventListener('abort', end)
  if (ctx.closing.aborted || node.status.status === 'stopped') end()
  try {
    while (!ended || pending.length > 0) {
      const item = pending.shift()
      if (!item) {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
        continue
      }
      if (stream.aborted) break
      if ('comment' in item) await stream.write(`: ${item.comment}\n\n`)
      else await stream.writeSSE(item)
    }
  } finally {
    end()
  }
}

/** The status as GET /status shows it. */
function statusEvent(status: NodeStatus): PushEvent {
  if (status.status === 'ready') return { event: 'status', data: { status: 'ready' } }
  if (status.status === 'syncing') return { event: 'status', data: { status: 'syncing', blocks_to_sync: status.blocksToSync } }
  return { event: 'status', data: { status: 'unavailable' } }
}

const pushEventName = {
  EventPaymentSentSuccess: 'payment_sent_success',
  EventPaymentSentFailed: 'payment_sent_failed',
  EventPaymentReceivedSuccess: 'payment_received_success',
} as const

/** A node notice as a push event; undefined for those that are not for clients (none today). */
export function toPushEvent(notice: NodeNotice, node: SluiceNode): PushEvent | undefined {
  switch (notice.type) {
    case 'paymentSentSuccess':
    case 'paymentSentFailed':
    case 'paymentReceivedSuccess': {
      // A history entry as GET /payments gives it, with what a live client also wants to match it by.
      const record = paymentRecord(notice, 0, Date.now())!
      return {
        event: pushEventName[record.event],
        data: { ...historyEntry(record), identifier: record.identifier, amount: record.amount, secret_hash: record.secrethash },
      }
    }
    case 'mediationSucceeded':
      return {
        event: 'payment_mediated',
        data: {
          token_network_address: notice.tokenNetwork,
          token_address: tokenOf(node, notice.tokenNetwork),
          amount: notice.amount,
          secret_hash: notice.secrethash,
        },
      }
    case 'channelStateChanged':
      return { event: `channel_${notice.state}`, data: { ...channelData(node, notice.tokenNetwork, notice.channelId), state: notice.state } }
    case 'channelDeposit':
      return {
        event: 'channel_deposit',
        data: { ...channelData(node, notice.tokenNetwork, notice.channelId), participant: notice.participant, total_deposit: notice.totalDeposit },
      }
    case 'channelWithdraw':
      return {
        event: 'channel_withdraw',
        data: { ...channelData(node, notice.tokenNetwork, notice.channelId), participant: notice.participant, total_withdraw: notice.totalWithdraw },
      }
    case 'withdrawExpired':
      return { event: 'channel_withdraw_expired', data: { ...channelData(node, notice.tokenNetwork, notice.channelId), total_withdraw: notice.totalWithdraw } }
    case 'messageRejected':
      return { event: 'message_rejected', data: { sender: notice.sender, message_type: notice.messageType, reason: notice.reason } }
    case 'actionRejected':
      return { event: 'action_rejected', data: { action: notice.action, reason: notice.reason } }
    case 'error':
      return {
        event: 'node_error',
        data: { where: notice.detail ? `${notice.where} ${notice.detail}` : notice.where, message: errorMessage(notice.error), code: errorCode(notice.error) },
      }
    default:
      return undefined
  }
}

function tokenOf(node: SluiceNode, tokenNetwork: Address): Address | null {
  return node.state.tokenNetworks[tokenNetwork]?.token ?? null
}

/** The identifiers of a channel; the partner is looked up in the state (null once a settled channel is forgotten). */
function channelData(node: SluiceNode, tokenNetwork: Address, channelId: bigint) {
  const channel = getChannel(node.state, tokenNetwork, channelId)
  return {
    token_network_address: tokenNetwork,
    token_address: channel?.token ?? tokenOf(node, tokenNetwork),
    partner_address: channel?.partner ?? null,
    channel_identifier: channelId,
  }
}

function errorMessage(error: unknown): string {
  return toErrorData(error).message
}
