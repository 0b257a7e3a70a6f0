import { getAddress, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import type { ChainClient } from '../../../../src/chain/chainClient.ts'
import type { JournalEntry } from '../../../../src/chain/transactionJournal.ts'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import type { PfsChannel } from '../../../../src/pathfinding/channel.ts'
import type { StoredIou } from '../../../../src/pathfinding/iou.ts'
import { Payments } from '../../../../src/pathfinding/service/payments.ts'
import type { FeedbackRecord } from '../../../../src/pathfinding/service/records.ts'
import { PfsStore } from '../../../../src/pathfinding/service/store.ts'
import { Lease } from '../../../../src/storage/postgres/lease.ts'
import type { PresenceRecord } from '../../../../src/transport/libp2p/presence.ts'
import { signIou } from '../../../support/ious.ts'
import { serviceStoreEngines } from '../../../support/serviceStores.ts'
import { nativeCurve } from '../../../support/curve.ts'

const identity = {
  chainId: 31337,
  registry: getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'),
  address: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
}
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const senderKey: Hex = anvilKeys[3]!
const sender = privateKeyToAddress(senderKey)
const { engines, tempDir, pool, database } = serviceStoreEngines('pfs', {
  open: (dataDir) => PfsStore.open(dataDir, identity),
  openPostgres: (pool) => PfsStore.openPostgres(pool, identity),
})

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

describe.each(engines)('the pathfinding service store on $engine', ({ place }) => {
  test('steps queued together are one batch, each seeing those before it; only once durable is the view told; all survive a reopen', async () => {
    const open = await place()
    const store = await open()
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

    const reopened = await open()
    expect(reopened.channels()).toEqual([channel(1n, 7n)])
    expect(reopened.activeIou(sender)?.iou.amount).toBe(10n)
    expect(reopened.sync?.syncedBlock).toBe(42n)
    expect(await reopened.feedback(feedback(1_000).token)).toEqual(feedback(1_000))
    await reopened.close()
  })

  test("a sender's session stops being active once claimed (or being claimed), and the next one is", async () => {
    const store = await (await place())()
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

  test('routes answered are pruned by age', async () => {
    const store = await (await place())()
    await store.transact((tx) => {
      tx.putFeedback(feedback(1_000))
      tx.putFeedback(feedback(5_000))
    })
    await store.pruneFeedback(2_000)
    expect(await store.feedback(feedback(1_000).token)).toBeUndefined()
    expect(await store.feedback(feedback(5_000).token)).toBeDefined()
    await store.close()
  })
})

describe('the pathfinding service store on LevelDB', () => {
  test('a second process on the same data is refused', async () => {
    const dir = tempDir()
    const store = await PfsStore.open(dir, identity)
    await expect(PfsStore.open(dir, identity)).rejects.toMatchObject({ code: 'STORAGE_LOCKED' })
    await store.close()
  })
})

describe('the pathfinding service store of two instances on one database', () => {
  const instances = async () => {
    const url = await database()
    const leaseOf = (holder: string) => Lease.start(pool(url), { name: 'pathfinding:test', durationMs: 3_000, holder })
    const [leaderLease, standbyLease] = [await leaseOf('leader'), await leaseOf('standby')]
    const leader = await PfsStore.openPostgres(pool(url), identity, { lease: leaderLease, pollMs: 100_000 })
    const standby = await PfsStore.openPostgres(pool(url), identity, { lease: standbyLease, pollMs: 100_000 })
    return { leader, standby, close: () => Promise.all([leader.close(), standby.close(), leaderLease.stop(), standbyLease.stop()]) }
  }

  test("each one's channels, sessions and presence records reach the other's memory and its view (onCommitted); only the lease holder's claims and journal are written", async () => {
    const { leader, standby, close } = await instances()
    const told: [string, unknown][] = []
    standby.onCommitted((committed) => told.push(...[...committed].filter(([key]) => key.startsWith('c!'))))

    // The chain watch's channels and a presence record (the leader's), an IOU (either's): the other has them at once.
    const online: PresenceRecord = { peer: 'peer-of-sender', announcement: '{"v":1}', sig: 'ab' }
    await leader.transact((tx) => {
      tx.putChannel(channel(1n, 5n))
      tx.putChannel(channel(2n))
      tx.putPresence(sender, online)
    })
    await standby.transact((tx) => tx.putIou(session(1_000n, 10n)))
    await eventually(() => {
      expect(standby.channels()).toEqual([channel(1n, 5n), channel(2n)])
      expect(standby.presence(sender)).toEqual(online)
      expect(leader.activeIou(sender)?.iou.amount).toBe(10n)
    })
    const key = (id: bigint) => `c!${tokenNetwork.toLowerCase()}!${id.toString(16).padStart(64, '0')}`
    expect(told).toEqual([
      [key(1n), channel(1n, 5n)],
      [key(2n), channel(2n)],
    ])
    // A channel settled, a node gone offline: deletions reach the other too.
    await leader.transact((tx) => {
      tx.deleteChannel(tokenNetwork, 2n)
      tx.putPresence(sender, undefined)
    })
    await eventually(() => {
      expect(standby.channels()).toEqual([channel(1n, 5n)])
      expect(standby.presence(sender)).toBeUndefined()
    })
    expect(told.at(-1)).toEqual([key(2n), null])

    // A claim's step and its journal entry: the standby's are refused alone (LEASE_LOST), the leader's written.
    const entry: JournalEntry = {
      nonce: 0,
      call: { to: tokenNetwork, data: '0x', description: 'claim' },
      gas: 1n,
      attempts: [],
      status: 'signed',
      createdAt: 1,
    }
    const claim = (tx: Parameters<Parameters<PfsStore['transact']>[0]>[0]) => {
      tx.requireLease()
      tx.putIou(session(1_000n, 10n, 'claiming'))
      tx.putJournalEntry(entry)
    }
    const [refused, taken] = await Promise.allSettled([standby.transact(claim), standby.transact((tx) => tx.putChannel(channel(3n)))])
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'LEASE_LOST' } })
    expect(taken.status).toBe('fulfilled')
    await leader.transact(claim)
    await eventually(() => {
      expect(standby.journal().map((e) => e.nonce)).toEqual([0])
      expect(standby.iou(sender, 1_000n)?.status).toBe('claiming')
      expect(standby.activeIou(sender)).toBeUndefined()
    })
    await close()
  })

  test("two IOUs of one session sent at once to the two instances: each checked against the other's, one stored and the other refused, every time", async () => {
    const { leader, standby, close } = await instances()
    const fee = 10n
    const chain = { address: identity.address, chainId: identity.chainId } as ChainClient
    const payments = (store: PfsStore) =>
      new Payments({ curve: nativeCurve, chain, store, userDeposit: tokenNetwork, oneToN: tokenNetwork, serviceFee: fee, confirmedBlock: () => 1n })
    const [onLeader, onStandby] = [payments(leader), payments(standby)]
    for (let round = 1n; round <= 10n; round++) {
      // Both instances' memories hold the same last IOU (round - 1 fees); each is sent the next one, of the same amount.
      const next = { iou: session(100_000n, round * fee).iou }
      const outcomes = await Promise.all([leader.transact((tx) => onLeader.store(tx, next)), standby.transact((tx) => onStandby.store(tx, next))])
      const refused = outcomes.filter((o) => o !== undefined)
      expect(refused, `round ${round}`).toHaveLength(1)
      expect(refused[0]).toMatchObject({ name: 'InsufficientServicePayment' })
      await eventually(() => {
        expect(leader.activeIou(sender)?.iou.amount).toBe(round * fee)
        expect(standby.activeIou(sender)?.iou.amount).toBe(round * fee)
      })
    }
    await close()
  })
})

async function eventually(check: () => void, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return check()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}
