/**
 * `startNode()` for the page (`sluice/browser`): the origin's one node, reached from every tab with plain
 * `fetch('/api/v1/...')` and through a typed proxy (docs/decisions/0020, 0021).
 *
 *   1. the service worker is registered and controls this page (claimed on a first visit or a hard reload);
 *   2. the tab that gets the leader's Web Lock runs the node in a module worker; the other tabs wait on the lock
 *      and take over from IndexedDB when the leader's tab closes (the browser releases its lock);
 *   3. startNode resolves once the node answers this page's fetch, through the service worker, with this build's
 *      version.
 * Before any of it, what the browser lacks is said at once (browserSupport.ts); every step has a timeout, and no
 * step waits on a person's answer to a prompt (persistence is asked in the background): nothing a page awaits here
 * can hang (docs/decisions/0057).
 */
import { withTimeout } from '../src/waits.ts'
import * as Comlink from 'comlink'
import { parseDeployment, type Deployment as NodeDeployment } from '../src/chain/deployment.ts'
import { parseRpcUrls } from '../src/chain/rpcUrls.ts'
import type { Keystore } from '../src/chain/keystore.ts'
import { SluiceError, toErrorData, type ErrorData } from '../src/errors.ts'
import { prettyHead } from '../src/log/format.ts'
import { isLogThreshold, LOG_THRESHOLDS, passes } from '../src/log/logger.ts'
import { jsonParse } from '../src/storage/json.ts'
import type { StorageDump as NodeStorageDump } from '../src/storage/storage.ts'
import { version as pageVersion } from '../src/version.ts'
import { forwardOverApiChannel } from './apiChannel.ts'
import { BrowserUnsupportedError, missingInPage } from './browserSupport.ts'
import { carryErrorCodes } from './comlinkErrors.ts'
import { ensureControlled, noServiceWorker } from './controlled.ts'
import { API_PATH, LEADER_LOCK, WORKER_LOADED } from './names.ts'
import { nodeClient, type NodeClient, type SendRequest } from './nodeClient.ts'
import type { NodeLogListener, NodeStoppedListener, NodeWorkerApi, NodeWorkerOptions, RemoteProvider } from './nodeWorkerMain.ts'
import { consoleLine, DEFAULT_LOG_LEVEL } from './pageLog.ts'
import { storagePersistence } from './persistence.ts'
import type { Deployment, Eip1193Provider, NodeOptions, StorageDump } from './publicTypes.ts'
import { subscribeToEvents, type PushListener } from './subscription.ts'
import { pageHasWebRtc, startWebRtcBridge, type WebRtcBridge, type WebRtcConnectionInfo } from './webrtcBridge.ts'

/** The node's options (the worker's, spelled without viem: publicTypes.ts) and the page's own. */
export type StartNodeOptions = NodeOptions & {
  /** The chain's contracts: the deployment file's JSON, or its URL (fetched). */
  deployment: Deployment | string | URL
  /** An EIP-1193 provider (the page's wallet) instead of `rpc`; the node's worker reaches the chain through it. */
  provider?: Eip1193Provider
  /** Where `sluice init` put the service worker (default `/sluice-sw.js`); it is registered at scope `/`. */
  serviceWorkerUrl?: string | URL
  /** `classic` (default, the shipped sluice-sw.js) or `module` (a dev server serving worker/sw.ts). */
  serviceWorkerType?: WorkerType
  /** Where `sluice init` put the node's worker (default `/sluice/node.worker.js`). */
  workerUrl?: string | URL
  /**
   * Resolve only once the node has synced with the chain (default true), so that every endpoint answers; with
   * false, as soon as it answers at all (GET /status then shows the sync's progress, and other paths are 503).
   */
  waitForSync?: boolean
  /** How long start-up may take before it fails with START_TIMEOUT (default 60 s, the first sync included). */
  startTimeoutMs?: number
  /**
   * Use the service worker, through which `fetch('/api/v1/...')` reaches the node (default true). With false the node
   * starts without one, for a browser that has none (Firefox's private windows, some embedded webviews): the node
   * and the returned methods work alike (they go over the request channel), only `fetch('/api/v1/...')` does not
   * reach it.
   */
  serviceWorker?: boolean
  /**
   * Ask the browser to keep the node's data (`navigator.storage.persist()`) as the node starts, in the background
   * (default true): the start never waits for the answer. With false the page asks when it chooses, on a user's
   * gesture: `node.persistStorage()`.
   */
  persistStorage?: boolean
  /**
   * Direct connections to the peers the node pays and is paid by, over WebRTC (default true): this tab holds them
   * for the node's worker, which has no WebRTC of its own, and the node uses them once they are up, the relays
   * meanwhile and after (docs/transport.md, docs/decisions/0065). Only with `relay`, in a browser with
   * RTCPeerConnection. With false, every message goes through the relays.
   */
  webrtc?: boolean
  /**
   * The STUN and TURN servers WebRTC finds its way with (RTCPeerConnection's `iceServers`). None by default: then two
   * browsers connect directly when they can reach each other's own addresses (the same network), and otherwise keep
   * to the relay; a STUN server lets most pairs behind home routers connect, a TURN server nearly all. No address is
   * given to a third party unless named here.
   */
  iceServers?: RTCIceServer[]
}

