// The stored-payments curve in a page (bench/curves.ts): the page's node store in IndexedDB padded with copies of
// the rows its real payments left, through the Storage port, while the node is stopped. Built for the browser into
// the bench's site (bench/browserStage.ts); the page imports it and calls these with what its node exported.
import { openIdbStorage } from '../src/storage/idbStorage.ts'
import { jsonParse, jsonStringify } from '../src/storage/json.ts'
import type { StorageDump } from '../src/storage/storage.ts'
import { pad, padSeqBase, paymentShape, type PaymentShape, rowCounts } from './padding.ts'

/** Row counts of a node's export: what `shape` is given as `before`. */
export function counts(dump: StorageDump): Record<string, number> {
  return rowCounts(dump)
}

export type PageShape = { shape: PaymentShape; seqBase: number; identity: StorageDump['meta'] }

/**
 * What `payments` real payments left since `before`, as lossless JSON (the page keeps it across reloads in Node's
 * hands); a row's size is its JSON's length, as IndexedDB has no byte count of its own.
 */
export function shape(dump: StorageDump, before: Record<string, number>, payments: number): string {
  const measured = paymentShape(dump, before, payments, (row) => jsonStringify(row).length)
  return jsonStringify({ shape: measured, seqBase: padSeqBase(dump), identity: dump.meta } satisfies PageShape)
}

/** Pads payments [from, to) into the node's IndexedDB store (its node stopped); resolves with the milliseconds taken. */
export async function padStore(shapeText: string, from: number, to: number): Promise<number> {
  const { shape, seqBase, identity } = jsonParse(shapeText) as PageShape
  const storage = await openIdbStorage({ chainId: identity.chainId, registry: identity.registry, address: identity.address }, { persist: false })
  const t0 = performance.now()
  try {
    await pad(storage, shape, seqBase, from, to)
    return performance.now() - t0
  } finally {
    await storage.close()
  }
}
