import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { decode, encode, openServiceStore } from '../../../src/storage/serviceLevelStore.ts'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-service-store-'))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const owner = { chainId: 'chain', contract: 'contract', address: 'service' }
const meta = (schema: number, address = '0xaa') => ({ schema, chainId: 31337, contract: '0xcc', address })
const open = (location: string, schema: number, address?: string) =>
  openServiceStore(location, { meta: meta(schema, address), owner, load: async (db) => db.get('x') })

describe("a service's LevelDB store", () => {
  test('what is written survives a reopen; a second open while it is open is refused (STORAGE_LOCKED)', async () => {
    const location = join(tempDir(), 'store')
    const { db } = await open(location, 1)
    await db.put('x', encode({ amount: 5n }), { sync: true })
    await expect(open(location, 1)).rejects.toMatchObject({ code: 'STORAGE_LOCKED' })
    await db.close()
    const again = await open(location, 1)
    expect(decode(again.loaded!)).toEqual({ amount: 5n })
    await again.db.close()
  })

  test("another owner's store is refused, saying whose it is; a newer schema is refused (STORAGE_VERSION); an older one takes this code's number", async () => {
    const location = join(tempDir(), 'store')
    await (await open(location, 1)).db.close()
    await expect(open(location, 1, '0xbb')).rejects.toMatchObject({
      code: 'STORAGE',
      message: expect.stringContaining('belongs to chain 31337, contract 0xcc, service 0xaa'),
    })
    await (await open(location, 2)).db.close()
    await expect(open(location, 1)).rejects.toMatchObject({ code: 'STORAGE_VERSION' })
    const { db } = await open(location, 2)
    expect(decode((await db.get('meta')) as Uint8Array)).toEqual(meta(2))
    await db.close()
  })

  test('a failed load closes the database: the store opens again at once', async () => {
    const location = join(tempDir(), 'store')
    const failing = openServiceStore(location, {
      meta: meta(1),
      owner,
      load: async () => {
        throw new Error('a record that cannot be read')
      },
    })
    await expect(failing).rejects.toMatchObject({ code: 'STORAGE', message: expect.stringContaining('a record that cannot be read') })
    await (await open(location, 1)).db.close()
  })
})
