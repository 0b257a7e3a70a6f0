import { spawn } from 'node:child_process'
import type { JournalEntry } from '../../src/chain/transactionJournal.ts'
import { journalEntry } from '../unit/storage/support/records.ts'

/**
 * For the tests that kill a process writing a transaction journal (the node's, the monitoring service's): the
 * children write as a queue does, one write after another, and print a line once each has resolved.
 */

/** Writes `journal` as a queue does, printing a line once each write has resolved, until the process is killed. */
export async function writeUntilKilled(journal: { load(): Promise<JournalEntry[]>; put(e: JournalEntry): Promise<void>; delete(n: number): Promise<void> }) {
  let nonce = ((await journal.load()).at(-1)?.nonce ?? -1) + 1
  // Each transaction's entry put before its broadcast, put again with a second attempt, the one two nonces back deleted.
  for (;;) {
    await journal.put(journalEntry(nonce))
    process.stdout.write(`put ${nonce}\n`)
    await journal.put(journalEntry(nonce, 2))
    process.stdout.write(`put ${nonce} 2\n`)
    if (nonce >= 2) {
      await journal.delete(nonce - 2)
      process.stdout.write(`delete ${nonce - 2}\n`)
    }
    nonce++
  }
}

/** The journal after the first `count` writes of `writeUntilKilled` from an empty one. */
export function journalAfterWrites(count: number): JournalEntry[] {
  const model = new Map<number, JournalEntry>()
  let done = 0
  for (let n = 0; done < count; n++) {
    model.set(n, journalEntry(n))
    if (++done === count) break
    model.set(n, journalEntry(n, 2))
    if (++done === count) break
    if (n >= 2) {
      model.delete(n - 2)
      done++
    }
  }
  return [...model.values()].sort((a, b) => a.nonce - b.nonce)
}

/** Runs `script` (with tsx, from the repository root) and kills it with SIGKILL once it printed `lines` lines; gives them. */
export async function killAfterLines(script: string, args: string[], lines: number): Promise<string[]> {
  const repoRoot = new URL('../../', import.meta.url).pathname
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] })
  const seen: string[] = []
  let partial = ''
  proc.stdout.setEncoding('utf8')
  proc.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop()!
    seen.push(...parts)
    if (seen.length >= lines) proc.kill('SIGKILL')
  })
  await new Promise<void>((resolve, reject) => {
    proc.on('error', reject)
    proc.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`the child ended with ${signal ?? `exit code ${code}`}`))))
  })
  return seen
}
