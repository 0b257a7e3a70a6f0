import type { Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { ChainRpcError, FeesAboveCapError, InsufficientFundsForGasError, TransactionRevertedError } from '../../../../src/chain/errors.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import type { Transaction } from '../../../../src/protocol/state/effects.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
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
      current: { blockNumber: 100n } as NodeState,
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
    expect(updated).toEqual([record({ status: 'sent', hash: '0x01', nonce: 3, hashes: ['0x01'] })])
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

  test('each version broadcast is stored; after a restart, a replacement mined is found by its own hash and nothing is sent', async () => {
    const { r, updated } = runner({
      send: async (_record, onSubmitted) => {
        onSubmitted({ hash: '0x01', nonce: 3 })
        onSubmitted({ hash: '0x02', nonce: 3 })
      },
    })
    await r.run(record())
    expect(updated.at(-1)).toEqual(record({ status: 'sent', hash: '0x02', nonce: 3, hashes: ['0x01', '0x02'] }))
    let sends = 0
    const asked: Hex[] = []
    const again = runner({
      receipt: async (hash) => {
        asked.push(hash)
        return hash === '0x02' ? { status: 'success' } : undefined
      },
      send: async () => void sends++,
    })
    await again.r.run(updated.at(-1)!)
    expect(asked).toEqual(['0x02'])
    expect(sends).toBe(0)
  })

  test('a duty that cannot go out for a passing reason (the cap, the balance, the endpoint) is tried again and its risk told; a user transaction fails at once', async () => {
    const update: Transaction = { ...close, type: 'update', balanceProof: {} as never, deadline: 150n } as Transaction
    const risks: unknown[] = []
    let sends = 0
    const failures = [
      new FeesAboveCapError('update', 200n * 10n ** 9n, 50n * 10n ** 9n),
      new InsufficientFundsForGasError('0x00000000000000000000000000000000000000cc', 1n, 9n),
      new ChainRpcError('eth_estimateGas', new Error('timeout')),
    ]
    const duty = runner({
      retryMs: 5,
      send: async () => {
        const failure = failures[sends++]
        if (failure) throw failure
      },
      onRisk: (_key, risk) => void risks.push(risk),
    })
    await duty.r.run(record({ transaction: update }))
    expect(sends).toBe(4)
    expect(duty.failed).toEqual([])
    expect(duty.forgotten).toEqual(['tx-1'])
    expect(risks).toEqual([
      { reason: 'fee_cap', needed: 200n * 10n ** 9n, description: 'update of channel 7', deadline: 150n, head: 100n },
      { reason: 'balance', needed: 9n, description: 'update of channel 7', deadline: 150n, head: 100n },
      undefined,
    ])
    // The user's close is not the node's duty: its caller hears why at once.
    const user = runner({ send: async () => Promise.reject(new FeesAboveCapError('close', 2n, 1n)) })
    await user.r.run(record())
    expect(user.failed).toHaveLength(1)
    expect(user.dispatched).toMatchObject([{ type: 'transactionFailed', transaction: 'close' }])
  })

  test('a duty past its deadline is given up: the core is told', async () => {
    const late: Transaction = { type: 'registerSecret', secret: '0x01', secrethash: '0x02', deadline: 99n }
    const { r, failed, dispatched } = runner({ retryMs: 5, send: async () => Promise.reject(new FeesAboveCapError('registerSecret', 2n, 1n)) })
    await r.run(record({ transaction: late }))
    expect(failed).toHaveLength(1)
    expect(dispatched).toMatchObject([{ type: 'transactionFailed', transaction: 'registerSecret', secrethash: '0x02' }])
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
