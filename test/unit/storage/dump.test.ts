import { expect, test } from 'vitest'
import { checkDump, progressOf } from '../../../src/storage/dump.ts'
import { initialMeta } from '../../../src/storage/meta.ts'
import { DumpRejectedError, type StorageDump } from '../../../src/storage/storage.ts'
import { change, newIdentity, snapshot } from './support/records.ts'

const identity = newIdentity()
const meta = { ...initialMeta(identity), syncedBlock: 10n }
const empty: StorageDump = { format: 'sluice-dump', meta, changes: [], events: [], payments: [], chainEvents: [], outbox: [], transactions: [] }

test('progress is the later of the snapshot and the last change, -1 for an empty store', () => {
  expect(progressOf(undefined, undefined)).toBe(-1)
  expect(progressOf(5, undefined)).toBe(5)
  expect(progressOf(5, 9)).toBe(9)
  expect(progressOf(9, 5)).toBe(9)
})

test('a dump at least as far as the store, of the same node, is accepted as it is', () => {
  const dump = { ...empty, snapshot: snapshot(4, identity.address), changes: [change(5)] }
  expect(checkDump(dump, identity, { meta, progress: 5 })).toBe(dump)
  expect(checkDump(dump, identity, { meta, progress: -1 })).toBe(dump)
  // The snapshot alone counts: changes pruned into it are not missing.
  expect(() => checkDump({ ...empty, snapshot: snapshot(7, identity.address) }, identity, { meta, progress: 6 })).not.toThrow()
})

test('a dump behind the store in changes or in synced block is refused', () => {
  expect(() => checkDump({ ...empty, changes: [change(5)] }, identity, { meta, progress: 6 })).toThrow(DumpRejectedError)
  expect(() => checkDump({ ...empty, changes: [change(5)] }, identity, { meta: { ...meta, syncedBlock: 11n }, progress: 5 })).toThrow(/block/)
})

test('the refusal says whose the dump is', () => {
  const other = newIdentity()
  expect(() => checkDump({ ...empty, meta: { ...meta, registry: other.registry } }, identity, { meta, progress: -1 })).toThrow(/another token network registry/)
  expect(() => checkDump({ ...empty, meta: { ...meta, chainId: 1n } }, identity, { meta, progress: -1 })).toThrow(/another chain/)
  expect(() => checkDump(null, identity, { meta, progress: -1 })).toThrow(/not a Sluice dump/)
})