/** This tab's WebRTC connections for the node (`node.webrtc`). */
export type WebRtcConnections = {
  /** The connections this tab holds for the node, if it runs it: their state and what they carried. */
  connections(): WebRtcConnectionInfo[]
  /** Closes them and makes no new one while this tab runs the node: its messages go through the relays from then on. */
  close(): void
}

export type NodeStopped = { reason: string; error?: ErrorData }

export type SluiceBrowserNode = NodeClient & {
  /** True while the node runs in this tab's worker; false in a tab that uses another tab's node. */
  readonly leader: boolean
  /**
   * Whether the browser keeps the node's data (its key, its channels) under storage pressure: true (persistent), false
   * (best effort: the browser may clear it), or undefined while the browser has not answered (Firefox answers when the
   * person answers its prompt) and in a browser without `navigator.storage`. The answer may come after the start.
   */
  readonly storagePersisted: boolean | undefined
  /**
   * Asks the browser to keep the node's data (`navigator.storage.persist()`): call it on a user's gesture (a click),
   * which Firefox's prompt expects. Resolves with the answer, or, with none within `timeoutMs` (30 s by default), with
   * what `navigator.storage.persisted()` says then (a later answer still updates `storagePersisted`). Rejects with
   * BROWSER_UNSUPPORTED in a browser without `navigator.storage`, PERSIST_TIMEOUT if neither call answers.
   */
  persistStorage(options?: { timeoutMs?: number }): Promise<boolean>
  /** Push events of GET /api/v1/events, read over the request channel (no service worker involved); returns unsubscribe. */
  subscribe(listener: PushListener): () => void
  /**
   * The key generated in this origin as a v3 keystore encrypted with `password` (default "", which any tool opens)
   * with scrypt at geth's standard cost (N = 2^18: 3 to 4 s in the worker); `sluice serve --keystore` reads it.
   * Undefined when the page gives `key`. The key is encrypted in the node's worker and never reaches the page.
   */
  exportKeystore(password?: string): Promise<Keystore | undefined>
  /** Hears when the node stops on its own (POST /shutdown, a failure, its database taken away). */
  onStopped(listener: (stopped: NodeStopped) => void): () => void
  /** This tab stops using the node; if it runs it, the node stops (and another tab waiting on it takes over). */
  stop(): Promise<void>
  /** The WebRTC connections this tab holds for the node (none in a tab that does not run it). */
  readonly webrtc: WebRtcConnections
}

/** The steps of a start, in order, as its `performance.measure('sluice:start:<step>')` entries name them. */
export type StartStep = 'deployment' | 'service-worker' | 'node' | 'request-channel' | 'fetch' | 'sync'

export class StartTimeoutError extends SluiceError {
  override name = 'StartTimeoutError' as const
  override readonly code = 'START_TIMEOUT' as const
  /** The step that did not end in time. */
  readonly step: StartStep
  constructor(step: StartStep, message: string) {
    super(message)
    this.step = step
  }
}

/** The node's worker script did not load, or threw as it loaded (a wrong `workerUrl`, a file of another kind). */
export class NodeWorkerError extends SluiceError {
  override name = 'NodeWorkerError' as const
  override readonly code = 'NODE_WORKER' as const
}

/** The running node (or its database) belongs to another build than this page: never mix them silently. */
export class VersionSkewError extends SluiceError {
  override name = 'VersionSkewError' as const
  override readonly code = 'VERSION_SKEW' as const
}

