// What a backup copy holds (docs/decisions/0034): the state at a seq, the outbox, the transactions and our sent-proof
// history of the channels still in the state, bounded to fit a copy; read back as a dump the store imports, marked
// restored.
import { keccak256, toHex, type Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { buildPayload, MAX_PAYLOAD_BYTES, readPayload, restoreDump, type RecoveryPoint } from '../../../../../src/node/services/backup/payload.ts'
import { channelKey } from '../../../../../src/protocol/channel/key.ts'
import { initialState } from '../../../../../src/protocol/state/access.ts'
import type { Channel, NodeState } from '../../../../../src/protocol/state/types.ts'
import type { OutboxRecord, SentLockRecord, SentProofRecord, StorageDump } from '../../../../../src/storage/storage.ts'

const address: Address = '0x00000000000000000000000000000000000000aa'
const tokenNetwork: Address = '0x00000000000000000000000000000000000000a1'
const open = channelKey(tokenNetwork, 1n)
const gone = channelKey(tokenNetwork, 2n)

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

const proof = (key: string, nonce: bigint): SentProofRecord => ({
  channelKey: key,
  balanceHash: keccak256(toHex(`${key}:${nonce}`)),
  nonce,
  transferredAmount: nonce,
  lockedAmount: 0n,
  locksroot: keccak256(toHex(`root:${nonce}`)),
})

function stored(proofs: SentProofRecord[], locks: SentLockRecord[] = []): StorageDump {
  return {
    format: 'sluice-dump',
    meta: { chainId: 1n, registry: tokenNetwork, address, schemaVersion: 3, syncedBlock: 50n, createdAt: 1 },
    changes: [],
    events: [],
    payments: [],
    chainEvents: [],
    outbox: [],
    transactions: [{ key: 'tx:1', transaction: { type: 'registerSecret', secret: '0x01', secrethash: '0x02' }, createdAt: 1, status: 'pending' }],
    sentProofs: proofs,
    sentLocks: locks,
    received: [],
  }
}

const outbox: OutboxRecord[] = [
  { key: 'k', recipient: address, message: { type: 'Processed', message_identifier: 7n }, queuedAt: 1, attempts: 0, nextAttemptAt: 1 },
]

describe('a recovery payload', () => {
  test("holds the point's state and outbox, the store's transactions and the history of the channels still in the state", async () => {
    const point: RecoveryPoint = { seq: 12, state: state(), outbox }
    const bytes = await buildPayload(point, stored([proof(open, 1n), proof(open, 2n), proof(gone, 1n)]))
    const payload = await readPayload(bytes)
    expect(payload.dump.snapshot).toEqual({ seq: 12, state: point.state })
    // The state has applied the chain up to its block: the restored node syncs on from there, not from the store's meta.
    expect(payload.dump.meta.syncedBlock).toBe(42n)
    expect(payload.dump.outbox).toEqual(outbox)
    expect(payload.dump.transactions).toHaveLength(1)
    expect(payload.dump.sentProofs!.map((p) => p.nonce).sort()).toEqual([1n, 2n])
    expect(payload.ourHistoryFrom).toEqual({})
    // Restored, it is the snapshot and one change after it that marks the state restored, with the chain's head.
    const dump = restoreDump(payload, 12n, 99n)
    expect(dump.changes).toEqual([{ seq: 13, time: 1, change: { type: 'restored', version: 12n, ourHistoryFrom: {}, openedUpTo: 99n } }])
  })

  test('keeps the newest proofs of a long history, and says from which nonce, to fit a copy', async () => {
    const proofs = Array.from({ length: 12_000 }, (_, i) => proof(open, BigInt(i + 1)))
    const locks: SentLockRecord[] = [
      { channelKey: open, secrethash: keccak256('0x01'), expiration: 9n, amount: 1n, addedNonce: 2n, removedNonce: 3n },
      { channelKey: open, secrethash: keccak256('0x02'), expiration: 9n, amount: 1n, addedNonce: 11_999n },
    ]
    const bytes = await buildPayload({ seq: 1, state: state(), outbox: [] }, stored(proofs, locks))
    expect(bytes.length).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES)
    const payload = await readPayload(bytes)
    const kept = payload.dump.sentProofs!.map((p) => p.nonce)
    expect(kept.length).toBeLessThan(proofs.length)
    expect(kept).toContain(12_000n)
    const from = payload.ourHistoryFrom[open]!
    expect(kept.every((n) => n >= from)).toBe(true)
    expect(kept).toHaveLength(12_000 - Number(from) + 1)
    // A lock removed before the first proof kept is in none of them; one pending since is kept.
    expect(payload.dump.sentLocks!.map((l) => l.addedNonce)).toEqual([11_999n])
  })

  test('refuses what is not a recovery payload with BACKUP_PAYLOAD_INVALID', async () => {
    for (const bytes of [new Uint8Array([1, 2, 3]), new TextEncoder().encode('{"format":"sluice-recovery/1"}')])
      await expect(readPayload(bytes)).rejects.toMatchObject({ code: 'BACKUP_PAYLOAD_INVALID' })
  })
})
