import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CliError, UsageError } from './cliError.ts'

/** An account as `--address` gives it: 0x and 40 hex digits, in any case (compared in lower case). */
export function parseAddress(raw: string): `0x${string}` | undefined {
  return /^0x[0-9a-fA-F]{40}$/.test(raw) ? (raw as `0x${string}`) : undefined
}

/** The directory holds no keystore for the account asked for, or none at all: exit code 2. */
export class KeystoreNotFoundError extends CliError {
  override name = 'KeystoreNotFoundError' as const
  override readonly code = 'KEYSTORE_NOT_FOUND' as const
  constructor(message: string) {
    super(message, 2)
  }
}

/** More than one keystore in the directory could be meant: which one is for the operator to say. */
export class AmbiguousKeystoreError extends UsageError {
  override name = 'AmbiguousKeystoreError' as const
  override readonly code = 'AMBIGUOUS_KEYSTORE' as const
}

/** A keystore file of the directory and the account its JSON names, `0x` and lower case. */
export type KeystoreFile = { file: string; address: `0x${string}` }

/**
 * The keystore files in `dir`, as Raiden's `--keystore-path` reads it: the files directly in it (not in its
 * subdirectories) that hold a JSON object with an `address`; anything else there is skipped (geth keeps other files
 * beside its keystores). Sorted by file name, so geth's UTC--<time>-- names come in the order they were made.
 */
export async function listKeystores(dir: string): Promise<KeystoreFile[]> {
  let entries: import('node:fs').Dirent[]
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch (e) {
    throw new KeystoreNotFoundError(`cannot read the keystore directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
  const found: KeystoreFile[] = []
  for (const entry of entries.filter((e) => e.isFile()).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const file = join(dir, entry.name)
    try {
      const json = JSON.parse(await readFile(file, 'utf8')) as unknown
      const address = typeof json === 'object' && json !== null ? (json as { address?: unknown }).address : undefined
      const hex = typeof address === 'string' ? `0x${address.replace(/^0x/i, '').toLowerCase()}` : ''
      if (parseAddress(hex)) found.push({ file, address: hex as `0x${string}` })
    } catch {
      // Not JSON or not readable: not a keystore.
    }
  }
  return found
}

/**
 * The keystore file in `dir` for `address`, as Raiden picks it with `--keystore-path DIR --address ADDRESS`: the one
 * whose JSON `address` is the account's. Without `address`, the directory's only keystore (Raiden asks on the
 * terminal which one; a server has no one to ask). Two files for the same account are refused, not one picked.
 */
export async function findKeystore(dir: string, address: `0x${string}` | undefined): Promise<string> {
  const keystores = await listKeystores(dir)
  const accounts = [...new Set(keystores.map((k) => k.address))]
  const held = accounts.length > 0 ? ` (it holds keystores of ${accounts.join(', ')})` : ''
  if (address === undefined) {
    if (keystores.length === 0) throw new KeystoreNotFoundError(`no keystore files in the keystore directory ${dir}`)
    if (keystores.length > 1) throw new AmbiguousKeystoreError(`the keystore directory ${dir} holds ${keystores.length} keystores: give --address${held}`)
    return keystores[0]!.file
  }
  const matching = keystores.filter((k) => k.address === address.toLowerCase())
  if (matching.length === 0) throw new KeystoreNotFoundError(`no keystore file for ${address} in the keystore directory ${dir}${held}`)
  if (matching.length > 1)
    throw new AmbiguousKeystoreError(`${matching.map((k) => k.file).join(' and ')} are keystores of the same account ${address}: give one with --keystore FILE`)
  return matching[0]!.file
}