/** `fetch('/api/v1/...')` from this page does not reach the node (the service worker does not control it). */
export class NotControlledError extends SluiceError {
  override name = 'NotControlledError' as const
  override readonly code = 'NOT_CONTROLLED' as const
}

export class InvalidOptionsError extends SluiceError {
  override name = 'InvalidOptionsError' as const
  override readonly code = 'INVALID_OPTIONS' as const
}

const DEFAULT_SERVICE_WORKER_URL = '/sluice-sw.js'
const DEFAULT_WORKER_URL = '/sluice/node.worker.js'
const DEFAULT_START_TIMEOUT_MS = 60_000
/** How often the leader asks its worker whether it still answers, and how long an answer may take. */
const WATCHDOG_EVERY_MS = 2_000
const WATCHDOG_TIMEOUT_MS = 5_000
/** resign()'s word for a worker still starting that is ended at once rather than given a moment to stop. */
const GIVE_UP_NOW = 'now'

let current: Promise<SluiceBrowserNode> | undefined
let pendingImport: StorageDump | undefined

/**
 * Starts (or joins) the origin's node. A second call while the first is under way, or once it is done, gets the
 * same node: start-up is serialised, so two calls never bind two identities.
 */
export function startNode(options: StartNodeOptions): Promise<SluiceBrowserNode> {
  current ??= start(options).catch((e: unknown) => {
    current = undefined
    throw e
  })
  return current
}

/**
 * Restores a state dump (`exportState()`, GET /api/v1/_state/export) into the node's database at the next
 * `startNode()` of this page. The store refuses a dump of another node or an older one; it must come before the
 * node starts, because a running node holds its state in memory.
 */
export function importState(dump: StorageDump | string): void {
  if (current) throw new InvalidOptionsError('importState() must come before startNode(): the node of this page is running')
  pendingImport = typeof dump === 'string' ? (jsonParse(dump) as StorageDump) : dump
}

