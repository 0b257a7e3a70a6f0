import { isAddress, maxUint64, maxUint256 } from 'viem'
import type { JournalAttempt, JournalEntry } from '../chain/transactionJournal.ts'
import { checkHash, checkUint } from './sentRecords.ts'
import { StorageError } from './storage.ts'

/**
 * What the stores share about the transaction journal (src/chain/transactionJournal.ts, docs/decisions/0051): the
 * checks of an entry, its key, its order. An entry is keyed by its nonce, a number: as itself in IndexedDB, zero-padded
 * in LevelDB keys. A queue reloading the journal trusts what it finds (it broadcasts the bytes again, it takes the next
 * nonce after the last), so an entry is checked whole before any store takes it, from a commit or a dump.
 */

const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/
const STATUSES = new Set(['signed', 'sent', 'mined'])

/** A nonce is a key: a non-negative safe integer. */
export function checkJournalNonce(nonce: unknown, what = 'journal nonce'): number {
  if (typeof nonce !== 'number' || !Number.isSafeInteger(nonce) || nonce < 0) throw new StorageError(`invalid ${what}: ${String(nonce)}`)
  return nonce
}

export function checkJournalEntry(entry: JournalEntry): void {
  if (!isRecord(entry)) throw new StorageError('invalid journal entry: not a record')
  const nonce = checkJournalNonce(entry.nonce)
  const what = (field: string) => `journal entry ${nonce} ${field}`
  const call = entry.call
  if (!isRecord(call)) throw new StorageError(`invalid ${what('call')}: not a record`)
  if (call.to !== undefined && (typeof call.to !== 'string' || !isAddress(call.to, { strict: false })))
    throw new StorageError(`invalid ${what('call.to')}: ${String(call.to)}`)
  checkHex(call.data, what('call.data'))
  if (call.value !== undefined) checkUint(call.value, maxUint256, what('call.value'))
  if (typeof call.description !== 'string') throw new StorageError(`invalid ${what('call.description')}: not a string`)
  checkUint(entry.gas, maxUint64, what('gas'))
  if (entry.deadline !== undefined) checkUint(entry.deadline, maxUint64, what('deadline'))
  if (!Array.isArray(entry.attempts)) throw new StorageError(`invalid ${what('attempts')}: not a list`)
  for (const [i, a] of entry.attempts.entries()) checkAttempt(a, what(`attempt ${i}`))
  if (!STATUSES.has(entry.status)) throw new StorageError(`invalid ${what('status')}: ${String(entry.status)}`)
  if (entry.mined !== undefined) {
    if (!isRecord(entry.mined)) throw new StorageError(`invalid ${what('mined')}: not a record`)
    checkHash(entry.mined.hash, what('mined.hash'))
    checkUint(entry.mined.blockNumber, maxUint64, what('mined.blockNumber'))
    checkHash(entry.mined.blockHash, what('mined.blockHash'))
  }
  if (typeof entry.createdAt !== 'number' || !Number.isFinite(entry.createdAt))
    throw new StorageError(`invalid ${what('createdAt')}: ${String(entry.createdAt)}`)
}

function checkAttempt(a: JournalAttempt, what: string): void {
  if (!isRecord(a)) throw new StorageError(`invalid ${what}: not a record`)
  checkHash(a.hash, `${what} hash`)
  if (checkHex(a.raw, `${what} raw`) === '0x') throw new StorageError(`invalid ${what} raw: empty`)
  const fees = a.fees
  if (!isRecord(fees)) throw new StorageError(`invalid ${what} fees: not a record`)
  if ('gasPrice' in fees) checkUint(fees.gasPrice, maxUint256, `${what} gasPrice`)
  else {
    checkUint(fees.maxFeePerGas, maxUint256, `${what} maxFeePerGas`)
    checkUint(fees.maxPriorityFeePerGas, maxUint256, `${what} maxPriorityFeePerGas`)
  }
  checkUint(a.signedAtBlock, maxUint64, `${what} signedAtBlock`)
}

function checkHex(value: unknown, what: string): string {
  if (typeof value !== 'string' || !EVEN_HEX.test(value)) throw new StorageError(`invalid ${what}: not 0x hex of whole bytes`)
  return value
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The order of the journal wherever it is listed (load, dump): by nonce. */
export const byNonce = (a: JournalEntry, b: JournalEntry): number => a.nonce - b.nonce
