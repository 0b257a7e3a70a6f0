/**
 * A node's notices (src/node/notices.ts) as log records, so that every host (`sluice serve`, the page's worker) logs
 * a node the same way. Levels: `error` for what needs a person (the node halted, a transaction or a received message
 * failed, a cheating partner, a stale state); `warn` for what the node retries or expects to happen now and then (the
 * chain or a service unreachable, a reorg, a refused message, a failed payment); `info` for the life of the node and
 * its channels and payments; `debug` for what another record already told.
 */
import { describeRisk } from '../chain/transactionRisk.ts'
import type { NodeNotice, ErrorSource, PathfindingNotice } from '../node/notices.ts'
import type { LogFields, LogLevel } from './format.ts'
import type { Logger } from './logger.ts'

export type NoticeRecord = { level: LogLevel; msg: string; fields: LogFields }

/** Every source has its level here, so a new one cannot be forgotten. */
const ERROR_LEVEL: Record<ErrorSource, LogLevel> = {
  node: 'error',
  receive: 'error',
  transaction: 'error',
  'chain sync': 'warn',
  'chain reorg': 'warn',
  'secret resolver': 'warn',
  'connection manager': 'warn',
  notifications: 'warn',
  monitoring: 'warn',
  backup: 'warn',
  pathfinding: 'warn',
}

/** The record for `notice`: the `event` field is its type, for filtering JSON lines; `msg` is for a person. */
export function noticeRecord(notice: NodeNotice): NoticeRecord {
  const event = notice.type
  switch (notice.type) {
    case 'error':
      return {
        level: ERROR_LEVEL[notice.where] ?? 'error',
        msg: notice.detail ? `${notice.where} (${notice.detail})` : notice.where,
        fields: { event, where: notice.where, detail: notice.detail, error: notice.error },
      }
    case 'status': {
      const { status, syncedBlock, blocksToSync, chain } = notice.status
      if (status !== 'stopped' && chain.state === 'unreachable') {
        const since = new Date(chain.since).toISOString()
        return { level: 'warn', msg: 'The chain is out of reach since {since}: {error}', fields: { event, since, error: chain.error.message, syncedBlock } }
      }
      if (status === 'ready' && chain.state === 'behind') {
        const since = new Date(chain.since).toISOString()
        return { level: 'warn', msg: 'Behind the chain since {since}: {blocksToSync} blocks to sync', fields: { event, since, syncedBlock, blocksToSync } }
      }
      // `Ready: synced to block N` is what scripts have waited for in `sluice serve`'s output since its first version.
      if (status === 'syncing') return { level: 'info', msg: 'Syncing: {blocksToSync} blocks to go', fields: { event, syncedBlock, blocksToSync } }
      return { level: 'info', msg: `${status === 'ready' ? 'Ready' : 'Stopped'}: synced to block {syncedBlock}`, fields: { event, syncedBlock } }
    }
    case 'transactionFailed': {
      // The `transaction` error reported just before says it at `error`; this adds which channel.
      const { type, ...transaction } = notice.transaction
      return {
        level: 'debug',
        msg: `${type} transaction failed`,
        fields: { event, transaction: type, ...pick(transaction, ['tokenNetwork', 'channelId', 'partner', 'secrethash']) },
      }
    }
    case 'paymentSentSuccess': {
      // Never the secret: a log is read by more people than the node's owner.
      const { token, tokenNetwork, target, amount, fee, paymentId, secrethash, route } = notice
      return { level: 'info', msg: 'payment sent', fields: { event, token, tokenNetwork, target, amount, fee, paymentId, secrethash, route } }
    }
    case 'paymentSentFailed': {
      const { token, tokenNetwork, target, amount, paymentId, secrethash, reason } = notice
      return { level: 'warn', msg: 'payment failed', fields: { event, token, tokenNetwork, target, amount, paymentId, secrethash, reason } }
    }
    case 'routeFailed': {
      const { tokenNetwork, target, paymentId, secrethash, route, reason } = notice
      // The payment's own line says how it ended; this one which of its routes failed on the way.
      return { level: 'info', msg: 'payment route failed', fields: { event, tokenNetwork, target, paymentId, secrethash, route, reason } }
    }
    case 'paymentReceivedSuccess': {
      const { token, tokenNetwork, initiator, amount, paymentId, secrethash } = notice
      return { level: 'info', msg: 'payment received', fields: { event, token, tokenNetwork, initiator, amount, paymentId, secrethash } }
    }
    case 'mediationSucceeded': {
      const { token, tokenNetwork, initiator, target, amount, fee, paymentId, secrethash } = notice
      return { level: 'info', msg: 'payment mediated', fields: { event, token, tokenNetwork, initiator, target, amount, fee, paymentId, secrethash } }
    }
    case 'messageRejected':
      return {
        // A channel not synced yet is the usual reason for one (its sender resends): worth a warning only otherwise.
        level: notice.unknownChannel ? 'info' : 'warn',
        msg: `${notice.messageType} rejected`,
        fields: { event, sender: notice.sender, messageType: notice.messageType, reason: notice.reason },
      }
    case 'channelStateChanged':
      return {
        level: 'info',
        msg: `channel ${notice.state}`,
        fields: { event, tokenNetwork: notice.tokenNetwork, channelId: notice.channelId, state: notice.state },
      }
    case 'withdrawExpired':
      return {
        level: 'warn',
        msg: 'withdraw expired',
        fields: { event, tokenNetwork: notice.tokenNetwork, channelId: notice.channelId, totalWithdraw: notice.totalWithdraw },
      }
    case 'channelDeposit':
      return {
        level: 'info',
        msg: 'channel deposit',
        fields: { event, tokenNetwork: notice.tokenNetwork, channelId: notice.channelId, participant: notice.participant, totalDeposit: notice.totalDeposit },
      }
    case 'channelWithdraw':
      return {
        level: 'info',
        msg: 'channel withdraw',
        fields: { event, tokenNetwork: notice.tokenNetwork, channelId: notice.channelId, participant: notice.participant, totalWithdraw: notice.totalWithdraw },
      }
    case 'actionRejected':
      // The API's caller hears it too (409): here for the record.
      return { level: 'info', msg: `${notice.action} rejected`, fields: { event, action: notice.action, reason: notice.reason } }
    case 'partnerEquivocated':
      // The two signed copies are evidence for GET /_debug, too long for a line.
      return {
        level: 'error',
        msg: 'partner signed two messages under one nonce',
        fields: { event, tokenNetwork: notice.tokenNetwork, channelId: notice.channelId, partner: notice.partner, nonce: notice.nonce },
      }
    case 'channelSynced':
      return {
        level: 'info',
        msg: 'channel synced',
        fields: {
          event,
          tokenNetwork: notice.tokenNetwork,
          channelId: notice.channelId,
          partner: notice.partner,
          ourNonce: notice.ourNonce,
          partnerNonce: notice.partnerNonce,
          adopted: notice.adopted,
        },
      }
    case 'rpcEndpoint': {
      const { endpoint, state, reason, downForMs } = notice
      // Once each time it changes, not once a call: the node goes on through the other endpoints meanwhile.
      if (state === 'up') return { level: 'info', msg: 'RPC endpoint {endpoint} answers again', fields: { event, endpoint, state, downForMs } }
      if (state === 'down') return { level: 'warn', msg: 'RPC endpoint {endpoint} down: {reason}', fields: { event, endpoint, state, reason } }
      return { level: 'error', msg: 'RPC endpoint {endpoint} refused: it {reason}', fields: { event, endpoint, state, reason } }
    }
    case 'pathfinding':
      return pathfindingRecord(notice)
    case 'peerRecordDropped':
      // A hint not taken: the node asks the relays for the peer as it always did.
      return {
        level: 'debug',
        msg: `presence record of ${notice.peer} from the ${notice.from} not used: ${notice.reason}`,
        fields: { event, peer: notice.peer, from: notice.from, reason: notice.reason },
      }
    case 'staleState': {
      const { type: _, ...stale } = notice
      return { level: 'error', msg: 'stored state older than what this node signed', fields: { event, ...stale } }
    }
    case 'transactionRisk': {
      // Money may be lost: an error line while it stands, with what would help; a line again once it is gone.
      if (!notice.risk) return { level: 'info', msg: 'transaction no longer at risk', fields: { event, id: notice.id } }
      return { level: 'error', msg: `transaction at risk: ${describeRisk(notice.risk)}`, fields: { event, id: notice.id, ...notice.risk } }
    }
  }
}

