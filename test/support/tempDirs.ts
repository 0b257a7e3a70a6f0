import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

/**
 * A test file's temporary directories: each call of the function returned makes a new one named `prefix…`, and all
 * are removed when the file is done. Call it at the top of the file, before the file's own afterAll: vitest runs
 * after-hooks in reverse (sequence.hooks 'stack'), so the file's hook stops what runs in the directories first.
 */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = []
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    dirs.push(dir)
    return dir
  }
}
