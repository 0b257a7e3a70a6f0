// startNode() in a real Chromium: the service worker, the leader lock, the node's worker on anvil, the proxy over
// the request channel, and the key kept in IndexedDB (wrapped, behind a passphrase, and the first format migrated).
import { openDB } from 'idb'
import { bytesToHex, createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest'
import { decryptKeystore, encryptKeystore, type Keystore } from '../../src/chain/keystore.ts'
import { version } from '../../src/version.ts'
import * as Comlink from 'comlink'
import { http as httpTransport } from 'viem'
import { cdp } from 'vitest/browser'
import { LEADER_LOCK } from '../../worker/names.ts'
import type { OlderNodeWorkerApi } from './fixtures/olderNodeWorker.ts'
import { storageName } from '../../src/storage/identity.ts'
import type { StorageDump } from '../../src/storage/storage.ts'
import { importState, startNode, type NodeStopped, type SluiceBrowserNode, type StartNodeOptions } from '../../worker/host.ts'
import type { PushEvent } from '../../worker/subscription.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken } from './support/token.ts'
import { deleteDatabase } from './support/indexedDb.ts'
import { countWorkers, takeAway } from './support/takeAway.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const started: SluiceBrowserNode[] = []

const options = nodeOptions

async function start(extra: Partial<StartNodeOptions> = {}): Promise<SluiceBrowserNode> {
  const node = await startNode(options(extra))
  started.push(node)
  return node
}

async function fund(address: `0x${string}`) {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('1') })
}

let token: `0x${string}`
beforeAll(async () => {
  await deleteDatabase('sluice:keys')
  const key = generatePrivateKey()
  await fund(privateKeyToAddress(key))
  token = (await deployTestToken(rpc, deployment, key, 0n)).token
})
afterEach(async () => {
  for (const node of started.splice(0)) await node.stop()
})

