import { checkSeq } from './checkCommit.ts'
import { StorageError, type ChainEventQuery, type PaymentQuery, type PaymentRecord, type StoredChainEvent } from './storage.ts'

/** A checked page: `limit` is Infinity when the caller gave none. */
export type Page = { offset: number; limit: number }

export function checkPage(query: { limit?: number; offset?: number }): Page {
  return {
    offset: query.offset === undefined ? 0 : checkSeq(query.offset, 'offset'),
    limit: query.limit === undefined ? Infinity : checkSeq(query.limit, 'limit'),
  }
}

/** The inclusive block span of a chain event query, clamped to what can be stored; undefined when it is empty. */
export function blockSpan(query: ChainEventQuery): { from: number; to: number } | undefined {
  for (const bound of [query.fromBlock, query.toBlock]) {
    if (bound !== undefined && typeof bound !== 'bigint') throw new StorageError(`block bounds must be bigints, not ${typeof bound}`)
  }
  const max = BigInt(Number.MAX_SAFE_INTEGER)
  const from = query.fromBlock === undefined || query.fromBlock < 0n ? 0n : query.fromBlock
  const to = query.toBlock === undefined || query.toBlock > max ? max : query.toBlock
  return from > to ? undefined : { from: Number(from), to: Number(to) }
}

export function chainEventMatches(event: StoredChainEvent, query: ChainEventQuery): boolean {
  return (
    (query.address === undefined || event.address.toLowerCase() === query.address.toLowerCase()) &&
    (query.tokenNetwork === undefined || event.tokenNetwork?.toLowerCase() === query.tokenNetwork.toLowerCase()) &&
    (query.channelId === undefined || event.channelId === query.channelId) &&
    (query.fromBlock === undefined || event.blockNumber >= query.fromBlock) &&
    (query.toBlock === undefined || event.blockNumber <= query.toBlock)
  )
}

export function paymentMatches(payment: PaymentRecord, query: PaymentQuery): boolean {
  return (
    (query.token === undefined || payment.token.toLowerCase() === query.token.toLowerCase()) &&
    (query.partner === undefined || payment.partner.toLowerCase() === query.partner.toLowerCase())
  )
}
