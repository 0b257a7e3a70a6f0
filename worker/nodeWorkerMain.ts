/// <reference lib="webworker" />
/**
 * The origin's node, in a module web worker of the tab that leads (docs/decisions/0020): the same node as
 * `sluice serve` (createNode + hostNode) with IndexedDB storage, served on the request channel so that the service
 * worker and every tab reach it. The page drives it through Comlink (`start`, `status`, `stop`).
 */
import * as Comlink from 'comlink'
import type { EIP1193Provider, Hex } from 'viem'
import type { Deployment } from '../src/chain/deployment.ts'
import { encryptKeystore, type Keystore } from '../src/chain/keystore.ts'
import { SluiceError, toErrorData, type ErrorData } from '../src/errors.ts'
import { hostNode, type HostedNode } from '../src/host/hostNode.ts'
import { createLogger, type Logger, type LogLevel, type LogThreshold } from '../src/log/logger.ts'
import { logNodeNotices } from '../src/log/nodeNotices.ts'
import { ANSWERED_WHILE_SYNCING } from '../src/api/app.ts'
import { createNode } from '../src/node/createNode.ts'
import { NodeStoppedError } from '../src/node/errors.ts'
import type { SluiceNode } from '../src/node/sluiceNode.ts'
import type { TransportFactory } from '../src/node/nodeConfig.ts'
import type { NodeStatus } from '../src/node/notices.ts'
import type { StorageDump } from '../src/storage/storage.ts'
import { openIdbStorage } from '../src/storage/idbStorage.ts'
import { createBroadcastChannelTransport } from '../src/transport/broadcastChannelTransport.ts'
import { lazyTransport, type LazyTransportOptions } from '../src/transport/lazyTransport.ts'
import { version } from '../src/version.ts'
import { errorResponse, serveApiChannel } from './apiChannel.ts'
import { BrowserUnsupportedError, missingInWorker } from './browserSupport.ts'
import { carryErrorCodes } from './comlinkErrors.ts'
import { API_PATH, WORKER_LOADED } from './names.ts'
import { loadOrCreateKey, readStoredKey } from './keyStore.ts'
import { consoleLine, DEFAULT_LOG_LEVEL } from './pageLog.ts'
import type { WebRtcOptions } from './nodeLibp2p.ts'
import type { Eip1193Provider, NodeOptions } from './publicTypes.ts'
import { createRequestActivity } from './requestActivity.ts'

/**
 * What the page gives the worker: the page's options (publicTypes.ts, the `sluice serve` flags in camelCase), with
 * the deployment as data and the state dump importState() was given.
 */
export type NodeWorkerOptions = NodeOptions & {
  deployment: Deployment
  /** A state dump (GET /_state/export) restored before the node starts; refused if older than the stored state. */
  import?: StorageDump
  /**
   * The page's WebRTC bridge (webrtcBridge.ts): the port its RTCPeerConnections answer on, and the ICE servers they
   * use. With relays, the node's libp2p makes direct connections through it (docs/decisions/0065).
   */
  webrtc?: WebRtcOptions
}

export type StartedNode = { address: string; version: string; keyGenerated: boolean }

/** Told to the page when the node stops on its own: POST /shutdown, a failure, the database taken away. */
export type NodeStoppedListener = (stopped: { reason: string; error?: ErrorData }) => void

/** Hears the node's log lines, formatted, with their level: the page writes them to its console. */
export type NodeLogListener = (line: string, level: LogLevel) => void

/** The page's wallet, reached across the worker boundary (Comlink proxies its `request`). */
export type RemoteProvider = Eip1193Provider

export class NodeAlreadyStartedError extends SluiceError {
  override name = 'NodeAlreadyStartedError' as const
  override readonly code = 'NODE_ALREADY_STARTED' as const
}

export class NoChainError extends SluiceError {
  override name = 'NoChainError' as const
  override readonly code = 'NO_CHAIN' as const
}

carryErrorCodes()

let hosted: HostedNode | undefined
/** The key this worker's node uses when it is the one kept in IndexedDB: in this worker's memory only, never posted. */
let keptKey: Hex | undefined
let serving: { close(): void } | undefined
let starting: Promise<StartedNode> | undefined
/** Why the node stopped on its own; from then on every request is answered with it. */
let stoppedWith: string | undefined