function isHttpUrl(value: unknown): boolean {
  try {
    const url = new URL(value as string)
    return typeof value === 'string' && (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}

/** The routing options, as `sluice serve`'s flags take them (docs/decisions/0073). */
function checkRoutingOptions(
  options: Pick<StartNodeOptions, 'routingMode' | 'pathfindingServiceAddress' | 'pathfindingMaxPaths' | 'pathfindingIouTimeout'>,
): void {
  const { routingMode, pathfindingServiceAddress: address, pathfindingMaxPaths: maxPaths, pathfindingIouTimeout: iouTimeout } = options
  if (routingMode !== undefined && !['pfs', 'private', 'local'].includes(routingMode as string))
    throw new InvalidOptionsError(`routingMode must be 'pfs', 'private' or 'local', not ${String(routingMode)}`)
  if (address !== undefined && address !== 'auto' && !isHttpUrl(address))
    throw new InvalidOptionsError(`pathfindingServiceAddress must be an http(s) URL or 'auto', not ${String(address)}`)
  if (maxPaths !== undefined && !(Number.isInteger(maxPaths) && maxPaths >= 1 && maxPaths <= 25))
    throw new InvalidOptionsError(`pathfindingMaxPaths must be an integer from 1 to 25, not ${String(maxPaths)}`)
  const timeoutOk =
    (typeof iouTimeout === 'number' && Number.isSafeInteger(iouTimeout) && iouTimeout > 0) || (typeof iouTimeout === 'bigint' && iouTimeout > 0n)
  if (iouTimeout !== undefined && !timeoutOk)
    throw new InvalidOptionsError(`pathfindingIouTimeout must be a positive number of blocks, not ${String(iouTimeout)}`)
}

/** The mediation fee options, as `sluice serve`'s flags take them (docs/decisions/0069). */
function checkFeeOptions(
  options: Pick<StartNodeOptions, 'flatFee' | 'proportionalFee' | 'proportionalImbalanceFee' | 'capMediationFees' | 'pathfindingMaxFee'>,
): void {
  const perToken = (name: string, value: unknown, max: bigint, range: string) => {
    if (value === undefined) return
    const ok =
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Object.entries(value).every(([token, amount]) => /^0x[0-9a-fA-F]{40}$/.test(token) && typeof amount === 'bigint' && amount >= 0n && amount <= max)
    if (!ok) throw new InvalidOptionsError(`${name} must be an object of bigints from ${range} by token address, not ${String(value)}`)
  }
  perToken('flatFee', options.flatFee, 2n ** 256n - 1n, '0n')
  perToken('proportionalFee', options.proportionalFee, 1_000_000n, '0n to 1_000_000n')
  perToken('proportionalImbalanceFee', options.proportionalImbalanceFee, 50_000n, '0n to 50_000n')
  if (options.capMediationFees !== undefined && typeof options.capMediationFees !== 'boolean')
    throw new InvalidOptionsError(`capMediationFees must be true or false, not ${String(options.capMediationFees)}`)
  const max = options.pathfindingMaxFee
  if (max !== undefined && (typeof max !== 'bigint' || max < 0n || max >= 2n ** 256n))
    throw new InvalidOptionsError(`pathfindingMaxFee must be a bigint from 0n, not ${String(max)}`)
}

async function start(options: StartNodeOptions): Promise<SluiceBrowserNode> {
  carryErrorCodes()
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS
  const deadline = Date.now() + startTimeoutMs
  const within = <T>(step: StartStep, work: Promise<T>, what: () => string) =>
    withTimeout(work, deadline - Date.now(), () => new StartTimeoutError(step, `${what()} took more than ${startTimeoutMs} ms`))
  const {
    deployment: deploymentSource,
    provider,
    serviceWorkerUrl = DEFAULT_SERVICE_WORKER_URL,
    serviceWorkerType = 'classic',
    workerUrl = DEFAULT_WORKER_URL,
    waitForSync = true,
    startTimeoutMs: _,
    serviceWorker = true,
    persistStorage = true,
    webrtc = true,
    iceServers = [],
    ...nodeOptions
  } = options
  if (nodeOptions.rpc !== undefined && !parseRpcUrls(nodeOptions.rpc))
    throw new InvalidOptionsError(`rpc must be an http(s) or ws(s) URL, or a list of them, not ${JSON.stringify(nodeOptions.rpc)}`)
  if (!nodeOptions.rpc && !provider) throw new InvalidOptionsError('give startNode() either rpc (a JSON-RPC URL) or provider (an EIP-1193 provider)')
  // The shape only: libp2p, which parses them whole, loads after the node is ready (docs/decisions/0024), and a
  // relay it refuses then stops the node with INVALID_RELAY_ADDRESS.
  for (const relay of nodeOptions.relay ?? [])
    if (typeof relay !== 'string' || !/^\/.+\/p2p\/[^/]+$/.test(relay))
      throw new InvalidOptionsError(`each relay must be a multiaddr ending in /p2p/<the relay's peer id>, not ${JSON.stringify(relay)}`)

  if (nodeOptions.p2pAllowPrivate !== undefined && typeof nodeOptions.p2pAllowPrivate !== 'boolean')
    throw new InvalidOptionsError(`p2pAllowPrivate must be true or false, not ${JSON.stringify(nodeOptions.p2pAllowPrivate)}`)
  if (nodeOptions.maxFeePerGas !== undefined && (typeof nodeOptions.maxFeePerGas !== 'bigint' || nodeOptions.maxFeePerGas <= 0n))
    throw new InvalidOptionsError(`maxFeePerGas must be a bigint of wei above 0n (parseGwei('50') for 50 gwei), not ${String(nodeOptions.maxFeePerGas)}`)
  if (nodeOptions.monitoringReward !== undefined && (typeof nodeOptions.monitoringReward !== 'bigint' || nodeOptions.monitoringReward < 0n))
    throw new InvalidOptionsError(`monitoringReward must be a bigint of at least 0n, not ${String(nodeOptions.monitoringReward)}`)
  checkFeeOptions(nodeOptions)
  checkRoutingOptions(nodeOptions)
  checkIceServers(iceServers)
  if (nodeOptions.logLevel !== undefined && !isLogThreshold(nodeOptions.logLevel))
    throw new InvalidOptionsError(`logLevel must be one of ${LOG_THRESHOLDS.join(', ')}, not ${JSON.stringify(nodeOptions.logLevel)}`)
  // What the browser lacks, before anything is registered, locked or started; without a service worker, as the
  // service worker's own error, which says how to run without one.
  const missing = missingInPage({ serviceWorker })
  if (missing.length === 1 && missing[0] === 'serviceWorker') throw noServiceWorker()
  if (missing.length > 0) throw new BrowserUnsupportedError(missing)
  const persistence = storagePersistence({ ask: persistStorage })

  // Each step of a start is a performance.measure ('sluice:start:<step>'), for the bench and the browser's tools.
  let stepStart = performance.now()
  const step = (name: string) => {
    performance.measure(`sluice:start:${name}`, { start: stepStart })
    stepStart = performance.now()
  }
  const deployment = await within('deployment', loadDeployment(deploymentSource), () => 'loading the deployment')
  step('deployment')
  if (serviceWorker) {
    let stage = 'registering it'
    await within(
      'service-worker',
      ensureControlled(serviceWorkerUrl, serviceWorkerType, (now) => (stage = now)),
      () => `the service worker (${stage})`,
    )
    step('service-worker')
  }

  const channelName = nodeOptions.apiChannel
  const send: SendRequest = (request) => forwardOverApiChannel(request, { nodeStarting, startTimeoutMs, ...(channelName ? { channelName } : {}) })
  const client = nodeClient(send)
  const stoppedListeners = new Set<(stopped: NodeStopped) => void>()
  const tellStopped = (stopped: NodeStopped) => {
    for (const listener of stoppedListeners) listener(stopped)
  }
  const imported = pendingImport
  pendingImport = undefined
  const leadership = new Leadership(
    // The dump as exportState() gave it: the store refuses one that is not its own or older.
    { ...nodeOptions, deployment, ...(imported ? { import: imported as NodeStorageDump } : {}) },
    new URL(workerUrl, location.href),
    provider,
    tellStopped,
    startTimeoutMs,
    // This tab holds the node's WebRTC connections: with relays, where the browser can (docs/decisions/0065).
    webrtc && (nodeOptions.relay?.length ?? 0) > 0 && pageHasWebRtc() ? { iceServers } : undefined,
  )
  const subscriptions = new Set<() => void>()
  let stopped = false

  try {
    await within('node', leadership.elect(), () => 'starting the node')
    step('node')
    // Through the request channel (what the proxy uses), then through the service worker (what fetch uses).
    const { version } = await within('request-channel', client.version(), () => 'reaching the node')
    if (version !== pageVersion)
      throw new VersionSkewError(`the running Sluice node is version ${version} and this page is ${pageVersion}: reload every tab of this site`)
    step('request-channel')
    if (serviceWorker) {
      await within('fetch', checkFetchReachesNode(version), () => 'reaching the node through the service worker')
      step('fetch')
    }
    if (waitForSync) {
      await within('sync', untilSynced(client), () => 'the first sync with the chain')
      step('sync')
    }
    return {
      ...client,
      get leader() {
        return leadership.leading
      },
      get storagePersisted() {
        return persistence.persisted
      },
      persistStorage: ({ timeoutMs } = {}) => persistence.persist(timeoutMs),
      subscribe(listener) {
        const unsubscribe = subscribeToEvents(send, listener)
        subscriptions.add(unsubscribe)
        return () => {
          subscriptions.delete(unsubscribe)
          unsubscribe()
        }
      },
      exportKeystore: (password = '') => leadership.exportKeystore(password),
      webrtc: { connections: () => leadership.webrtcConnections(), close: () => leadership.closeWebRtc() },
      onStopped(listener) {
        stoppedListeners.add(listener)
        return () => stoppedListeners.delete(listener)
      },
      async stop() {
        if (stopped) return
        stopped = true
        for (const unsubscribe of subscriptions) unsubscribe()
        subscriptions.clear()
        await leadership.resign()
        current = undefined
      },
    }
  } catch (e) {
    await leadership.resign(true)
    throw e
  }
}

/**
 * This tab's part in the election: it leads (runs the node's worker) while it holds LEADER_LOCK, or waits on the
 * lock to take over. The browser releases the lock when the tab goes, whatever way it goes.
 */
class Leadership {
  leading = false
  #worker: RunningWorker | undefined
  #release: () => void = () => {}
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve))
  readonly #abort = new AbortController()
  #watchdog: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly options: NodeWorkerOptions,
    private readonly workerUrl: URL,
    private readonly provider: RemoteProvider | undefined,
    private readonly tellStopped: (stopped: NodeStopped) => void,
    /** The most a worker's start may take: the start's own bound, and the watchdog's replacement's. */
    private readonly startTimeoutMs: number,
    /** Each node worker gets a WebRTC bridge of this tab's (webrtcBridge.ts), with these ICE servers. */
    private webrtc: { iceServers: RTCIceServer[] } | undefined,
  ) {}

  webrtcConnections(): WebRtcConnectionInfo[] {
    return this.#worker?.bridge?.connections() ?? []
  }

  /** No WebRTC from now on in this tab: the bridge closes its connections, and a worker started later gets none. */
  closeWebRtc(): void {
    this.webrtc = undefined
    this.#worker?.bridge?.close()
  }

  /**
   * The page's own few notes (a worker replaced, a tab taking over), at the level asked for, as the worker's lines
   * start. Not through the logger: its formatter would add 1.4 kB gzipped to the page's module for these lines
   * (decision 0041).
   */
  #note(level: 'info' | 'warn' | 'error', message: string, error?: unknown): void {
    if (!passes(level, this.options.logLevel ?? DEFAULT_LOG_LEVEL)) return
    const data = error === undefined ? undefined : toErrorData(error)
    consoleLine(`${prettyHead(Date.now(), level)} ${message}${data ? ` error=${JSON.stringify(`${data.message} (${data.code})`)}` : ''}`, level)
  }

  /** Resolves once this tab leads with a started node, or follows (another tab holds the lock). */
  elect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      navigator.locks
        .request(LEADER_LOCK, { ifAvailable: true }, async (lock) => {
          if (!lock) {
            resolve()
            this.#awaitTakeover()
            return
          }
          try {
            await this.#lead()
          } catch (e) {
            reject(e)
            return
          }
          resolve()
          await this.#released
        })
        .catch(reject)
    })
  }

  /**
   * Stops the node if this tab runs it, and gives up the lock or the place in its queue. A worker still starting is
   * given a moment to end its start and stop as a node does (its store closed), or, with `now` (a start that failed
   * or ran out of time), ended at once.
   */
  async resign(now = false): Promise<void> {
    this.#abort.abort(now ? GIVE_UP_NOW : 'resigned')
    clearInterval(this.#watchdog)
    // A replacement the watchdog is starting now must not outlive this: it sees the abort and stops itself. Waited
    // for within a bound: stop() does not hang on it.
    if (this.#checkRun) await withTimeout(this.#checkRun, 3 * WATCHDOG_TIMEOUT_MS, unanswered('the watchdog')).catch(() => {})
    const running = this.#worker
    this.#worker = undefined
    if (running) {
      await withTimeout(running.remote.stop(), WATCHDOG_TIMEOUT_MS, unanswered('stopping the node')).catch(() => {})
      running.worker.terminate()
      running.bridge?.dispose()
    }
    this.leading = false
    this.#release()
  }

  /**
   * The kept key as a keystore: from the node's worker in the tab that leads; elsewhere from a worker of its own,
   * started for this and ended after, so that the key is unlocked in a worker and never in the page.
   */
  async exportKeystore(password: string): Promise<Keystore | undefined> {
    if (this.options.key) return undefined
    if (this.#worker) {
      // scrypt holds the worker's thread for seconds (noble yields only to microtasks): not a hung worker.
      this.#exporting++
      try {
        return await this.#worker.remote.exportKeystore(password)
      } finally {
        this.#exporting--
      }
    }
    const worker = this.#newWorker('sluice-key-export')
    try {
      return await unlessFailsToLoad(worker, this.workerUrl, Comlink.wrap<NodeWorkerApi>(worker).exportKeystore(password, this.options.passphrase))
    } finally {
      worker.terminate()
    }
  }

  #awaitTakeover(): void {
    navigator.locks
      .request(LEADER_LOCK, { signal: this.#abort.signal }, async () => {
        try {
          await this.#lead()
        } catch (e) {
          // Given up by stop(): nothing to tell.
          if (this.#abort.signal.aborted) return
          // This tab cannot run the node: say why, and let another tab try.
          this.#note('error', 'this tab could not take the node over', e)
          this.tellStopped({ reason: 'this tab could not take the node over', error: toErrorData(e) })
          return
        }
        this.#note('info', 'this tab took the node over (the tab that ran it went)')
        await this.#released
      })
      .catch(() => {})
  }

  async #lead(): Promise<void> {
    await this.#startWorker()
    this.leading = true
    // A worker that stops answering (killed, crashed, hung) is replaced; the new one resumes from IndexedDB.
    this.#watchdog = setInterval(() => this.#check(), WATCHDOG_EVERY_MS)
  }

  /** A module worker of the node's script; a browser that refuses to make one says why with NODE_WORKER. */
  #newWorker(name: string): Worker {
    try {
      return new Worker(this.workerUrl, { type: 'module', name })
    } catch (e) {
      throw new NodeWorkerError(`the node's worker ${this.workerUrl} could not be made: ${(e as Error).message}`, { cause: e })
    }
  }

  async #startWorker(): Promise<void> {
    const worker = this.#newWorker('sluice-node')
    const remote = Comlink.wrap<NodeWorkerApi>(worker)
    // A bridge per worker: its port goes to that worker alone (transferred), and ends with it.
    const bridge = this.webrtc ? startWebRtcBridge() : undefined
    const options: NodeWorkerOptions = bridge ? { ...this.options, webrtc: { port: bridge.port, iceServers: this.webrtc!.iceServers } } : this.options
    const onStopped: NodeStoppedListener = (stopped) => this.tellStopped(stopped)
    // Filtered and formatted in the worker: what comes is written as it is.
    const onLog: NodeLogListener = (line, level) => consoleLine(line, level)
    const starting = unlessFailsToLoad(
      worker,
      this.workerUrl,
      remote.start(
        bridge ? Comlink.transfer(options, [bridge.port]) : options,
        Comlink.proxy(onStopped),
        this.provider ? Comlink.proxy({ request: (args: { method: string; params?: unknown }) => this.provider!.request(args) }) : undefined,
        Comlink.proxy(onLog),
      ),
    )
    // Never seen: resign() ends the wait of a start that has failed or been stopped already.
    const givenUp = () => new SluiceError('given up')
    try {
      // Ended at once by a script that does not load and by resign(); bounded for the watchdog's replacement,
      // which no start's deadline covers.
      const started = await withTimeout(
        starting,
        this.startTimeoutMs,
        () => new StartTimeoutError('node', `the node's worker did not start within ${this.startTimeoutMs} ms`),
        this.#abort.signal,
        givenUp,
      )
      if (started.version !== pageVersion)
        throw new VersionSkewError(`the node's worker script is version ${started.version} and this page is ${pageVersion}: run \`sluice init\` again`)
      // Resigned as it answered (the watchdog's replacement during stop()): it must not run on, holding the store.
      if (this.#abort.signal.aborted) throw givenUp()
    } catch (e) {
      // Given up by stop() while it starts: a start that ends soon stops as a node does (its store closed).
      if (this.#abort.signal.aborted && this.#abort.signal.reason !== GIVE_UP_NOW)
        await withTimeout(
          starting.then(() => remote.stop()),
          WATCHDOG_TIMEOUT_MS,
          unanswered('stopping the node'),
        ).catch(() => {})
      worker.terminate()
      bridge?.dispose()
      throw e
    }
    this.#worker = { worker, remote, ...(bridge ? { bridge } : {}) }
  }

  /** The check under way, if any (resign waits for it). */
  #checkRun: Promise<void> | undefined
  /** Exports under way in the worker: it answers nothing while scrypt runs, and is not hung. */
  #exporting = 0
  #check(): void {
    const running = this.#worker
    if (!running || this.#checkRun || this.#exporting > 0) return
    this.#checkRun = this.#checkOnce(running).finally(() => (this.#checkRun = undefined))
  }
  async #checkOnce(running: RunningWorker): Promise<void> {
    try {
      await withTimeout(running.remote.status(), WATCHDOG_TIMEOUT_MS, unanswered("the node's worker"))
    } catch {
      // Not when it is being stopped: resign stops it (or finds it gone).
      if (this.#worker !== running || this.#abort.signal.aborted) return
      this.#note('warn', `the node's worker did not answer within ${WATCHDOG_TIMEOUT_MS} ms: starting a new one`)
      running.worker.terminate()
      running.bridge?.dispose()
      this.#worker = undefined
      await this.#startWorker().catch((e: unknown) => {
        if (this.#abort.signal.aborted) return
        this.#note('error', 'the node worker stopped answering and could not be started again', e)
        this.tellStopped({ reason: 'the node worker stopped answering and could not be started again', error: toErrorData(e) })
      })
    }
  }
}

