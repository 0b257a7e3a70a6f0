import type { JournalEntry, TransactionJournal } from '../chain/transactionJournal.ts'
import { SluiceError } from '../errors.ts'
import { readJsonFile, removeFile, serialized, writeJsonFile } from './jsonFile.ts'

/**
 * A transaction journal in one JSON file (src/chain/transactionJournal.ts): what `sluice deploy` keeps next to its
 * deployment file, so that a deployment run again after a crash finds every transaction it signed. Node only.
 * Each put or delete rewrites the file (temporary file, then rename): a deployment has a dozen entries at most.
 */

export class JournalFileError extends SluiceError {
  override name = 'JournalFileError' as const
  override readonly code = 'JOURNAL_FILE' as const
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`transaction journal ${path}: ${message}`)
  }
}

type JournalFile = { version: 1; entries: JournalEntry[] }

export function fileJournal(path: string): TransactionJournal & { readonly path: string } {
  const write = serialized()
  let entries: Map<number, JournalEntry> | undefined

  async function loaded(): Promise<Map<number, JournalEntry>> {
    if (entries) return entries
    let value: unknown
    try {
      value = await readJsonFile(path)
    } catch (e) {
      throw new JournalFileError(path, `not valid JSON (${(e as Error).message})`)
    }
    const file = (value ?? { version: 1, entries: [] }) as Partial<JournalFile>
    if (file.version !== 1 || !Array.isArray(file.entries)) throw new JournalFileError(path, 'not a journal this version of sluice writes')
    entries = new Map(file.entries.map((e) => [e.nonce, e]))
    return entries
  }

  async function save(all: Map<number, JournalEntry>): Promise<void> {
    // An empty journal is no file: nothing is under way.
    if (all.size === 0) return removeFile(path)
    const file: JournalFile = { version: 1, entries: [...all.values()].sort((a, b) => a.nonce - b.nonce) }
    await writeJsonFile(path, file)
  }

  return {
    path,
    load: () => write(async () => [...(await loaded()).values()].sort((a, b) => a.nonce - b.nonce).map((e) => structuredClone(e))),
    put: (entry) =>
      write(async () => {
        const all = await loaded()
        all.set(entry.nonce, structuredClone(entry))
        await save(all)
      }),
    delete: (nonce) =>
      write(async () => {
        const all = await loaded()
        if (!all.delete(nonce)) return
        await save(all)
      }),
  }
}