/** The pathfinding client's lines (docs/decisions/0073): which service, when it cannot be used, and the routes it chose. */
function pathfindingRecord(notice: PathfindingNotice): NoticeRecord {
  const event = 'pathfinding'
  switch (notice.what) {
    case 'chosen': {
      const { url, address, price, operator, registered } = notice
      return {
        level: 'info',
        msg: `pathfinding service ${url}: ${address}, ${price} per route request${registered ? ' (from the ServiceRegistry)' : ''}`,
        fields: { event, what: notice.what, url, address, price, operator },
      }
    }
    case 'unavailable':
      return {
        level: 'warn',
        msg: `pathfinding service unavailable, routing locally: ${notice.reason}`,
        fields: { event, what: notice.what, url: notice.url, reason: notice.reason },
      }
    case 'available':
      return { level: 'info', msg: `pathfinding service ${notice.url} answers again`, fields: { event, what: notice.what, url: notice.url } }
    case 'routedLocally':
      return {
        level: 'warn',
        msg: `payment of ${notice.amount} to ${notice.target} routed locally: ${notice.reason}`,
        fields: { event, what: notice.what, target: notice.target, amount: notice.amount, reason: notice.reason },
      }
    case 'routes': {
      const { url, target, amount, routes, iou } = notice
      const list = routes.map((r) => `${r.route.join(' > ')} (fee ${r.fee})`).join('; ')
      return {
        level: 'info',
        msg: `pathfinding service ${url} routes ${amount} to ${target} over ${list || 'no route'}`,
        fields: { event, what: notice.what, url, target, amount, routes, iou },
      }
    }
  }
}

/** Logs each of the node's notices at its level; returns the unsubscribe. */
export function logNodeNotices(node: { notices: { subscribe(listener: (notice: NodeNotice) => void): () => void } }, logger: Logger): () => void {
  return node.notices.subscribe((notice) => {
    const { level, msg, fields } = noticeRecord(notice)
    logger[level](msg, fields)
  })
}

function pick(from: object, keys: readonly string[]): LogFields {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (key in from) out[key] = (from as Record<string, unknown>)[key]
  return out
}
