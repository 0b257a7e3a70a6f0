import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import type { JournalEntry } from '../../../src/chain/transactionJournal.ts'
import { fileJournal } from '../../../src/devnet/fileJournal.ts'

const dir = mkdtempSync(join(tmpdir(), 'sluice-journal-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const entry = (nonce: number, more: Partial<JournalEntry> = {}): JournalEntry => ({
  nonce,
  call: { data: '0x6080', value: 10n ** 30n, description: `create step ${nonce}` },
  gas: 4_711_821n,
  attempts: [
    { hash: `0x${'ab'.repeat(32)}`, raw: '0x02f8', fees: { maxFeePerGas: 2n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n }, signedAtBlock: 2n ** 70n },
  ],
  status: 'sent',
  createdAt: 1_700_000_000_000,
  ...more,
})

describe('fileJournal', () => {
  test('keeps entries across instances (a restarted process), bigints and all, in nonce order; an empty journal is no file', async () => {
    const path = join(dir, 'deployment.json.journal.json')
    const journal = fileJournal(path)
    expect(await journal.load()).toEqual([])
    await journal.put(entry(7))
    await journal.put(entry(5, { status: 'mined', mined: { hash: `0x${'cd'.repeat(32)}`, blockNumber: 12n, blockHash: `0x${'ef'.repeat(32)}` } }))
    await journal.put(entry(7, { status: 'mined' }))

    const reopened = fileJournal(path)
    expect(await reopened.load()).toEqual([
      entry(5, { status: 'mined', mined: { hash: `0x${'cd'.repeat(32)}`, blockNumber: 12n, blockHash: `0x${'ef'.repeat(32)}` } }),
      entry(7, { status: 'mined' }),
    ])
    // A creation's call has no `to`; the file says bigints as such, never as numbers that would lose digits.
    expect(readFileSync(path, 'utf8')).toContain('"$bigint": "1000000000000000000000000000000"')
    await reopened.delete(5)
    await reopened.delete(9)
    expect((await fileJournal(path).load()).map((e) => e.nonce)).toEqual([7])
    await reopened.delete(7)
    expect(existsSync(path)).toBe(false)
  })

  test('what load returns is a copy: changing it changes nothing kept', async () => {
    const journal = fileJournal(join(dir, 'copy.json'))
    await journal.put(entry(1))
    const [loaded] = await journal.load()
    loaded!.status = 'mined'
    expect((await journal.load())[0]!.status).toBe('sent')
  })

  test('concurrent puts all land, the last of one nonce winning', async () => {
    const path = join(dir, 'concurrent.json')
    const journal = fileJournal(path)
    await Promise.all([1, 2, 3, 4, 5].map((n) => journal.put(entry(n))).concat(journal.put(entry(3, { status: 'mined' }))))
    const loaded = await fileJournal(path).load()
    expect(loaded.map((e) => [e.nonce, e.status])).toEqual([
      [1, 'sent'],
      [2, 'sent'],
      [3, 'mined'],
      [4, 'sent'],
      [5, 'sent'],
    ])
  })

  test('a file that is not a journal is refused with JOURNAL_FILE, naming it', async () => {
    const broken = join(dir, 'broken.json')
    writeFileSync(broken, '{"entries": [')
    await expect(fileJournal(broken).load()).rejects.toMatchObject({ code: 'JOURNAL_FILE', message: expect.stringContaining(broken) })
    const other = join(dir, 'other.json')
    writeFileSync(other, '{"version": 9, "entries": []}')
    await expect(fileJournal(other).put(entry(1))).rejects.toMatchObject({
      code: 'JOURNAL_FILE',
      message: `transaction journal ${other}: not a journal this version of sluice writes`,
    })
  })
})