const api = {
  /**
   * Builds the node, serves its API on the request channel at once (/status answers during the first sync), and
   * runs it. `onStopped` hears when it stops without being asked (POST /shutdown, a failure, its database lost);
   * `onLog` gets its log lines (without it they go to this worker's console).
   */
  start(options: NodeWorkerOptions, onStopped?: NodeStoppedListener, provider?: RemoteProvider, onLog?: NodeLogListener): Promise<StartedNode> {
    if (starting) return Promise.reject(new NodeAlreadyStartedError('this worker runs a node already'))
    starting = startHere(options, onStopped, provider, onLog)
    // A start that failed leaves the worker free to try again.
    starting.catch(() => (starting = undefined))
    return starting
  },
  status(): NodeStatus | undefined {
    return hosted?.node.status
  },
  /**
   * The kept key as a v3 keystore encrypted with `password` (scrypt at geth's standard cost), or undefined when the
   * page gives the key. A worker that runs no node (a tab that does not lead) unlocks the stored key with
   * `passphrase` for this and forgets it; the key itself never leaves the worker.
   */
  async exportKeystore(password = '', passphrase?: string): Promise<Keystore | undefined> {
    const key = hosted ? keptKey : await readStoredKey(passphrase)
    return key && encryptKeystore(key, password)
  },
  /** Stops answering (clients hear `gone`), then stops the node and closes its store. */
  async stop(): Promise<void> {
    serving?.close()
    await hosted?.stop()
  },
}

/**
 * The start, in the order it happens: the page's logger; the browser checked and the key unlocked; the node made
 * (createNode, with IndexedDB and the transport); then hosted, served on the request channel and run.
 */
async function startHere(
  options: NodeWorkerOptions,
  onStopped?: NodeStoppedListener,
  provider?: RemoteProvider,
  onLog?: NodeLogListener,
): Promise<StartedNode> {
  const {
    rpc,
    deployment,
    key: givenKey,
    passphrase,
    relay = [],
    environment = 'production',
    apiChannel,
    import: dump,
    logLevel = DEFAULT_LOG_LEVEL,
    webrtc,
    p2pAllowPrivate = false,
    ...rest
  } = options
  const log = pageLogger(logLevel, onLog)
  if (!rpc && !provider) throw new NoChainError('give startNode() either rpc (a JSON-RPC URL) or provider (an EIP-1193 provider)')
  // What this worker lacks, before anything opens (docs/decisions/0057). WebCrypto keeps a generated key and seals
  // the backup's copies.
  const missing = missingInWorker({ relays: relay.length > 0, subtleCrypto: !givenKey || rest.backupUrl !== undefined })
  if (missing.length > 0) throw new BrowserUnsupportedError(missing)
  // Only a matter of speed: the curve and Keccak fall back to JavaScript (Safari's Lockdown Mode has no WebAssembly).
  if (typeof WebAssembly !== 'object') log.warn('this browser gives the node no WebAssembly: it signs and hashes in JavaScript, several times slower')
  const unlocking = performance.now()
  const { key, created } = givenKey ? { key: givenKey, created: false } : await loadOrCreateKey(passphrase)
  // What unlocking (or generating) the key cost, for the bench and the browser's performance tools.
  performance.measure('sluice:key', { start: unlocking })
  keptKey = givenKey ? undefined : key

  const ownStop = new OwnStop(log, onStopped)
  const activity = createRequestActivity()
  const later = new AfterFirstAnswers(activity)
  const creating = performance.now()
  const making = createNode({
    ...rest,
    ...(rpc ? { rpc } : { provider: { request: (args: { method: string; params?: unknown }) => provider!.request(args) } as EIP1193Provider }),
    deployment,
    key,
    version,
    // The worker answers before its 1.2 MB of WASM has come: it is a speed-up, not a need.
    secp256k1Wasm: 'background',
    ...(dump ? { import: dump } : {}),
    storage: async (identity) => {
      const opening = performance.now()
      const storage = await openIdbStorage(identity, {
        onLost: (reason) => ownStop.databaseLost(`its database was taken away (${reason}); reload the page to start it again`),
      })
      // What opening IndexedDB cost (the Web Lock, the connection, the schema check), for the bench and the
      // browser's performance tools; reading the state is in sluice:node.
      performance.measure('sluice:storage', { start: opening })
      return storage
    },
    // So do the resends of what the last run left unacknowledged: signing them (on the JS engine until the WASM
    // is there) and loading libp2p to send them would hold the thread before the first answer.
    resendWhen: later.moment,
    // And the background services, whose first checks read the chain (about 50 ms of the thread at a start).
    servicesWhen: later.moment,
    transport: transportFor(relay, deployment, webrtc, p2pAllowPrivate, {
      loadWhen: later.moment,
      onError: (error) => void ownStop.stop('error', `its transport did not start: ${toErrorData(error).message}`, error),
      warn: (message, error) => log.warn(message, { error }),
    }),
  })
  const node = await ownStop.raceStart(making)
  later.nodeMade(node)
  // createNode() whole: storage, the state read and replayed, the chain's first calls.
  performance.measure('sluice:node', { start: creating })
  logNodeNotices(node, log)
  log.info('Sluice node started', {
    address: node.address,
    chainId: deployment.chainId,
    environment,
    version,
    transport: relay.length > 0 ? (webrtc ? 'libp2p, WebRTC through the page' : 'libp2p') : 'this origin only (BroadcastChannel)',
    ...(relay.length > 0 ? { relays: relay.join(',') } : {}),
    keyGenerated: created,
  })
  serveHere(hostNode({ node, version, environment }), { ownStop, activity, later, apiChannel })
  return { address: node.address, version, keyGenerated: created }
}

