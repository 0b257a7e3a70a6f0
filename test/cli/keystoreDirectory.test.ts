import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { encryptKeystore, type Keystore } from '../../src/chain/keystore.ts'
import { AmbiguousKeystoreError, findKeystore, KeystoreNotFoundError, listKeystores, parseAddress } from '../../src/cli/keystoreDirectory.ts'
import { loadPrivateKey } from '../../src/cli/serve.ts'

const keys = [`0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`] as Hex[]
const [a, b] = keys.map((k) => privateKeyToAddress(k))
const cheap = { n: 16, r: 1, p: 1 }

const dirs: string[] = []
function dirWith(files: Record<string, string | Keystore>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-keystores-'))
  dirs.push(dir)
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content))
  return dir
}

let ka: Keystore
let kb: Keystore
beforeAll(async () => {
  ka = await encryptKeystore(keys[0]!, 'pw', cheap)
  kb = await encryptKeystore(keys[1]!, 'pw', cheap)
})
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

test('parseAddress takes 0x and 40 hex digits in any case', () => {
  expect(parseAddress(a!)).toBe(a)
  expect(parseAddress(a!.toLowerCase())).toBe(a!.toLowerCase())
  for (const bad of [a!.slice(2), `${a}0`, '0x12', 'alice']) expect(parseAddress(bad)).toBeUndefined()
})

describe('listKeystores', () => {
  test("reads the files directly in the directory that name an address, and skips the rest, as Raiden's --keystore-path", () => {
    const dir = dirWith({
      'UTC--2--b': kb,
      'UTC--1--a': { ...ka, address: `0x${ka.address.toUpperCase()}` },
      'notes.txt': 'not JSON',
      'list.json': '[1, 2]',
      'other.json': '{"version": 3}',
    })
    mkdirSync(join(dir, 'sub'))
    writeFileSync(join(dir, 'sub', 'UTC--3--a'), JSON.stringify(ka))
    return expect(listKeystores(dir)).resolves.toEqual([
      { file: join(dir, 'UTC--1--a'), address: a!.toLowerCase() },
      { file: join(dir, 'UTC--2--b'), address: b!.toLowerCase() },
    ])
  })
})

describe('findKeystore', () => {
  test('picks the file whose address is --address, whatever the case of either', async () => {
    const dir = dirWith({ one: ka, two: kb })
    expect(await findKeystore(dir, b as `0x${string}`)).toBe(join(dir, 'two'))
    expect(await findKeystore(dir, a!.toLowerCase() as `0x${string}`)).toBe(join(dir, 'one'))
  })

  test('without --address, the only keystore of the directory; with several, it asks for --address', async () => {
    expect(await findKeystore(dirWith({ one: ka, 'readme.md': '# keys' }), undefined)).toMatch(/one$/)
    const two = findKeystore(dirWith({ one: ka, two: kb }), undefined)
    await expect(two).rejects.toBeInstanceOf(AmbiguousKeystoreError)
    await expect(two).rejects.toThrow(`holds 2 keystores: give --address (it holds keystores of ${a!.toLowerCase()}, ${b!.toLowerCase()})`)
  })

  test('refuses an account it holds no keystore for, an empty or missing directory, and two files of one account', async () => {
    const missing = findKeystore(dirWith({ one: ka }), b as `0x${string}`)
    await expect(missing).rejects.toBeInstanceOf(KeystoreNotFoundError)
    await expect(missing).rejects.toThrow(`no keystore file for ${b} in the keystore directory`)
    await expect(findKeystore(dirWith({ 'a.txt': 'x' }), undefined)).rejects.toThrow(/^no keystore files in the keystore directory /)
    await expect(findKeystore('/nonexistent/keystore', undefined)).rejects.toThrow('cannot read the keystore directory /nonexistent/keystore: ENOENT')
    const twice = findKeystore(dirWith({ one: ka, copy: ka }), a as `0x${string}`)
    await expect(twice).rejects.toBeInstanceOf(AmbiguousKeystoreError)
    await expect(twice).rejects.toThrow(/are keystores of the same account .*: give one with --keystore FILE/)
  })
})

describe('loadPrivateKey with --keystore-path', () => {
  test('decrypts the keystore of --address with the password file', async () => {
    const dir = dirWith({ one: ka, two: kb, pw: 'pw\n' })
    expect(await loadPrivateKey({ keystorePath: dir, address: b as `0x${string}`, passwordFile: join(dir, 'pw') })).toBe(keys[1])
  })

  test('refuses a file whose key is not the account its JSON names', async () => {
    const dir = dirWith({ liar: { ...ka, address: b!.slice(2).toLowerCase() }, pw: 'pw\n' })
    await expect(loadPrivateKey({ keystorePath: dir, address: b as `0x${string}`, passwordFile: join(dir, 'pw') })).rejects.toThrow(
      `${join(dir, 'liar')} names the account ${b} but holds the key of ${a}`,
    )
  })

  test('goes with neither --key nor --keystore, and --address goes only with it', async () => {
    await expect(loadPrivateKey({ key: keys[0], keystorePath: '/k' })).rejects.toThrow('give either --key or --keystore-path, not both')
    await expect(loadPrivateKey({ keystore: '/k.json', keystorePath: '/k' })).rejects.toThrow('give either --keystore or --keystore-path, not both')
    await expect(loadPrivateKey({ keystore: '/k.json', address: a as `0x${string}` })).rejects.toThrow('--address goes with --keystore-path')
    await expect(loadPrivateKey({ passwordFile: '/p' })).rejects.toThrow('--password-file goes with --keystore or --keystore-path')
  })
})
