import { jsonStringify } from '../../storage/json.ts'
import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'

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
          'The whole store as JSON (format "sluice-dump": meta, snapshot, the change log after it, payment history, events, chain events, outbox, pending transactions, sent proofs and locks, the partner\'s messages we applied), read at one point in time. Integers too large for JSON numbers are written as {"$bigint": "<decimal>"}.',
          'Restore it with `sluice serve --import FILE` (on the same chain, registry and address only; a dump older than the store is refused). It holds the secrets of pending payments but never the private key: keep it safe.',
        ].join('\n\n'),
        responses: { 200: 'the dump, as an attachment' },
        schema: {
          type: 'object',
          required: ['format', 'meta', 'changes', 'events', 'payments', 'chainEvents', 'outbox', 'transactions'],
          properties: {
            format: { const: 'sluice-dump' },
            meta: { type: 'object', required: ['chainId', 'registry', 'address', 'schemaVersion', 'syncedBlock', 'createdAt'] },
            snapshot: { type: 'object' },
            ...Object.fromEntries(
              ['changes', 'events', 'payments', 'chainEvents', 'outbox', 'transactions', 'sentProofs', 'sentLocks', 'received'].map((k) => [
                k,
                { type: 'array', items: { type: 'object' } },
              ]),
            ),
          },
        },
      },
      handler: async (c) => {
        const dump = await ctx().client.store.exportDump()
        const name = `sluice-state-${dump.meta.chainId}-${dump.meta.address.toLowerCase()}-block${dump.meta.syncedBlock}.json`
        return c.body(jsonStringify(dump), 200, { 'content-type': 'application/json', 'content-disposition': `attachment; filename="${name}"` })
      },
    },
  })
}
