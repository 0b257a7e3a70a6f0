// What a browser lacks, in a real Chromium with the thing taken away: startNode fails at once with
// BROWSER_UNSUPPORTED and the list of what is missing (or SERVICE_WORKER, which says how to run without one), and
// leaves nothing behind; what the node can do without (WebAssembly, WebSocket without relays) only costs speed.
import { generatePrivateKey } from 'viem/accounts'
import { afterEach, describe, expect, test, vi } from 'vitest'
import type { BrowserFeature } from '../../worker/browserSupport.ts'
import { startNode, type SluiceBrowserNode, type StartNodeOptions } from '../../worker/host.ts'
import { LEADER_LOCK } from '../../worker/names.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { countWorkers, takeAway } from './support/takeAway.ts'

const started: SluiceBrowserNode[] = []
const restores: (() => void)[] = []
afterEach(async () => {
  for (const restore of restores.splice(0).reverse()) restore()
  for (const node of started.splice(0)) await node.stop()
})

/** Takes each away until the test ends. */
function without(...takes: (() => () => void)[]): void {
  for (const take of takes) restores.push(take())
}

const leaderLockHeld = async () => ((await navigator.locks.query()).held ?? []).some((lock) => lock.name === LEADER_LOCK)

/** startNode's failure, how long it took, and what it left: workers made, service worker registrations asked. */
async function failedStart(options: Partial<StartNodeOptions> = {}) {
  const workers = countWorkers()
  const registered: string[] = []
  const container = navigator.serviceWorker as ServiceWorkerContainer | undefined
  const register = container?.register.bind(container)
  if (container && register)
    container.register = (url, o) => {
      registered.push(String(url))
      return register(url, o)
    }
  const begun = performance.now()
  try {
    const error = await startNode(nodeOptions({ key: generatePrivateKey(), ...options })).then(
      (node) => {
        started.push(node)
        throw new Error('the node started')
      },
      (e: unknown) => e as Error & { code: string; missing?: BrowserFeature[] },
    )
    return { error, ms: performance.now() - begun, workers: workers.made.length, registered }
  } finally {
    workers.restore()
    if (container) delete (container as { register?: unknown }).register
  }
}

describe('what the page lacks is said at once, before anything starts', () => {
  const lacks: [BrowserFeature, () => () => void][] = [
    ['webLocks', () => takeAway(navigator, 'locks')],
    ['broadcastChannel', () => takeAway(globalThis, 'BroadcastChannel')],
    ['indexedDB', () => takeAway(globalThis, 'indexedDB')],
    [
      'moduleWorker',
      () => {
        // A browser that does not know `type`: it never reads it, and would start a classic worker.
        const Original = globalThis.Worker
        globalThis.Worker = class extends Original {
          constructor(url: string | URL, options?: WorkerOptions) {
            super(url, options?.name === undefined ? {} : { name: options.name })
          }
        }
        return () => {
          globalThis.Worker = Original
        }
      },
    ],
  ]

  test.each(lacks)('without %s: BROWSER_UNSUPPORTED naming it, no worker, no registration, no lock', async (feature, take) => {
    let failed: Awaited<ReturnType<typeof failedStart>>
    const restore = take()
    try {
      failed = await failedStart()
    } finally {
      restore()
    }
    expect(failed.error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: [feature], message: expect.stringContaining(feature) })
    expect(failed.ms).toBeLessThan(500)
    expect(failed.workers).toBe(0)
    expect(failed.registered).toEqual([])
    expect(await leaderLockHeld()).toBe(false)
  })

  test('several missing are all named; outside a secure context the message says so', async () => {
    without(
      () => takeAway(navigator, 'locks'),
      () => takeAway(globalThis, 'BroadcastChannel'),
      () => takeAway(globalThis, 'indexedDB'),
      () => {
        const restore = takeAway(globalThis, 'isSecureContext')
        Object.defineProperty(globalThis, 'isSecureContext', { value: false, configurable: true })
        return restore
      },
    )
    const { error } = await failedStart()
    expect(error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['webLocks', 'broadcastChannel', 'indexedDB'] })
    expect(error.message).toMatch(/webLocks, broadcastChannel, indexedDB \(this page is not a secure context/)
  })

  test('no service worker (a private window of Firefox): SERVICE_WORKER at once, saying how to start without one; with more missing, BROWSER_UNSUPPORTED names it too', async () => {
    without(() => takeAway(navigator, 'serviceWorker'))
    const alone = await failedStart()
    expect(alone.error).toMatchObject({ code: 'SERVICE_WORKER', message: expect.stringContaining('serviceWorker: false') })
    expect(alone.ms).toBeLessThan(500)
    expect(alone.workers).toBe(0)
    expect(await leaderLockHeld()).toBe(false)

    without(() => takeAway(navigator, 'locks'))
    expect((await failedStart()).error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['serviceWorker', 'webLocks'] })
  })
})

describe("what the node's worker lacks is said as its start begins", () => {
  /** The node's worker with these globals taken away (test/browser/fixtures/lackingWorker.ts). */
  function lacking(...globals: string[]): URL {
    const url = new URL('./fixtures/lackingWorker.ts', import.meta.url)
    url.searchParams.set('lack', globals.join(','))
    return url
  }

  test('without IndexedDB: BROWSER_UNSUPPORTED naming it, from the worker, well before the start timeout; the lock is free and the next start runs', async () => {
    const { error, ms } = await failedStart({ workerUrl: lacking('indexedDB'), startTimeoutMs: 30_000 })
    expect(error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['indexedDB'] })
    expect(error.message).toContain('indexedDB')
    expect(ms).toBeLessThan(10_000)
    expect(await leaderLockHeld()).toBe(false)
    const node = await startNode(nodeOptions({ key: generatePrivateKey() }))
    started.push(node)
    expect(node.leader).toBe(true)
  }, 60_000)

  test('several missing are all named; WebSocket only with relays', async () => {
    const several = await failedStart({ workerUrl: lacking('indexedDB', 'BroadcastChannel', 'crypto.getRandomValues') })
    expect(several.error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['indexedDB', 'broadcastChannel', 'getRandomValues'] })
    const relay = '/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWRa81JYv8NFTHVg4rxMPQzXAEtFDUo2Fouc9F6769myac'
    const withRelays = await failedStart({ workerUrl: lacking('WebSocket'), relay: [relay] })
    expect(withRelays.error).toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['webSocket'] })
    expect(await leaderLockHeld()).toBe(false)
  }, 60_000)

  test('without WebAssembly (Safari in Lockdown Mode) and, with no relays, without WebSocket: the node runs, in JavaScript, and warns', async () => {
    const warn = vi.spyOn(console, 'warn')
    try {
      const node = await startNode(nodeOptions({ key: generatePrivateKey(), workerUrl: lacking('WebAssembly', 'WebSocket') }))
      started.push(node)
      expect((await node.status()).status).toBe('ready')
      expect(await node.channels()).toEqual([])
      expect(warn.mock.calls.map((call) => String(call[0]))).toContainEqual(expect.stringMatching(/^\[sluice\] .*no WebAssembly/))
    } finally {
      warn.mockRestore()
    }
  }, 60_000)
})