/** The node's worker this tab runs, and the WebRTC bridge it was given. */
type RunningWorker = { worker: Worker; remote: Comlink.Remote<NodeWorkerApi>; bridge?: WebRtcBridge }

/** ICE servers as RTCPeerConnection takes them, each URL a STUN or TURN one: a mistake is said now, not at the first dial. */
function checkIceServers(iceServers: unknown): void {
  if (!Array.isArray(iceServers)) throw new InvalidOptionsError(`iceServers must be a list of { urls } (RTCIceServer), not ${JSON.stringify(iceServers)}`)
  for (const server of iceServers as unknown[]) {
    const urls = (server as RTCIceServer | null)?.urls
    const list = typeof urls === 'string' ? [urls] : Array.isArray(urls) ? (urls as unknown[]) : []
    if (list.length === 0 || !list.every((url) => typeof url === 'string' && /^(stuns?|turns?):./.test(url)))
      throw new InvalidOptionsError(`each of iceServers needs urls of stun:, stuns:, turn: or turns:, not ${JSON.stringify(server)}`)
  }
}

async function untilSynced(client: NodeClient): Promise<void> {
  // The node says when it is ready in its event stream too, but a read every 20 ms (a message on the request
  // channel) costs next to nothing and answers within a frame of it. A node past its first sync (`serving`) that
  // is behind the chain, or cannot reach it, answers the page already: waiting for the chain would hold it for nothing.
  for (;;) {
    const status = await client.status()
    if (status.status === 'ready' || status.serving) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * `call` to the node's worker, or NODE_WORKER as soon as its script fails to load or throws as it loads (a 404, a
 * page served in its place, a syntax error): the worker tells the page once its module has run (WORKER_LOADED), and
 * an error before that is the script's, where the call would otherwise go unanswered for ever. A worker of an older
 * build, which does not tell, is heard until the call answers.
 */
function unlessFailsToLoad<T>(worker: Worker, url: URL, call: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onError = (event: Event) => {
      // Said by the rejection, not again as an error nobody handled.
      event.preventDefault()
      done()
      const message = event instanceof ErrorEvent && event.message ? `: ${event.message}` : ''
      reject(new NodeWorkerError(`the node's worker ${url.href} did not load${message}: is workerUrl where \`sluice init\` put it?`))
    }
    const onMessage = (event: MessageEvent) => {
      if (event.data === WORKER_LOADED) done()
    }
    const done = () => {
      worker.removeEventListener('error', onError)
      worker.removeEventListener('message', onMessage)
    }
    worker.addEventListener('error', onError)
    worker.addEventListener('message', onMessage)
    call.then(
      (value) => {
        done()
        resolve(value)
      },
      (error: unknown) => {
        done()
        reject(error)
      },
    )
  })
}

