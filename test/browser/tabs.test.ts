// Every tab of the origin uses the one node (real tabs of the same browser context, opened by the test's
// commands): the first tab to start leads and runs it; another tab's startNode and fetch use it; when the
// leader's tab closes, a waiting tab takes over from IndexedDB and answers its pending requests.
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { decryptKeystore, type Keystore } from '../../src/chain/keystore.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')

type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; message: string }
type Fetched = { status: number; body: unknown }

async function inTab<T>(id: string, method: string, ...args: unknown[]): Promise<T> {
  const outcome = await commands.inTab<Outcome<T>>(id, method, args)
  if (!outcome.ok) throw Object.assign(new Error(`${method} in ${id}: ${outcome.message}`), { code: outcome.code })
  return outcome.value
}

async function nodeOptions() {
  const key = generatePrivateKey()
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address: privateKeyToAddress(key), value: parseEther('1') })
  return { key, address: privateKeyToAddress(key), options: { rpc, deployment, key, confirmations: 0, pollingInterval: 50, environment: 'development' } }
}

afterEach(async () => {
  await commands.closeAllTabs()
})

test('a second tab uses the first tab’s node; closing the first moves the node and answers the request it was waiting on', async () => {
  const { address, options } = await nodeOptions()
  const first = await commands.openTab()
  expect(await inTab(first, 'start', options)).toEqual({ leader: true })
  const second = await commands.openTab()
  expect(await inTab(second, 'start', options)).toEqual({ leader: false })
  expect(await inTab<Fetched>(second, 'fetch', '/api/v1/address')).toEqual({ status: 200, body: { our_address: address } })
  // This test's own page is a third client of the same node, through the same service worker.
  expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: address })

  await commands.closeTab(first)
  // Asked while the node moves: answered by the second tab's node once it has taken over, not dropped.
  const during = await inTab<Fetched>(second, 'fetch', '/api/v1/channels')
  expect(during).toEqual({ status: 200, body: [] })
  expect(await inTab(second, 'leader')).toBe(true)
  expect(await inTab<Fetched>(second, 'fetch', '/api/v1/address')).toEqual({ status: 200, body: { our_address: address } })
}, 60_000)

test('a hard reload (which bypasses the service worker) is detected and recovered before the first /api/v1 call', async () => {
  const { address, options } = await nodeOptions()
  const tab = await commands.openTab()
  await inTab(tab, 'start', options)
  await commands.reloadTab(tab, true)
  expect(await inTab(tab, 'controlled')).toBe(false)
  // The reload ended the old page and its worker: this start leads again, from IndexedDB, and the page is claimed.
  expect(await inTab(tab, 'start', options)).toEqual({ leader: true })
  expect(await inTab(tab, 'controlled')).toBe(true)
  expect(await inTab<Fetched>(tab, 'fetch', '/api/v1/address')).toEqual({ status: 200, body: { our_address: address } })
}, 60_000)

test('without a service worker (serviceWorker: false) in a page none controls: the node starts, its methods answer, fetch does not reach it', async () => {
  const { address, options } = await nodeOptions()
  const tab = await commands.openTab()
  // A page no service worker controls, as in a browser that has none: fetch goes to the site's own server.
  await commands.reloadTab(tab, true)
  expect(await inTab(tab, 'controlled')).toBe(false)
  expect(await inTab(tab, 'start', { ...options, serviceWorker: false })).toEqual({ leader: true })
  // Nothing claimed it.
  expect(await inTab(tab, 'controlled')).toBe(false)
  expect(await inTab(tab, 'call', 'address')).toEqual({ our_address: address })
  expect(await inTab(tab, 'call', 'status')).toMatchObject({ status: 'ready' })
  expect(await inTab(tab, 'call', 'channels')).toEqual([])
  // The site's server answers /api/v1 (here Vite's: it has no such file), not the node.
  const fetched = await inTab<{ status: number; text: string }>(tab, 'fetchText', '/api/v1/address')
  expect(fetched.status).toBe(404)
  expect(fetched.text).not.toContain(address)
  expect(fetched.text).not.toContain(address.toLowerCase())
}, 60_000)

test('a tab that does not lead exports the kept key with a password: unlocked with its passphrase in a worker of its own', async () => {
  await deleteKeys()
  try {
    // No key: the leader generates one and keeps it behind the passphrase; both tabs give the same options.
    const { key: _, ...options } = { ...(await nodeOptions()).options, passphrase: 'open sesame' }
    const first = await commands.openTab()
    expect(await inTab(first, 'start', options)).toEqual({ leader: true })
    const second = await commands.openTab()
    expect(await inTab(second, 'start', options)).toEqual({ leader: false })
    const { our_address } = (await inTab<Fetched>(second, 'fetch', '/api/v1/address')).body as { our_address: string }

    const keystore = await inTab<Keystore>(second, 'exportKeystore', 'export password')
    expect(keystore.crypto).toMatchObject({ kdf: 'scrypt', kdfparams: { n: 2 ** 18, r: 8, p: 1 } })
    expect(privateKeyToAddress(await decryptKeystore(keystore, 'export password'))).toBe(our_address)
  } finally {
    await commands.closeAllTabs()
    await deleteKeys()
  }
}, 60_000)

function deleteKeys(): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase('sluice:keys')
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
}