describe('startNode', () => {
  test('resolves once fetch reaches the node through the service worker; the proxy has the REST operations; stop is a clear 503', async () => {
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    const pending = startNode(options({ key }))
    // A second start during the first joins it: one node, one identity.
    const joined = startNode(options({ key: generatePrivateKey() }))
    const node = await pending
    started.push(node)
    expect(await joined).toBe(node)
    expect(node.leader).toBe(true)
    expect(typeof node.storagePersisted).toBe('boolean')

    expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: privateKeyToAddress(key) })
    expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
    expect(await node.version()).toEqual({ version })
    await expect.poll(async () => (await node.status()).status, { timeout: 20_000 }).toBe('ready')
    expect(await node.channels()).toEqual([])
    // An error answer keeps its status and code through the proxy.
    await expect(node.channel(deployment.tokens.TTT!, privateKeyToAddress(key))).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' })

    const events: PushEvent[] = []
    const unsubscribe = node.subscribe((e) => events.push(e))
    await expect.poll(() => events.map((e) => e.event), { timeout: 10_000 }).toContain('status')
    unsubscribe()

    await node.stop()
    started.length = 0
    const after = await fetch('/api/v1/address')
    expect(after.status).toBe(503)
    expect(await after.json()).toMatchObject({ code: 'NO_NODE' })
  }, 60_000)

  test('a request made while the node starts is answered once it runs', async () => {
    const key = generatePrivateKey()
    const starting = start({ key })
    // The page is controlled already (first test): this reaches the service worker before the node exists.
    const early = fetch('/api/v1/address')
    const response = await early
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ our_address: privateKeyToAddress(key) })
    await starting
  }, 60_000)

  test('a killed worker is replaced and the node resumes from IndexedDB; a stopped service worker starts again on the next fetch', async () => {
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    // Every worker startNode makes, the watchdog's replacement included.
    const Original = globalThis.Worker
    globalThis.Worker = class extends Original {
      constructor(url: string | URL, options?: WorkerOptions) {
        super(url, options)
        workers.push(this)
      }
    }
    try {
      await killedAndReplaced(key)
    } finally {
      globalThis.Worker = Original
    }
  }, 60_000)

  test("stop() while the watchdog starts a killed worker's replacement leaves nothing running the node: its store is free", async () => {
    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    const store = storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address })
    const { made, restore: restoreWorker } = countWorkers()
    try {
      const node = await start({ key })
      made[0]!.terminate()
      // The watchdog finds it gone (it answers nothing) and makes a replacement; stop() comes while that starts.
      await expect.poll(() => made.length, { timeout: 20_000, interval: 5 }).toBe(2)
      await node.stop()
      started.length = 0
      // Held by nothing once stop() has resolved, and not taken again by a replacement finishing its start later.
      const held = async () => ((await navigator.locks.query()).held ?? []).some((lock) => lock.name === store)
      expect(await held()).toBe(false)
      await new Promise((r) => setTimeout(r, 2_000))
      expect(await held()).toBe(false)
    } finally {
      restoreWorker()
    }
    // The same node starts again at once.
    expect(await (await start({ key })).address()).toEqual({ our_address: address })
  }, 60_000)

  const workers: Worker[] = []
  async function killedAndReplaced(key: `0x${string}`) {
    const node = await start({ key })
    const partner = privateKeyToAddress(generatePrivateKey())
    await node.openChannel({ token_address: token, partner_address: partner, reveal_timeout: 7 })

    workers[0]!.terminate()
    // Until the watchdog has started a new worker, requests wait for it (the leader's lock is still held).
    const channel = await (await fetch(`/api/v1/channels/${token}/${partner}`)).json()
    expect(channel).toMatchObject({ partner_address: partner, reveal_timeout: '7', state: 'opened' })
    expect(workers).toHaveLength(2)
    expect(node.leader).toBe(true)

    const session = cdp()
    await session.send('ServiceWorker.enable')
    await session.send('ServiceWorker.stopAllWorkers')
    expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: privateKeyToAddress(key) })
  }

  test('an event stream through the service worker resumes where it was after every cut: nothing missed, nothing twice', async () => {
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    const node = await start({ key })
    await expect.poll(async () => (await node.status()).status, { timeout: 20_000 }).toBe('ready')
    const partners = Array.from({ length: 4 }, () => privateKeyToAddress(generatePrivateKey()))
    const open = (partner: `0x${string}`) => node.openChannel({ token_address: token, partner_address: partner })
    type Seen = { id: string; event: string; data: Record<string, unknown> }
    const listen = (url: string) => {
      const source = new EventSource(url)
      const seen: Seen[] = []
      for (const name of ['status', 'channel_opened', 'events_missed'])
        source.addEventListener(name, (e) => seen.push({ id: e.lastEventId, event: name, data: JSON.parse(e.data) }))
      const cuts: number[] = []
      source.addEventListener('error', () => cuts.push(source.readyState))
      return { source, seen, cuts, openedTo: () => seen.filter((e) => e.event === 'channel_opened').map((e) => e.data.partner_address) }
    }
    const seq = (id: string) => Number(id.split('-')[1])

    // EventSource through the service worker, as a dApp listens. The service worker ends the stream before the
    // browser would stop it (here after TEST_EVENT_STREAM_SECONDS), and EventSource reconnects with Last-Event-ID.
    const first = listen('/api/v1/events')
    try {
      await expect.poll(() => first.seen.length, { timeout: 10_000 }).toBeGreaterThan(0)
      await open(partners[0]!)
      await expect.poll(() => first.cuts.length, { timeout: 10_000 }).toBeGreaterThan(0)
      // Opened while EventSource waits to reconnect.
      await open(partners[1]!)
      await open(partners[2]!)
      await expect.poll(first.openedTo, { timeout: 20_000 }).toEqual(partners.slice(0, 3))
      await expect.poll(() => first.cuts.length, { timeout: 10_000 }).toBeGreaterThan(1)
      // Every cut was a clean end that EventSource reconnects after (CONNECTING), none a failure (CLOSED).
      expect(first.cuts.every((state) => state === EventSource.CONNECTING)).toBe(true)
      expect(first.seen.map((e) => e.event)).not.toContain('events_missed')
      // After the status that began it, one run's ids growing by one: nothing missed, nothing twice.
      const [status, ...rest] = first.seen
      expect(rest.map((e) => seq(e.id))).toEqual(rest.map((_, i) => seq(status!.id) + i + 1))
      expect(new Set(first.seen.map((e) => e.id.split('-')[0])).size).toBe(1)
    } finally {
      first.source.close()
    }

    // A service worker stopped mid-stream is a failure EventSource does not retry; a new one resumes with the
    // last id it saw given as a query parameter (it cannot set headers).
    const second = listen('/api/v1/events')
    try {
      await expect.poll(() => second.seen.length, { timeout: 10_000 }).toBeGreaterThan(0)
      const session = cdp()
      await session.send('ServiceWorker.enable')
      await session.send('ServiceWorker.stopAllWorkers')
      await expect.poll(() => second.source.readyState, { timeout: 10_000 }).toBe(EventSource.CLOSED)
    } finally {
      second.source.close()
    }
    await open(partners[3]!)
    const last = second.seen.at(-1)!.id
    const third = listen(`/api/v1/events?last_event_id=${last}`)
    try {
      await expect.poll(third.openedTo, { timeout: 20_000 }).toEqual([partners[3]])
      expect(seq(third.seen[0]!.id)).toBe(seq(last) + 1)
    } finally {
      third.source.close()
    }
  }, 90_000)

  test('exportState and importState: a restored database has the state, an older dump is refused', async () => {
    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    await fund(address)
    const partner = privateKeyToAddress(generatePrivateKey())
    let node = await start({ key })
    // The reveal timeout is the node's own choice, not on-chain: only the node's state remembers it.
    await node.openChannel({ token_address: token, partner_address: partner, reveal_timeout: 7 })
    const dump = await node.exportState()
    expect(dump.meta.address).toBe(address)
    await node.stop()
    started.length = 0

    await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
    importState(dump)
    node = await start({ key })
    expect(await node.channel(token, partner)).toMatchObject({ reveal_timeout: '7' })
    await node.updateChannel(token, partner, { reveal_timeout: 8 })
    await node.stop()
    started.length = 0

    importState(dump)
    await expect(start({ key })).rejects.toMatchObject({ code: 'DUMP_REJECTED' })
    node = await start({ key })
    expect(await node.channel(token, partner)).toMatchObject({ reveal_timeout: '8' })
  }, 60_000)

  test("mediation fees (docs/decisions/0069): a bad option is INVALID_OPTIONS at once; good ones are what the node's state charges", async () => {
    for (const bad of [
      { flatFee: { '0x12': 1n } },
      { proportionalFee: { [token]: 1_000_001n } },
      { proportionalImbalanceFee: { [token]: 50_001n } },
      { flatFee: { [token]: 5 } },
      { capMediationFees: 'no' },
      { pathfindingMaxFee: 5 },
    ])
      await expect(
        start(bad as never),
        JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      ).rejects.toMatchObject({
        code: 'INVALID_OPTIONS',
      })
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    const node = await start({ key, flatFee: { [token]: 10n }, proportionalFee: { [token]: 4_000n }, capMediationFees: false, pathfindingMaxFee: 7n })
    await expect.poll(async () => (await node.status()).status, { timeout: 20_000 }).toBe('ready')
    const dump = (await node.exportState()) as unknown as StorageDump
    const set = dump.changes.map((c) => c.change).find((c) => c.type === 'setMediationFees')
    const fees = set?.type === 'setMediationFees' ? set.fees : dump.snapshot?.state.mediationFees
    expect(fees).toEqual({ capFees: false, tokens: { [token.toLowerCase()]: { flat: 10n, proportional: 4_000n, imbalance: 0n } } })
  }, 60_000)

  test("routing (docs/decisions/0073): a bad option is INVALID_OPTIONS at once; good ones are the node's settings, a service that cannot be reached said there", async () => {
    for (const bad of [
      { routingMode: 'basic' },
      { pathfindingServiceAddress: 'pfs.example' },
      { pathfindingServiceAddress: 'ftp://pfs.example' },
      { pathfindingMaxPaths: 26 },
      { pathfindingMaxPaths: '3' },
      { pathfindingIouTimeout: 0 },
    ])
      await expect(start(bad as never), JSON.stringify(bad)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    // Nothing listens there: the node says so, and routes locally meanwhile.
    const node = await start({
      key,
      routingMode: 'pfs',
      pathfindingServiceAddress: 'http://127.0.0.1:9/',
      pathfindingMaxPaths: 5,
      pathfindingIouTimeout: 50_000,
    })
    await expect.poll(async () => (await node.status()).status, { timeout: 20_000 }).toBe('ready')
    await expect
      .poll(async () => (await (await fetch('/api/v1/settings')).json()) as Record<string, unknown>, { timeout: 20_000 })
      .toMatchObject({
        routing_mode: 'pfs',
        pathfinding_service_address: 'http://127.0.0.1:9',
        pathfinding_max_paths: 5,
        pathfinding_iou_timeout: '50000',
        pathfinding: { service: null, unavailable: { reason: expect.stringMatching(/cannot be reached/) } },
      })
  }, 60_000)

  test("the node's database deleted under it (site data cleared) stops it with a visible error, never a fresh empty node", async () => {
    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    const node = await start({ key })
    const stopped = new Promise<NodeStopped>((resolve) => node.onStopped(resolve))
    await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
    expect((await stopped).reason).toMatch(/database/)
    const answer = await fetch('/api/v1/address')
    expect(answer.status).toBe(503)
    expect(await answer.json()).toMatchObject({ code: 'NODE_STOPPED', errors: expect.stringMatching(/database/) })
  }, 60_000)

  test('relays: what is not a relay address is refused at once; one libp2p refuses (it loads after start) stops the node with why', async () => {
    await expect(start({ relay: ['ws://127.0.0.1:9090'] })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    const bad = '/ip4/999.0.0.1/tcp/9090/ws/p2p/12D3KooWRa81JYv8NFTHVg4rxMPQzXAEtFDUo2Fouc9F6769myac'
    // The node may be ready before libp2p has parsed the address: then it stops just after, and says why. A
    // request that writes starts libp2p at once (docs/decisions/0037); the node's answers then change when it
    // stops, however long a busy machine takes to load libp2p (the test's own timeout bounds the wait).
    const failure = await start({ relay: [bad] }).then(
      async () => {
        await fetch('/api/v1/payments/0x0000000000000000000000000000000000000001/0x0000000000000000000000000000000000000002', { method: 'POST', body: '{}' })
        for (; ; await new Promise((r) => setTimeout(r, 50))) {
          const answer = await fetch('/api/v1/address')
          if (answer.status !== 200) return { status: answer.status, ...((await answer.json()) as { code: string; errors: string }) }
        }
      },
      (e: { code: string; message: string }) => ({ status: 503, code: e.code, errors: e.message }),
    )
    expect(failure).toMatchObject({ status: 503, code: 'NODE_STOPPED', errors: expect.stringContaining('999.0.0.1') })
  }, 30_000)

  test("with the page's EIP-1193 provider instead of rpc, the worker reaches the chain through the page", async () => {
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    // A wallet's provider as a page has it: an object with request(), here forwarding to anvil from the page.
    const calls: string[] = []
    const transport = httpTransport(rpc)({})
    const provider = {
      request: async (args: { method: string; params?: unknown }) => {
        calls.push(args.method)
        return transport.request(args as never)
      },
    }
    const { rpc: _, ...rest } = options({ key })
    const node = await startNode({ ...rest, provider })
    started.push(node)
    const partner = privateKeyToAddress(generatePrivateKey())
    await node.openChannel({ token_address: token, partner_address: partner })
    expect(await node.channel(token, partner)).toMatchObject({ state: 'opened' })
    expect(calls).toContain('eth_sendRawTransaction')
  }, 60_000)

  test('a node of another build already running in this origin is a clear VERSION_SKEW error, not a silent mix', async () => {
    const key = generatePrivateKey()
    // Another tab leads with an older build's node: it holds the leader lock and serves the request channel.
    let releaseLock!: () => void
    const held = new Promise<void>((resolve) => (releaseLock = resolve))
    const locked = new Promise<void>(
      (resolve) =>
        void navigator.locks.request(LEADER_LOCK, () => {
          resolve()
          return held
        }),
    )
    await locked
    const worker = new Worker(new URL('./fixtures/olderNodeWorker.ts', import.meta.url), { type: 'module' })
    try {
      await Comlink.wrap<OlderNodeWorkerApi>(worker).start({ rpc, deployment, key, version: '0.0.1-older' })
      await expect(start({ key })).rejects.toMatchObject({ code: 'VERSION_SKEW', message: expect.stringMatching(/0\.0\.1-older/) })
    } finally {
      worker.terminate()
      releaseLock()
    }
  }, 60_000)
})

