import type { Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { TransactionRevertedError } from '../../../../src/chain/errors.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import type { Transaction } from '../../../../src/protocol/state/effects.ts'
import type { TransactionRecord } from '../../../../src/storage/storage.ts'
import { TransactionRunner, type TransactionRunnerParameters } from '../../../../src/node/runtime/transactionRunner.ts'

const close: Transaction = {
  type: 'close',
  tokenNetwork: '0x00000000000000000000000000000000000000aa',
  channelId: 7n,
  partner: '0x00000000000000000000000000000000000000bb',
  balanceProof: null,
}
const record = (over: Partial<TransactionRecord> = {}): TransactionRecord => ({ key: 'tx-1', transaction: close, createdAt: 0, status: 'pending', ...over })

/** A runner over an engine that records what it was told. */
function runner(over: Partial<TransactionRunnerParameters> = {}) {
  const dispatched: StateChange[] = []
  const forgotten: string[] = []
  const updated: TransactionRecord[] = []
  const failed: { transaction: Transaction; error: unknown; dispatchedBefore: number }[] = []
  const r = new TransactionRunner({
    engine: {
      dispatch: async (change) => {
        dispatched.push(change)
        return { seq: 1, change, effects: [] }
      },
      forget: (_outbox, transactions = []) => void forgotten.push(...transactions),
      updateTransaction: (rec) => void updated.push(rec),
    },
    receipt: async () => undefined,
    send: async (_record, onSubmitted) => onSubmitted({ hash: '0x01', nonce: 3 }),
    onFailed: (transaction, error) => void failed.push({ transaction, error, dispatchedBefore: dispatched.length }),
    isStopping: () => false,
    ...over,
  })
  return { r, dispatched, forgotten, updated, failed }
}

describe('TransactionRunner', () => {
  test('a sent transaction stores its hash and nonce, then its record is dropped; the core hears nothing', async () => {
    const { r, dispatched, forgotten, updated } = runner()
    await r.run(record())
    expect(updated).toEqual([record({ status: 'sent', hash: '0x01', nonce: 3 })])
    expect(forgotten).toEqual(['tx-1'])
    expect(dispatched).toEqual([])
  })

  test('a failure tells the waiters first, then the core (the channel reverts), and drops the record', async () => {
    const error = new TransactionRevertedError('TokenNetwork.closeChannel(7)', 'channel is not open')
    const { r, dispatched, forgotten, failed } = runner({ send: async () => Promise.reject(error) })
    await r.run(record())
    expect(failed).toEqual([{ transaction: close, error, dispatchedBefore: 0 }])
    expect(dispatched).toEqual([
      { type: 'transactionFailed', transaction: 'close', tokenNetwork: close.tokenNetwork, channelId: 7n, reason: 'channel is not open' },
    ])
    expect(forgotten).toEqual(['tx-1'])
  })

  test('one record runs once at a time: a second run while the first is under way does nothing', async () => {
    let sends = 0
    let finish!: () => void
    const { r } = runner({
      send: () => {
        sends++
        return new Promise<void>((resolve) => {
          finish = resolve
        })
      },
    })
    const first = r.run(record())
    await r.run(record())
    expect(sends).toBe(1)
    finish()
    await first
    const again = r.run(record())
    expect(sends).toBe(2)
    finish()
    await again
  })

  test('sent before a restart and mined meanwhile: not sent again; a reverted one is reported as failed', async () => {
    let sends = 0
    const ok = runner({ receipt: async () => ({ status: 'success' }), send: async () => void sends++ })
    await ok.r.run(record({ status: 'sent', hash: '0xab' as Hex }))
    expect(sends).toBe(0)
    expect(ok.dispatched).toEqual([])
    const reverted = runner({ receipt: async () => ({ status: 'reverted' }), send: async () => void sends++ })
    await reverted.r.run(record({ status: 'sent', hash: '0xab' as Hex }))
    expect(sends).toBe(0)
    expect(reverted.dispatched).toMatchObject([{ type: 'transactionFailed', transaction: 'close', channelId: 7n }])
    expect(reverted.forgotten).toEqual(['tx-1'])
  })

  test('sent before a restart and not mined: sent again (the queue keeps its nonce)', async () => {
    let sends = 0
    const { r } = runner({ receipt: async () => undefined, send: async () => void sends++ })
    await r.run(record({ status: 'sent', hash: '0xab' as Hex }))
    expect(sends).toBe(1)
  })

  test('a failure while the node stops is no failure: the record stays for the next start', async () => {
    const { r, dispatched, failed, forgotten } = runner({ send: async () => Promise.reject(new Error('stopping')), isStopping: () => true })
    await r.run(record())
    expect(dispatched).toEqual([])
    expect(failed).toEqual([])
    expect(forgotten).toEqual([])
  })
})
