// What a backup copy holds (docs/decisions/0034): the state at a seq, the outbox, the transactions, and the latest
// proof of ours per channel as the start of the sent-proof history; read back as a dump the store imports, marked
// restored.
import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { buildPayload, MAX_PAYLOAD_BYTES, readPayload, restoreDump, type RecoveryPoint } from '../../../../../src/node/services/backup/payload.ts'
import { channelKey } from '../../../../../src/protocol/channel/key.ts'
import { initialState } from '../../../../../src/protocol/state/access.ts'
import type { Channel, NodeState } from '../../../../../src/protocol/state/types.ts'
import type { OutboxRecord, StorageDump } from '../../../../../src/storage/storage.ts'

const address: Address = '0x00000000000000000000000000000000000000aa'
const tokenNetwork: Address = '0x00000000000000000000000000000000000000a1'
const open = channelKey(tokenNetwork, 1n)

function state(): NodeState {
  const end = { address, deposit: 100n, withdrawn: 0n, pendingWithdraws: [], nonce: 3n, balanceProof: null, locks: [] }
  const channel: Channel = {
    chainId: 1n,
    tokenNetwork,
    token: tokenNetwork,
    id: 1n,
    partner: '0x00000000000000000000000000000000000000bb',
    settleTimeout: 500n,
    revealTimeout: 50n,
    openedBlock: 10n,
    state: 'opened',
    our: end,
    partnerEnd: { ...end, address: '0x00000000000000000000000000000000000000bb' },
  }
  return { ...initialState({ address, chainId: 1n, blockNumber: 42n }), channels: { [open]: channel } }
}

/** The state after our proof `nonce` in the channel, one lock of ours pending since nonce 2. */
function withProof(s: NodeState, nonce = 3n): NodeState {
  const channel = s.channels[open]!
  const balanceProof = {
    nonce,
    transferredAmount: 7n,
    lockedAmount: 2n,
    locksroot: '0x22' as const,
    balanceHash: '0x11' as const,
    messageHash: '0x44' as const,
  }
  const locks = [{ secrethash: '0x33' as const, expiration: 90n, amount: 2n, nonce: 2n, secret: '0x55' as const }]
  return { ...s, channels: { [open]: { ...channel, our: { ...channel.our, nonce, balanceProof, locks } } } }
}

function stored(): StorageDump {
  return {
    format: 'sluice-dump',
    meta: { chainId: 1n, registry: tokenNetwork, address, schemaVersion: 3, syncedBlock: 50n, createdAt: 1 },
    changes: [],
    events: [],
    payments: [],
    chainEvents: [],
    outbox: [],
    transactions: [{ key: 'tx:1', transaction: { type: 'registerSecret', secret: '0x01', secrethash: '0x02' }, createdAt: 1, status: 'pending' }],
    sentProofs: [],
    sentLocks: [],
    received: [],
  }
}

const outbox: OutboxRecord[] = [
  { key: 'k', recipient: address, message: { type: 'Processed', message_identifier: 7n }, queuedAt: 1, attempts: 0, nextAttemptAt: 1 },
]

describe('a recovery payload', () => {
  test("holds the point's state and outbox, the store's transactions, and each channel's latest proof of ours with its locks", async () => {
    const point: RecoveryPoint = { seq: 12, state: withProof(state()), outbox }
    const payload = await readPayload(await buildPayload(point, stored()))
    expect(payload.dump.snapshot).toEqual({ seq: 12, state: point.state })
    // The state has applied the chain up to its block: the restored node syncs on from there, not from the store's meta.
    expect(payload.dump.meta.syncedBlock).toBe(42n)
    expect(payload.dump.outbox).toEqual(outbox)
    expect(payload.dump.transactions).toHaveLength(1)
    // The history starts at the latest proof (from the state): older ones are not in the copy, and it says so.
    expect(payload.dump.sentProofs).toEqual([{ channelKey: open, balanceHash: '0x11', nonce: 3n, transferredAmount: 7n, lockedAmount: 2n, locksroot: '0x22' }])
    expect(payload.dump.sentLocks).toEqual([{ channelKey: open, secrethash: '0x33', expiration: 90n, amount: 2n, addedNonce: 2n }])
    expect(payload.ourHistoryFrom).toEqual({ [open]: 3n })
    // Restored, it is the snapshot and one change after it that marks the state restored, with the chain's head.
    const dump = restoreDump(payload, 12n, 99n)
    expect(dump.changes).toEqual([{ seq: 13, time: 1, change: { type: 'restored', version: 12n, ourHistoryFrom: { [open]: 3n }, openedUpTo: 99n } }])
  })

  test('does not grow with the payments: the same size after one proof or a thousand', async () => {
    const sizes = await Promise.all(
      [1n, 1000n].map(async (n) => (await buildPayload({ seq: Number(n), state: withProof(state(), n), outbox: [] }, stored())).length),
    )
    expect(Math.abs(sizes[0]! - sizes[1]!)).toBeLessThan(16)
    expect(sizes[0]).toBeLessThan(MAX_PAYLOAD_BYTES)
  })

  test('refuses what is not a recovery payload with BACKUP_PAYLOAD_INVALID', async () => {
    for (const bytes of [new Uint8Array([1, 2, 3]), new TextEncoder().encode('{"format":"sluice-recovery/1"}')])
      await expect(readPayload(bytes)).rejects.toMatchObject({ code: 'BACKUP_PAYLOAD_INVALID' })
  })
})