// Every wait on the browser ends: a worker script that does not load, a worker that never answers, a browser with no
// service worker (docs/decisions/0057).
describe('what the browser does not give or answer', () => {
  const leaderLockHeld = async () => ((await navigator.locks.query()).held ?? []).some((lock) => lock.name === LEADER_LOCK)

  test('a worker URL that answers no worker script, a script that throws as it loads, or a module it imports that is not there: NODE_WORKER at once, the lock free', async () => {
    const cases = [
      { workerUrl: new URL('/no-such-folder/node.worker.js', location.href), says: /did not load/ },
      { workerUrl: new URL('./fixtures/throwingWorker.ts', import.meta.url), says: /did not load: .*this build of the worker is broken/ },
      // The worker's script runs, but the node's module it imports (worker/node.worker.ts's import()) is not there.
      { workerUrl: new URL('./fixtures/missingModuleWorker.ts', import.meta.url), says: /did not load: .*no-such-module/ },
    ]
    for (const { workerUrl, says } of cases) {
      const begun = performance.now()
      const error = await start({ key: generatePrivateKey(), workerUrl, startTimeoutMs: 30_000 }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'NODE_WORKER', message: expect.stringContaining(workerUrl.pathname) })
      expect((error as Error).message).toMatch(says)
      expect(performance.now() - begun).toBeLessThan(5_000)
      expect(await leaderLockHeld()).toBe(false)
    }
  }, 60_000)

  test('a worker that never answers its start: START_TIMEOUT at the deadline, saying the step; the worker ended and the lock free, so the next start runs', async () => {
    const begun = performance.now()
    const error = await start({ workerUrl: new URL('./fixtures/silentWorker.ts', import.meta.url), startTimeoutMs: 3_000 }).catch((e: unknown) => e)
    const took = performance.now() - begun
    expect(error).toMatchObject({ code: 'START_TIMEOUT', step: 'node', message: expect.stringMatching(/^starting the node took more than 3000 ms/) })
    expect(took).toBeGreaterThanOrEqual(2_900)
    expect(took).toBeLessThan(4_500)
    expect(await leaderLockHeld()).toBe(false)
    const key = generatePrivateKey()
    const node = await start({ key })
    expect(node.leader).toBe(true)
    expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
  }, 60_000)

  test('a service worker that never activates: START_TIMEOUT at the deadline, saying the step and what it waited for; no worker started, the lock free', async () => {
    // A container whose registration never becomes active: a real one cannot be made to hang without taking this
    // origin's scope from the other tests.
    const registered: string[] = []
    const hanging = {
      controller: null,
      ready: new Promise<never>(() => {}),
      getRegistration: async () => undefined,
      register: async (url: string | URL) => {
        registered.push(String(url))
        return { active: null }
      },
      addEventListener() {},
    }
    const restore = takeAway(navigator, 'serviceWorker')
    Object.defineProperty(navigator, 'serviceWorker', { value: hanging, configurable: true })
    const { made, restore: restoreWorker } = countWorkers()
    try {
      const begun = performance.now()
      const error = await start({ key: generatePrivateKey(), startTimeoutMs: 1_500 }).catch((e: unknown) => e)
      expect(error).toMatchObject({
        code: 'START_TIMEOUT',
        step: 'service-worker',
        message: 'the service worker (waiting for it to activate) took more than 1500 ms',
      })
      expect(performance.now() - begun).toBeLessThan(3_000)
      expect(registered).toHaveLength(1)
      expect(made).toEqual([])
      expect(await leaderLockHeld()).toBe(false)
    } finally {
      restoreWorker()
      restore()
    }
  })

  test('no service worker: SERVICE_WORKER at once by default; with serviceWorker: false the node starts and its methods answer over the request channel', async () => {
    const key = generatePrivateKey()
    const restore = takeAway(navigator, 'serviceWorker')
    try {
      await expect(start({ key })).rejects.toMatchObject({ code: 'SERVICE_WORKER', message: expect.stringContaining('serviceWorker: false') })
      const node = await start({ key, serviceWorker: false })
      expect(node.leader).toBe(true)
      expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
      expect((await node.status()).status).toBe('ready')
      expect(await node.channels()).toEqual([])
      const events: PushEvent[] = []
      const unsubscribe = node.subscribe((e) => events.push(e))
      await expect.poll(() => events.map((e) => e.event), { timeout: 10_000 }).toContain('status')
      unsubscribe()
    } finally {
      restore()
    }
  }, 60_000)
})