/** A node runs or is starting when some tab holds the leader's lock. */
async function nodeStarting(): Promise<boolean> {
  const { held = [] } = await navigator.locks.query()
  return held.some((lock) => lock.name === LEADER_LOCK)
}

async function loadDeployment(source: Deployment | string | URL): Promise<NodeDeployment> {
  if (typeof source !== 'string' && !(source instanceof URL)) return parseDeployment(source)
  const url = new URL(source, location.href)
  const response = await fetch(url)
  if (!response.ok) throw new InvalidOptionsError(`the deployment ${url} answered ${response.status}`)
  return parseDeployment(await response.json(), url.href)
}

/**
 * A fetch from this page reaches the node: the service worker answers /api/v1 (a page it does not control would
 * get the static host's answer instead, typically an HTML page or a 404).
 */
async function checkFetchReachesNode(version: string): Promise<void> {
  const response = await fetch(`${API_PATH}/version`, { cache: 'no-store' })
  const body = (await response.json().catch(() => undefined)) as { version?: unknown } | undefined
  if (!navigator.serviceWorker.controller || !response.ok || body?.version !== version)
    throw new NotControlledError(`fetch('${API_PATH}/version') from this page does not reach the node (status ${response.status})`)
}

/** The error of a wait the page bounds outside a start (the watchdog's, a stop's): logged at most, never thrown to a caller. */
function unanswered(what: string): () => Error {
  return () => new SluiceError(`${what} did not answer in time`)
}