/** The page's logger: formatted here, so that only the lines at the level asked for cross to the page (one message each). */
function pageLogger(level: LogThreshold, onLog: NodeLogListener | undefined) {
  // A page gone meanwhile makes the call fail, which is no error of the node's.
  return createLogger({
    level,
    format: 'pretty',
    write: onLog ? (line, lineLevel) => void Promise.resolve(onLog(line, lineLevel)).catch(() => {}) : consoleLine,
  })
}

/**
 * The node stopping on its own (its database taken away, its transport failing, POST /shutdown, a failure). While
 * createNode still runs, it ends the start at once with why (the node createNode still makes is stopped: its store
 * closed); once the node is hosted, it stops the node and tells the page.
 */
class OwnStop {
  private running: HostedNode | undefined
  private endedWhileStarting = false
  private endStart!: (error: Error) => void
  private readonly startEnded = new Promise<never>((_, reject) => (this.endStart = reject))
  /** Why the database went, if it did: the reason the node gives whatever else stopped it. */
  lost: string | undefined

  constructor(
    private readonly log: Logger,
    private readonly onStopped: NodeStoppedListener | undefined,
  ) {}

  /** The node createNode makes, unless the start ends first. */
  raceStart(making: Promise<SluiceNode>): Promise<SluiceNode> {
    this.startEnded.catch(() =>
      making.then(
        (late) => late.stop().catch(() => {}),
        () => {},
      ),
    )
    return Promise.race([making, this.startEnded])
  }

  hosted(node: HostedNode): void {
    this.running = node
  }

  databaseLost(reason: string): void {
    this.lost = reason
    void this.stop('error', reason)
  }

  async stop(level: LogLevel, reason: string, error?: unknown): Promise<void> {
    if (stoppedWith || this.endedWhileStarting) return
    this.log[level]('the node stops on its own', { reason, error })
    if (!this.running) {
      this.endedWhileStarting = true
      this.endStart(new NodeStoppedError(`the Sluice node stopped as it started: ${reason}`))
      return
    }
    stoppedWith = reason
    await this.running.stop().catch(() => {})
    this.onStopped?.({ reason, ...(error !== undefined ? { error: toErrorData(error) } : {}) })
  }
}

/**
 * libp2p holds the worker's thread for about 250 ms as it loads and starts: once the node is ready and the page's
 * first requests are answered, at the latest LIBP2P_AT_THE_LATEST_MS after the start (decision 0024). One moment for
 * it and the resends; asked for once the node runs. A request that writes (opening a channel, a deposit, a payment)
 * is the owner acting: messages follow, so it is at once, while a channel's transaction is mined rather than after it
 * (a long request holds "quiet" off).
 */
class AfterFirstAnswers {
  private when: Promise<unknown> | undefined
  readonly nodeMade: (node: SluiceNode) => void
  private readonly made: Promise<SluiceNode>
  readonly wrote: () => void
  private readonly firstWrite: Promise<void>

  constructor(private readonly activity: ReturnType<typeof createRequestActivity>) {
    let made!: (node: SluiceNode) => void
    this.made = new Promise<SluiceNode>((resolve) => (made = resolve))
    this.nodeMade = made
    let wrote!: () => void
    this.firstWrite = new Promise<void>((resolve) => (wrote = resolve))
    this.wrote = wrote
  }