// What a copy of the profile's IndexedDB would hold, and the formats a page's key was kept in before (decision 0027).
describe('the key kept in the page', () => {
  /** The first format: a v3 keystore (scrypt N = 4096, r = 8, p = 6) in store `keystores`, "" without a passphrase. */
  const FIRST_FORMAT_SCRYPT = { n: 4096, r: 8, p: 6 }
  const EXPORT_SCRYPT = { kdf: 'scrypt', kdfparams: { n: 2 ** 18, r: 8, p: 1, dklen: 32 } }

  beforeEach(() => deleteDatabase('sluice:keys'))
  afterAll(() => deleteDatabase('sluice:keys'))

  /** Every record of every store of `sluice:keys`, as a copy of the profile would have them. */
  async function keyRecords(): Promise<{ store: string; value: unknown }[]> {
    const db = await openDB('sluice:keys')
    try {
      const records: { store: string; value: unknown }[] = []
      for (const store of db.objectStoreNames) for (const value of await db.getAll(store)) records.push({ store, value })
      return records
    } finally {
      db.close()
    }
  }

  async function writeFirstFormat(keystore: Keystore) {
    const db = await openDB('sluice:keys', 1, { upgrade: (db) => void db.createObjectStore('keystores') })
    await db.put('keystores', keystore, 'node')
    db.close()
  }

  /** The value and every value inside it (CryptoKeys and typed arrays as they are). */
  function* everyValue(value: unknown): Generator<unknown> {
    yield value
    if (typeof value === 'object' && value !== null && !(value instanceof CryptoKey) && !ArrayBuffer.isView(value))
      for (const inner of Object.values(value)) yield* everyValue(inner)
  }

  /** Whether the key's 32 bytes are anywhere in `value`, as bytes or as hex. */
  function holdsInClear(value: unknown, key: `0x${string}`): boolean {
    const hex = key.slice(2).toLowerCase()
    return [...everyValue(value)].some((v) =>
      typeof v === 'string'
        ? v.toLowerCase().includes(hex)
        : ArrayBuffer.isView(v) && bytesToHex(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).includes(hex),
    )
  }

  test('without a passphrase: no keystore in IndexedDB and nothing "" opens, a non-extractable wrapping key, the same address after a restart', async () => {
    const first = await start()
    const { our_address } = await first.address()
    const records = await keyRecords()
    expect(records).toEqual([{ store: 'keys', value: expect.objectContaining({ kind: 'wrapped', address: our_address }) }])
    const record = records[0]!.value as { wrappingKey: CryptoKey; iv: Uint8Array<ArrayBuffer>; ciphertext: Uint8Array<ArrayBuffer> }
    for (const value of everyValue(record)) await expect(decryptKeystore(value, '')).rejects.toMatchObject({ code: 'INVALID_KEYSTORE' })
    expect(record.wrappingKey).toMatchObject({ extractable: false, algorithm: { name: 'AES-GCM', length: 256 } })
    await expect(crypto.subtle.exportKey('raw', record.wrappingKey)).rejects.toThrow()
    await expect(crypto.subtle.exportKey('jwk', record.wrappingKey)).rejects.toThrow()

    await first.stop()
    started.length = 0
    expect(await (await start()).address()).toEqual({ our_address })
    // Read as it was, not written again.
    expect(await keyRecords()).toEqual(records)
  }, 60_000)

  test('without a passphrase: exportKeystore gives the standard file (scrypt N = 2^18, password "") that holds the node\'s key', async () => {
    const node = await start()
    const { our_address } = await node.address()
    // The standard file sluice serve --keystore reads, with "" by default (tabs.test.ts exports with a password).
    const exported = (await node.exportKeystore())!
    expect(exported.crypto).toMatchObject(EXPORT_SCRYPT)
    const key = await decryptKeystore(exported, '')
    expect(privateKeyToAddress(key)).toBe(our_address)
    const [record] = await keyRecords()
    expect(holdsInClear(record!.value, key)).toBe(false)
  }, 60_000)

  test('with a passphrase: a PBKDF2-HMAC-SHA256 keystore at 600,000 rounds; without it PASSPHRASE_REQUIRED, a wrong one WRONG_PASSWORD', async () => {
    const node = await start({ passphrase: 'open sesame' })
    const { our_address } = await node.address()
    const [record, ...others] = await keyRecords()
    expect(others).toEqual([])
    const { keystore } = record!.value as { keystore: Keystore }
    expect(record).toEqual({ store: 'keys', value: { kind: 'passphrase', address: our_address, keystore: expect.anything() } })
    expect(keystore.crypto).toMatchObject({ kdf: 'pbkdf2', kdfparams: { c: 600_000, prf: 'hmac-sha256', dklen: 32 } })
    const key = await decryptKeystore(keystore, 'open sesame')
    expect(privateKeyToAddress(key)).toBe(our_address)
    expect(holdsInClear(record, key)).toBe(false)
    await expect(decryptKeystore(keystore, '')).rejects.toMatchObject({ code: 'WRONG_PASSWORD' })
    await node.stop()
    started.length = 0

    await expect(start()).rejects.toMatchObject({ code: 'PASSPHRASE_REQUIRED' })
    await expect(start({ passphrase: 'open barley' })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' })
    expect(await (await start({ passphrase: 'open sesame' })).address()).toEqual({ our_address })
    expect(await keyRecords()).toEqual([record])
  }, 60_000)

  test('a passphrase given for a key kept without one protects that key from then on', async () => {
    const first = await start()
    const { our_address } = await first.address()
    await first.stop()
    started.length = 0
    const second = await start({ passphrase: 'open sesame' })
    expect(await second.address()).toEqual({ our_address })
    const [record] = await keyRecords()
    expect(record!.value).toMatchObject({ kind: 'passphrase', address: our_address })
    await second.stop()
    started.length = 0
    await expect(start()).rejects.toMatchObject({ code: 'PASSPHRASE_REQUIRED' })
  }, 60_000)

  test('the first format without a passphrase (a keystore "" opens) starts the node with the same address and is rewritten wrapped', async () => {
    const key = generatePrivateKey()
    await writeFirstFormat(await encryptKeystore(key, '', FIRST_FORMAT_SCRYPT))
    const node = await start()
    expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
    const records = await keyRecords()
    expect(records).toEqual([{ store: 'keys', value: expect.objectContaining({ kind: 'wrapped', address: privateKeyToAddress(key) }) }])
    expect(holdsInClear(records, key)).toBe(false)
    await node.stop()
    started.length = 0
    expect(await (await start()).address()).toEqual({ our_address: privateKeyToAddress(key) })
  }, 60_000)

  test('the first format with a passphrase (scrypt N = 4096) is refused without it or with a wrong one, untouched; with it, re-encrypted at 600,000 PBKDF2 rounds', async () => {
    const key = generatePrivateKey()
    const firstFormat = await encryptKeystore(key, 'open sesame', FIRST_FORMAT_SCRYPT)
    await writeFirstFormat(firstFormat)
    await expect(start()).rejects.toMatchObject({ code: 'PASSPHRASE_REQUIRED' })
    await expect(start({ passphrase: 'open barley' })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' })
    expect(await keyRecords()).toEqual([{ store: 'keystores', value: firstFormat }])

    const node = await start({ passphrase: 'open sesame' })
    expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
    const [record, ...others] = await keyRecords()
    expect(others).toEqual([])
    expect(record).toMatchObject({ store: 'keys', value: { kind: 'passphrase', keystore: { crypto: { kdf: 'pbkdf2', kdfparams: { c: 600_000 } } } } })
    expect(await decryptKeystore((record!.value as { keystore: Keystore }).keystore, 'open sesame')).toBe(key)
  }, 60_000)
})
