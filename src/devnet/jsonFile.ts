import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { jsonParse, jsonStringify } from '../storage/json.ts'

/**
 * A small JSON file that keeps bigints (`{"$bigint": "..."}`, src/storage/json.ts), written whole to a temporary
 * file and renamed over the old one, so a crash leaves the old file or the new one, never half of one.
 */

/** The file's value, or undefined when there is none. Throws SyntaxError when it is not JSON. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw e
  }
  return jsonParse(text)
}

export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, `${jsonStringify(value, 2)}\n`, { flush: true })
  await rename(temporary, path)
}

export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true })
}

/** Runs writes one after the other, in call order, whoever calls: a later write never lands before an earlier one. */
export function serialized(): <T>(write: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve()
  return (write) => {
    const next = tail.then(write, write)
    tail = next.catch(() => {})
    return next
  }
}
