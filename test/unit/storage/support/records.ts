import { getAddress, keccak256, toHex, type Address, type Hex } from 'viem'
import type { JournalEntry } from '../../../../src/chain/transactionJournal.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
import type {
  OutboxRecord,
  PaymentRecord,
  ReceivedRecord,
  SentLockRecord,
  SentProofRecord,
  Snapshot,
  StorageIdentity,
  StoredChainEvent,
  StoredChange,
  StoredEvent,
  TransactionRecord,
} from '../../../../src/storage/storage.ts'

// Rows for storage tests: realistic shapes from the protocol types, with bigints where the node has them.
// Changes, outbox and transaction records are deterministic (equal when built with the same arguments).

export const BIG = 2n ** 255n

export function randomAddress(): Address {
  return getAddress(toHex(crypto.getRandomValues(new Uint8Array(20))))
}

export function randomHash(): Hex {
  return toHex(crypto.getRandomValues(new Uint8Array(32)))
}

/** A fresh node identity, so every test has its own store. */
export function newIdentity(): StorageIdentity {
  return { chainId: 31337n, registry: randomAddress(), address: randomAddress() }
}

const tokenNetwork = randomAddress()
const partner = randomAddress()

export function change(seq: number, amount = BIG): StoredChange {
  return {
    seq,
    time: 1_700_000_000_000 + seq,
    change: { type: 'channelDeposit', tokenNetwork, channelId: BigInt(seq), participant: partner, totalDeposit: amount },
  }
}

export function snapshot(seq: number, address: Address, blockNumber = BIG): Snapshot {
  // Cast: the storage does not read the state, and this keeps the fixture valid as the protocol state grows.
  const state = {
    address,
    chainId: 31337n,
    blockNumber,
    nextMessageId: BigInt(seq),
    tokenNetworks: { [tokenNetwork]: { token: randomAddress(), graph: {} } },
    channels: {},
    initiators: {},
    mediators: {},
    targets: {},
    registeredSecrets: { [randomHash()]: BIG },
  } as NodeState
  return { seq, state }
}

export function outbox(key: string, attempts = 0): OutboxRecord {
  return {
    key,
    recipient: partner,
    message: { type: 'SecretRequest', message_identifier: 12n, payment_identifier: BIG, secrethash: keccak256(toHex(key)), amount: BIG, expiration: 1300n },
    channelKey: `${tokenNetwork}:7`,
    queuedAt: 1_700_000_000_000,
    attempts,
    nextAttemptAt: 1_700_000_000_500,
  }
}

export function transaction(key: string, status: TransactionRecord['status'] = 'pending'): TransactionRecord {
  return {
    key,
    transaction: { type: 'registerSecret', secret: keccak256(toHex(key)), secrethash: keccak256(keccak256(toHex(key))) },
    createdAt: 1_700_000_000_000,
    status,
    ...(status === 'sent' ? { hash: keccak256(toHex(`tx ${key}`)), nonce: 4 } : {}),
  }
}

export function event(seq: number): StoredEvent {
  return { seq, time: 1_700_000_000_000 + seq, event: { type: 'channelStateChanged', tokenNetwork, channelId: BIG, state: 'opened' } }
}

export function payment(seq: number, token: Address, to: Address, amount = BigInt(seq)): PaymentRecord {
  return { seq, time: 1_700_000_000_000 + seq, event: 'EventPaymentSentSuccess', token, partner: to, amount, identifier: BigInt(seq), secrethash: randomHash() }
}

/**
 * Payments to `target` as an upgrade from schema 3 meets them: two sent under identifier 9 (the later, failed one is
 * what sentPayment finds) and one received under 10 (not ours: sentPayment finds none).
 */
export function paymentsToIndex(token: Address, target: Address): PaymentRecord[] {
  return [
    { ...payment(1, token, target), identifier: 9n },
    { ...payment(2, token, target), identifier: 9n, event: 'EventPaymentSentFailed' },
    { ...payment(3, token, target), identifier: 10n, event: 'EventPaymentReceivedSuccess' },
  ]
}

export function chainEvent(blockNumber: bigint, logIndex: number, fields: Partial<StoredChainEvent> = {}): StoredChainEvent {
  return {
    blockNumber,
    logIndex,
    transactionHash: randomHash(),
    address: fields.tokenNetwork ?? tokenNetwork,
    name: 'ChannelNewDeposit',
    args: { total_deposit: BIG, participant: partner },
    ...fields,
  }
}

/** A sent balance proof of `channelKey`; its balance hash is random unless given. */
export function sentProof(channelKey: string, nonce: bigint, fields: Partial<SentProofRecord> = {}): SentProofRecord {
  return { channelKey, balanceHash: randomHash(), nonce, transferredAmount: BIG, lockedAmount: nonce * 10n, locksroot: randomHash(), ...fields }
}

/** A sent lock of `channelKey` added at `addedNonce` (removed at `removedNonce` when given); random secret hash unless given. */
export function sentLock(channelKey: string, addedNonce: bigint, removedNonce?: bigint, secrethash: Hex = randomHash()): SentLockRecord {
  return { channelKey, secrethash, expiration: 1000n + addedNonce, amount: BIG, addedNonce, ...(removedNonce !== undefined ? { removedNonce } : {}) }
}

/** A message the partner signed under `nonce` of `channelKey`, with random signed bytes and signature unless given. */
export function received(channelKey: string, nonce: bigint, fields: Partial<ReceivedRecord> = {}): ReceivedRecord {
  return {
    channelKey,
    nonce,
    type: 'LockedTransfer',
    signed: toHex(crypto.getRandomValues(new Uint8Array(200))),
    signature: toHex(crypto.getRandomValues(new Uint8Array(65))),
    ...fields,
  }
}

/** A channel key as the protocol makes them (token network, lower case, and channel id). */
export function newChannelKey(): string {
  return `${randomAddress().toLowerCase()}:${crypto.getRandomValues(new Uint32Array(1))[0]}`
}

/**
 * The transaction journal's entry of `nonce`: a call signed `attempts` times (the later at higher fees), sent, with
 * bigints up to uint256 where the chain has them. Deterministic: equal when built with the same arguments, in any
 * process.
 */
const JOURNAL_TO = getAddress(`0x${'5a'.repeat(20)}`)

export function journalEntry(nonce: number, attempts = 1, fields: Partial<JournalEntry> = {}): JournalEntry {
  const raw = (i: number): Hex => keccak256(toHex(`raw ${nonce} ${i}`))
  return {
    nonce,
    call: { to: JOURNAL_TO, data: `0x${'a9059cbb'.padEnd(8 + 64, '0')}`, value: BIG, description: `settle channel ${nonce}` },
    gas: 210_000n,
    deadline: 1_000n + BigInt(nonce),
    attempts: Array.from({ length: attempts }, (_, i) => ({
      hash: keccak256(raw(i)),
      raw: raw(i),
      fees: { maxFeePerGas: 2n * 10n ** 9n * BigInt(i + 1), maxPriorityFeePerGas: 10n ** 9n },
      signedAtBlock: 100n + BigInt(i),
    })),
    status: 'sent',
    createdAt: 1_700_000_000_000 + nonce,
    ...fields,
  }
}
