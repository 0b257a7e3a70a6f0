import { maxUint64 } from 'viem'
import { checkChannelKey, checkUint } from './sentRecords.ts'
import { StorageError, type ReceivedRecord } from './storage.ts'

/**
 * What the adapters share about the partner's messages we applied, kept by channel and nonce (in LevelDB and
 * IndexedDB keys the nonce is padded with padNonce, so one channel's records are one key range in nonce order):
 * their checks, the checked query, and their order in a dump.
 */

const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/

export function checkReceived(r: ReceivedRecord): void {
  checkChannelKey(r?.channelKey, 'received channelKey')
  if (checkUint(r.nonce, maxUint64, 'received nonce') === 0n) throw new StorageError('invalid received nonce: 0 (nonces start at 1)')
  if (typeof r.type !== 'string' || r.type === '') throw new StorageError(`invalid received type: ${String(r.type)}`)
  if (typeof r.signed !== 'string' || !EVEN_HEX.test(r.signed)) throw new StorageError('invalid received signed bytes: not 0x hex of whole bytes')
  if (typeof r.signature !== 'string' || !SIGNATURE.test(r.signature)) throw new StorageError(`invalid received signature: ${String(r.signature)}`)
}

/**
 * The checked arguments of a `receivedMessage` query, or undefined when no record can be kept under `nonce`
 * (0, negative, or above uint64).
 */
export function receivedQuery(channelKey: unknown, nonce: unknown): { channelKey: string; nonce: bigint } | undefined {
  checkChannelKey(channelKey)
  if (typeof nonce !== 'bigint') throw new StorageError(`the nonce must be a bigint, not ${typeof nonce}`)
  if (nonce < 1n || nonce > maxUint64) return undefined
  return { channelKey: channelKey as string, nonce }
}

/** The order of received records in a dump: by channel, then nonce. */
export function byReceivedKey(a: ReceivedRecord, b: ReceivedRecord): number {
  if (a.channelKey !== b.channelKey) return a.channelKey < b.channelKey ? -1 : 1
  return a.nonce < b.nonce ? -1 : a.nonce > b.nonce ? 1 : 0
}
