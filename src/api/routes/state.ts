import * as v from 'valibot'
import { jsonStringify } from '../../storage/json.ts'
import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'
import { addressString as address } from '../schema.ts'

/** An integer too large for a JSON number, as the dump writes every bigint (src/storage/json.ts). */
const bigintJson = v.pipe(v.object({ $bigint: v.pipe(v.string(), v.regex(/^-?[0-9]+$/)) }), v.description('a bigint, as {"$bigint": "<decimal>"}'))
const count = v.pipe(v.number(), v.integer(), v.minValue(0))
/**
 * A stored record: what each holds is the store's own format, versioned by meta.schemaVersion (a dump of an older
 * store is migrated when imported), so it is left open here; the records of the change log and the events are
 * ordered by their `seq`.
 */
const record = v.record(v.string(), v.unknown())
const numbered = v.objectWithRest({ seq: count, time: v.pipe(v.number(), v.description('unix ms')) }, v.unknown())

/** GET /_state/export's answer (StorageDump as src/storage/json.ts writes it): its envelope exactly, its records open. */
export const stateDumpSchema = v.object({
  format: v.literal('sluice-dump'),
  meta: v.object({
    chainId: bigintJson,
    registry: address,
    address,
    schemaVersion: v.pipe(count, v.description("the store's format: a newer one than the importing node's is refused")),
    syncedBlock: bigintJson,
    recentBlocks: v.optional(
      v.pipe(
        v.array(v.object({ number: bigintJson, hash: v.string(), timestamp: v.optional(bigintJson) })),
        v.description('hashes of the last synced blocks, checked at the next start for a reorg meanwhile (docs/decisions/0055)'),
      ),
    ),
    createdAt: v.pipe(v.number(), v.description('unix ms')),
  }),
  snapshot: v.optional(v.object({ seq: count, state: record })),
  changes: v.array(numbered),
  events: v.array(numbered),
  payments: v.array(numbered),
  chainEvents: v.array(record),
  outbox: v.array(record),
  transactions: v.array(record),
  sentProofs: v.optional(v.array(record)),
  sentLocks: v.optional(v.array(record)),
  received: v.optional(v.array(record)),
  chainTransactions: v.optional(v.array(record)),
})

/**
 * GET /_state/export: the node's whole store as one JSON document (backup; docs/decisions/0008-state-import-at-start-export-over-the-api.md). Import is not an API
 * call: the running engine holds the state in memory, derived from the store at start, together with its
 * delivery queue and pending transactions; replacing the store under it would lose or contradict signed balance
 * proofs. A dump is therefore imported when the node starts (`sluice serve --import FILE`), before the store is
 * read, and the store itself refuses a dump of another chain, registry or address, or one older than itself.
 */
export function stateRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/_state/export', {
    GET: {
      doc: {
        summary: "A backup of the node's whole state",
        description: [
          'The whole store as JSON (format "sluice-dump": meta, snapshot, the change log after it, payment history, events, chain events, outbox, pending transactions, sent proofs and locks, the partner\'s messages we applied, the account\'s transaction journal), read at one point in time. Integers too large for JSON numbers are written as {"$bigint": "<decimal>"}.',
          'Restore it with `sluice serve --import FILE` (on the same chain, registry and address only; a dump older than the store is refused). It holds the secrets of pending payments but never the private key: keep it safe.',
        ].join('\n\n'),
        responses: { 200: 'the dump, as an attachment' },
        schema: stateDumpSchema,
      },
      handler: async (c) => {
        const dump = await ctx().client.store.exportDump()
        const name = `sluice-state-${dump.meta.chainId}-${dump.meta.address.toLowerCase()}-block${dump.meta.syncedBlock}.json`
        return c.body(jsonStringify(dump), 200, { 'content-type': 'application/json', 'content-disposition': `attachment; filename="${name}"` })
      },
    },
  })
}
