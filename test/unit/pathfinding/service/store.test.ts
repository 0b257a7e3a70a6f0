import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAddress, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import type { PfsChannel } from '../../../../src/pathfinding/channel.ts'
import type { StoredIou } from '../../../../src/pathfinding/iou.ts'
import type { FeedbackRecord } from '../../../../src/pathfinding/service/records.ts'
import { PfsStore } from '../../../../src/pathfinding/service/store.ts'
import { signIou } from '../../../support/ious.ts'

const identity = {
  chainId: 31337,
  registry: getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'),
  address: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
}
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const senderKey: Hex = anvilKeys[3]!
const sender = privateKeyToAddress(senderKey)
const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pfs-store-'))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const channel = (channelId: bigint, deposit = 0n): PfsChannel => ({
  tokenNetwork,
  channelId,
  settleTimeout: 100n,
  closed: false,
  participants: [
    { address: identity.address, deposit, withdrawn: 0n },
    { address: sender, deposit: 0n, withdrawn: 0n },
  ],
})
const session = (expirationBlock: bigint, amount: bigint, status: StoredIou['status'] = 'held'): StoredIou => ({
  iou: signIou(senderKey, { oneToNAddress: tokenNetwork, chainId: 31337n, receiver: identity.address, amount, expirationBlock }),
  status,
  updatedAt: 0,
})
const feedback = (createdAt: number): FeedbackRecord => ({
  token: createdAt.toString(16).padStart(12, '0') + 'ab'.repeat(10),
  tokenNetwork,
  createdAt,
  source: identity.address,
  target: sender,
  routes: [{ path: [identity.address, sender], estimatedFee: 0n }],
})

describe('the pathfinding service store', () => {
  test('steps queued together are one batch, each seeing those before it; only once durable is the view told; all survive a reopen', async () => {
    const dir = tempDir()
    const store = await PfsStore.open(dir, identity)
    const told: string[][] = []
    store.onCommitted((committed) => told.push([...committed.keys()].filter((k) => k.startsWith('c!'))))
    const seen: (bigint | undefined)[] = []
    const results = await Promise.allSettled([
      store.transact((tx) => tx.putChannel(channel(1n, 5n))),
      store.transact((tx) => {
        seen.push(tx.channel(tokenNetwork, 1n)?.participants[0].deposit)
        tx.putChannel(channel(1n, 7n))
        tx.putIou(session(1_000n, 10n))
      }),
      store.transact((tx) => {
        tx.putChannel(channel(2n))
        throw new Error('a bug in a step')
      }),
      store.transact((tx) => {
        seen.push(tx.activeIou(sender)?.iou.amount)
        tx.putFeedback(feedback(1_000))
        tx.putSync({ syncedBlock: 42n, recentBlocks: [], tokenNetworks: [tokenNetwork] })
      }),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    expect(seen).toEqual([5n, 10n])
    // The first step goes alone (nothing was being written), the rest in one batch; the dropped step's channel is never told.
    expect(told).toEqual([[`c!${tokenNetwork.toLowerCase()}!${'1'.padStart(64, '0')}`], [`c!${tokenNetwork.toLowerCase()}!${'1'.padStart(64, '0')}`]])
    await store.close()

    const reopened = await PfsStore.open(dir, identity)
    expect(reopened.channels()).toEqual([channel(1n, 7n)])
    expect(reopened.activeIou(sender)?.iou.amount).toBe(10n)
    expect(reopened.sync?.syncedBlock).toBe(42n)
    expect(await reopened.feedback(feedback(1_000).token)).toEqual(feedback(1_000))
    await reopened.close()
  })

  test("a sender's session stops being active once claimed (or being claimed), and the next one is", async () => {
    const store = await PfsStore.open(tempDir(), identity)
    await store.transact((tx) => tx.putIou(session(1_000n, 10n)))
    expect(store.activeIou(sender)?.iou.expirationBlock).toBe(1_000n)
    await store.transact((tx) => {
      tx.putIou(session(1_000n, 10n, 'claiming'))
      expect(tx.activeIou(sender)).toBeUndefined()
      tx.putIou(session(2_000n, 10n))
      expect(tx.activeIou(sender)?.iou.expirationBlock).toBe(2_000n)
    })
    expect(store.activeIou(sender)?.iou.expirationBlock).toBe(2_000n)
    expect(store.iou(sender, 1_000n)?.status).toBe('claiming')
    await store.close()
  })

  test('routes answered are pruned by age; a second process on the same data is refused', async () => {
    const dir = tempDir()
    const store = await PfsStore.open(dir, identity)
    await store.transact((tx) => {
      tx.putFeedback(feedback(1_000))
      tx.putFeedback(feedback(5_000))
    })
    await store.pruneFeedback(2_000)
    expect(await store.feedback(feedback(1_000).token)).toBeUndefined()
    expect(await store.feedback(feedback(5_000).token)).toBeDefined()
    await expect(PfsStore.open(dir, identity)).rejects.toMatchObject({ code: 'STORAGE_LOCKED' })
    await store.close()
  })
})