  readonly moment = (): Promise<unknown> =>
    (this.when ??= Promise.race([
      this.made.then((node) => untilReady(node, LIBP2P_AT_THE_LATEST_MS)).then(() => this.activity.quiet(LIBP2P_AFTER_QUIET_MS)),
      new Promise((resolve) => setTimeout(resolve, LIBP2P_AT_THE_LATEST_MS)),
      this.firstWrite,
    ]))
}

/** The hosted node served on the request channel, and run; a node that stopped on its own keeps answering, with why. */
function serveHere(
  current: HostedNode,
  p: { ownStop: OwnStop; activity: ReturnType<typeof createRequestActivity>; later: AfterFirstAnswers; apiChannel: string | undefined },
): void {
  const { ownStop, activity, later } = p
  hosted = current
  ownStop.hosted(current)
  void current.stopRequested.then((request) =>
    ownStop.stop(
      ownStop.lost || request.reason !== 'shutdown' ? 'error' : 'info',
      ownStop.lost ?? (request.reason === 'shutdown' ? 'it was shut down (POST /shutdown)' : `it failed: ${toErrorData(request.error).message}`),
      'error' in request ? request.error : undefined,
    ),
  )
  // So that no client waits for a stopped node in vain.
  const answer = (request: Request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') later.wrote()
    return activity.track(async () => {
      if (stoppedWith) return errorResponse(503, 'NODE_STOPPED', `the Sluice node stopped: ${stoppedWith}`)
      // A request that the node can answer only once synced waits a little for that (a tab that takes over
      // resumes in a second or two) rather than getting the 503 it would get at once.
      if (!answersWhileSyncing(request)) await untilReady(current.node, WAIT_FOR_SYNC_MS)
      return current.fetch(request)
    })
  }
  serving = serveApiChannel({ fetch: answer, node: crypto.randomUUID(), ...(p.apiChannel ? { channelName: p.apiChannel } : {}) })
  void current.run()
}

/** How long a request waits for the node to finish syncing before it gets the API's 503 with the progress. */
const WAIT_FOR_SYNC_MS = 15_000
/** libp2p loads once the node is ready and the API has been quiet this long after its first answer (or at a send)... */
const LIBP2P_AFTER_QUIET_MS = 100
/** ...and at the latest this long after the start, whatever the page does meanwhile. */
const LIBP2P_AT_THE_LATEST_MS = 2_000

function answersWhileSyncing(request: Request): boolean {
  const path = new URL(request.url).pathname.slice(API_PATH.length)
  return ANSWERED_WHILE_SYNCING.has(path)
}

function untilReady(node: SluiceNode, ms: number): Promise<void> {
  if (node.status.status !== 'syncing') return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      off()
      clearTimeout(timer)
      resolve()
    }
    const off = node.notices.subscribe((notice) => {
      if (notice.type === 'status' && notice.status.status !== 'syncing') done()
    })
    const timer = setTimeout(done, ms)
  })
}

/**
 * libp2p through the relays when there are any, else this origin. libp2p is most of the worker's size: it loads only
 * then, and in the background: the node is ready once synced, and libp2p loads when `loadWhen` says (or at the first
 * send) and reserves its place on the relays; what the node sends meanwhile waits for that (docs/decisions/0024).
 * With the page's WebRTC bridge, libp2p's WebRTC transport loads with it (docs/decisions/0065).
 */
function transportFor(
  relays: string[],
  deployment: Deployment,
  webrtc: WebRtcOptions | undefined,
  allowPrivateDirect: boolean,
  { loadWhen, onError, warn }: Pick<LazyTransportOptions, 'loadWhen' | 'onError'> & { warn: (message: string, error: unknown) => void },
): TransportFactory {
  if (relays.length === 0) {
    webrtc?.port.close()
    return ({ address }) =>
      createBroadcastChannelTransport({
        address,
        channelName: `sluice-${deployment.chainId}-${deployment.contracts.TokenNetworkRegistry.address.toLowerCase()}`,
      })
  }
  return ({ key }) =>
    lazyTransport(async () => (await import('./nodeLibp2p.ts')).createNodeLibp2p({ key, relays, webrtc, allowPrivateDirect, warn }), {
      background: true,
      loadWhen,
      onError,
    })
}

export type NodeWorkerApi = typeof api
Comlink.expose(api)
// The module has run: from now on an error of this worker is not its script's failing to load (host.ts).
;(self as unknown as DedicatedWorkerGlobalScope).postMessage(WORKER_LOADED)
