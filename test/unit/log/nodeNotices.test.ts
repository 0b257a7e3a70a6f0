import type { Address, Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { SluiceError } from '../../../src/errors.ts'
import { createLogger, type LogLevel } from '../../../src/log/logger.ts'
import { logNodeNotices, noticeRecord } from '../../../src/log/nodeNotices.ts'
import { EventBus } from '../../../src/node/runtime/eventBus.ts'
import type { ErrorSource, NodeNotice } from '../../../src/node/notices.ts'

/** A node's notices as log records (src/log/nodeNotices.ts): what every host writes, at which level. */

const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
const TN = address(0xaa)

class ChainRpcError extends SluiceError {
  override name = 'ChainRpcError' as const
  override readonly code = 'CHAIN_RPC' as const
}

function capture(level: LogLevel) {
  const lines: { line: string; level: LogLevel }[] = []
  const logger = createLogger({ level, format: 'json', write: (line, at) => lines.push({ line, level: at }), now: () => 0 })
  return { logger, lines, records: () => lines.map(({ line }) => JSON.parse(line)) }
}

describe('noticeRecord', () => {
  test('errors: what the node retries is a warning, what needs a person an error; where, detail and the error with its code', () => {
    const error = new ChainRpcError('the chain did not answer')
    const at = (where: ErrorSource, detail?: string) => noticeRecord({ type: 'error', where, error, ...(detail ? { detail } : {}) })
    expect(at('chain sync')).toEqual({ level: 'warn', msg: 'chain sync', fields: { event: 'error', where: 'chain sync', detail: undefined, error } })
    expect(at('transaction', 'close')).toEqual({
      level: 'error',
      msg: 'transaction (close)',
      fields: { event: 'error', where: 'transaction', detail: 'close', error },
    })
    for (const where of ['chain reorg', 'secret resolver', 'connection manager', 'notifications', 'monitoring', 'backup'] as const)
      expect(at(where).level).toBe('warn')
    for (const where of ['node', 'receive', 'transaction'] as const) expect(at(where).level).toBe('error')
  })

  test('status: ready and stopped at info with the block synced', () => {
    expect(
      noticeRecord({ type: 'status', status: { status: 'ready', blocksToSync: 0n, syncedBlock: 120n, headBlock: 120n, chain: { state: 'following' } } }),
    ).toEqual({
      level: 'info',
      msg: 'Ready: synced to block {syncedBlock}',
      fields: { event: 'status', syncedBlock: 120n },
    })
    expect(
      noticeRecord({ type: 'status', status: { status: 'stopped', blocksToSync: 0n, syncedBlock: 121n, headBlock: 121n, chain: { state: 'following' } } }).msg,
    ).toBe('Stopped: synced to block {syncedBlock}')
    expect(
      noticeRecord({ type: 'status', status: { status: 'syncing', blocksToSync: 9n, syncedBlock: 3n, headBlock: 12n, chain: { state: 'behind', since: 0 } } })
        .fields,
    ).toEqual({
      event: 'status',
      syncedBlock: 3n,
      blocksToSync: 9n,
    })
  })

  test('status after ready: behind the chain, or the chain out of reach, are warnings that say since when', () => {
    const since = Date.UTC(2026, 0, 2, 3, 4, 5)
    expect(
      noticeRecord({ type: 'status', status: { status: 'ready', blocksToSync: 14n, syncedBlock: 100n, headBlock: 114n, chain: { state: 'behind', since } } }),
    ).toEqual({
      level: 'warn',
      msg: 'Behind the chain since {since}: {blocksToSync} blocks to sync',
      fields: { event: 'status', since: '2026-01-02T03:04:05.000Z', syncedBlock: 100n, blocksToSync: 14n },
    })
    const error = { code: 'CHAIN_RPC', message: 'eth_blockNumber failed: fetch failed' }
    const unreachable = { state: 'unreachable', since, error } as const
    for (const status of ['syncing', 'ready'] as const)
      expect(noticeRecord({ type: 'status', status: { status, blocksToSync: 3n, syncedBlock: 100n, headBlock: 103n, chain: unreachable } })).toEqual({
        level: 'warn',
        msg: 'The chain is out of reach since {since}: {error}',
        fields: { event: 'status', since: '2026-01-02T03:04:05.000Z', error: error.message, syncedBlock: 100n },
      })
  })

  test('payments at info (a failed one a warning), with amounts and identifiers, never the secret', () => {
    const secret = hash(0x5ec7e7)
    const sent = noticeRecord({
      type: 'paymentSentSuccess',
      token: address(1),
      tokenNetwork: TN,
      target: address(2),
      amount: 10n ** 18n,
      paymentId: 42n,
      secret,
      secrethash: hash(7),
      route: [address(2)],
      fee: 3n,
    })
    expect(sent.level).toBe('info')
    expect(sent.msg).toBe('payment sent')
    expect(sent.fields).toMatchObject({ event: 'paymentSentSuccess', target: address(2), amount: 10n ** 18n, fee: 3n, paymentId: 42n })
    const { logger, lines } = capture('debug')
    logger[sent.level](sent.msg, sent.fields)
    expect(lines[0]!.line).not.toContain(secret.slice(2))
    expect(JSON.parse(lines[0]!.line)).toMatchObject({ amount: '1000000000000000000', paymentId: '42' })

    const failed = noticeRecord({
      type: 'paymentSentFailed',
      token: address(1),
      tokenNetwork: TN,
      target: address(2),
      amount: 5n,
      paymentId: 43n,
      secrethash: hash(8),
      reason: 'no route',
    })
    expect(failed).toMatchObject({ level: 'warn', msg: 'payment failed', fields: { reason: 'no route', paymentId: 43n } })
    expect(
      noticeRecord({
        type: 'paymentReceivedSuccess',
        token: address(1),
        tokenNetwork: TN,
        initiator: address(3),
        amount: 1n,
        paymentId: 1n,
        secrethash: hash(9),
      }),
    ).toMatchObject({ level: 'info', msg: 'payment received', fields: { initiator: address(3) } })
  })

  test('a failed transaction at debug with its channel (the error report before it is the error); a cheating partner an error without the copies', () => {
    const failed = noticeRecord({
      type: 'transactionFailed',
      transaction: { type: 'close', tokenNetwork: TN, channelId: 3n, partner: address(4), balanceProof: null },
      error: new Error('reverted'),
    })
    expect(failed).toEqual({
      level: 'debug',
      msg: 'close transaction failed',
      fields: { event: 'transactionFailed', transaction: 'close', tokenNetwork: TN, channelId: 3n, partner: address(4) },
    })
    const copy = { message: {}, signature: hash(1) } as never
    const cheat = noticeRecord({ type: 'partnerEquivocated', tokenNetwork: TN, channelId: 3n, partner: address(4), nonce: 9n, applied: copy, second: copy })
    expect(cheat).toEqual({
      level: 'error',
      msg: 'partner signed two messages under one nonce',
      fields: { event: 'partnerEquivocated', tokenNetwork: TN, channelId: 3n, partner: address(4), nonce: 9n },
    })
  })

  test('channels at info; a refused message or an expired withdraw a warning; a stale state an error', () => {
    expect(noticeRecord({ type: 'channelStateChanged', tokenNetwork: TN, channelId: 3n, state: 'closed' })).toMatchObject({
      level: 'info',
      msg: 'channel closed',
    })
    expect(noticeRecord({ type: 'channelDeposit', tokenNetwork: TN, channelId: 3n, participant: address(4), totalDeposit: 7n }).level).toBe('info')
    expect(noticeRecord({ type: 'messageRejected', sender: address(4), messageType: 'LockedTransfer', reason: 'bad nonce' })).toMatchObject({
      level: 'warn',
      msg: 'LockedTransfer rejected',
    })
    // A channel the node has not synced yet (its partner saw the opening first): the sender resends, no warning.
    expect(
      noticeRecord({ type: 'messageRejected', sender: address(4), messageType: 'LockedTransfer', reason: 'unknown channel 1', unknownChannel: true }).level,
    ).toBe('info')
    expect(noticeRecord({ type: 'withdrawExpired', tokenNetwork: TN, channelId: 3n, totalWithdraw: 1n }).level).toBe('warn')
    expect(
      noticeRecord({ type: 'staleState', reason: 'our nonce 5 came back', tokenNetwork: TN, channelId: 3n, nonce: 5n, ourNonce: 4n, source: 'chain' }),
    ).toEqual({
      level: 'error',
      msg: 'stored state older than what this node signed',
      fields: { event: 'staleState', reason: 'our nonce 5 came back', tokenNetwork: TN, channelId: 3n, nonce: 5n, ourNonce: 4n, source: 'chain' },
    })
  })
})

describe('logNodeNotices', () => {
  test("writes each notice at its level through the logger's threshold, until unsubscribed", () => {
    const notices = new EventBus<NodeNotice>()
    const { logger, lines, records } = capture('warn')
    const off = logNodeNotices({ notices }, logger)
    notices.publish({ type: 'status', status: { status: 'ready', blocksToSync: 0n, syncedBlock: 5n, headBlock: 5n, chain: { state: 'following' } } })
    notices.publish({ type: 'error', where: 'chain sync', error: new ChainRpcError('the chain did not answer') })
    notices.publish({ type: 'error', where: 'node', error: new Error('halted') })
    off()
    notices.publish({ type: 'error', where: 'node', error: new Error('after') })
    expect(lines.map((l) => l.level)).toEqual(['warn', 'error'])
    expect(records()[0]).toEqual({
      time: '1970-01-01T00:00:00.000Z',
      level: 'warn',
      msg: 'chain sync',
      event: 'error',
      where: 'chain sync',
      error: { name: 'ChainRpcError', code: 'CHAIN_RPC', message: 'the chain did not answer' },
    })
  })
})
