import { getAddress, isAddress, type Address, type Hex, type Transport as ViemTransport } from 'viem'
import type { ChainClient } from '../../chain/chainClient.ts'
import type { Deployment } from '../../chain/deployment.ts'
import { read } from '../../chain/reads.ts'
import { CustomToken } from '../../contracts/index.ts'
import { hasCode, withCode } from '../../errors.ts'
import { version } from '../../version.ts'
import type { EnsureRegisteredReturnType } from '../../monitor/registration.ts'
import { acknowledger, createServiceChain, createServiceQueue, errorLine, ServiceRegistration, type ServiceLog } from '../../monitor/serviceAccount.ts'
import { Leadership, openServiceStorage, type ServiceDatabaseConfig } from '../../monitor/serviceDatabase.ts'
import { recoverPackedSignerSync } from '../../protocol/signature.ts'
import type { PresenceRecord } from '../../transport/libp2p/presence.ts'
import type { Transport } from '../../transport/transport.ts'
import { sameAddress, type PfsChannel } from '../channel.ts'
import { DEFAULT_TOKEN_PRICE, type TokenPrice } from '../claims.ts'
import type { SignedIou, StoredIou } from '../iou.ts'
import { createPathfindingState, createTokenNetworkView, networkOf, putChannel, removeChannel, type PathfindingState } from '../network.ts'
import { findPaths, type PathRequest } from '../paths.ts'
import type { MediationFee } from '../routeFees.ts'
import { timestampMicros } from '../timestamps.ts'
import type { ServiceChainWatch } from '../../chain/serviceChainWatch.ts'
import { pathfindingChainWatch } from './chainWatch.ts'
import { ClaimRunner } from './claimRunner.ts'
import { PathfindingServiceFailedError, PfsAnswerError } from './errors.ts'
import { defaultIntakeLimits, UpdateIntake, type IntakeCounts, type IntakeLimits } from './intake.ts'
import { Payments } from './payments.ts'
import type { FeedbackRecord } from './records.ts'
import { PfsStore, type Committed, type PfsTx } from './store.ts'
import type { TransactionQueue } from '../../chain/transactionQueue.ts'
import type { RpcEndpointsParameters } from '../../chain/rpcEndpoints.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'

/** A transport that can also say who is online (the libp2p transport: presence by watch, docs/decisions/0067, 0072). */
export type PresenceTransport = Transport & {
  /** Asks the relays about a node without opening any way to it. */
  watch?(peer: Address): void
  /** A node's signed presence record while a relay keeps a fresh one: it is online. */
  presence?(peer: Address): PresenceRecord | undefined
}

export type PathfindingServiceConfig = {
  /** The chain's JSON-RPC endpoints, used in order (src/chain/rpcEndpoints.ts). */
  rpc?: string | readonly string[]
  /** Instead of `rpc`: a viem transport (tests). */
  chainTransport?: ViemTransport
  deployment: Deployment
  /** The service's key: it is paid to it (IOUs), pays for its transactions, signs its acknowledgements and is its libp2p identity. */
  key: Hex
  /** The curve engine its host chose (native in `sluice pathfinding`): updates, IOUs and queries are checked with it. */
  secp256k1: Secp256k1Engine
  /** Where its LevelDB store lives (unless `database`). */
  dataDir?: string
  /**
   * Its store on PostgreSQL instead, shared by several instances (docs/decisions/0077): all answer the API (routes,
   * IOUs, feedback, who is online as the leader last wrote it), the one holding the lease follows the chain, takes
   * updates over the transport and claims the IOUs.
   */
  database?: ServiceDatabaseConfig
  /**
   * How updates arrive and who is online: libp2p through relays. Without presence (a transport that cannot say, or
   * none) every node counts as online.
   */
  transport?: ((address: Address) => PresenceTransport) | undefined
  /** A mediator's fee for a route's estimate: Raiden's model (src/protocol/fees/). */
  mediationFee: MediationFee
  /** What a routes request costs, in service tokens (smallest unit); 0 (the default): free, IOUs are ignored. */
  serviceFee?: bigint
  /** The service token's price in ETH per whole token, to weigh a claim's gas (Raiden's default, 0.0025). */
  tokenPrice?: TokenPrice
  /** Confirmations before a chain event counts (default 5). */
  confirmations?: number
  maxFeePerGas?: bigint
  /** Milliseconds between looks at the chain (default 1000). */
  pollingInterval?: number
  limits?: Partial<IntakeLimits>
  /** For GET /info: who runs it and what they say. */
  operator?: string
  message?: string
  /** Told each failure of the chain's endpoints (--metrics counts them). */
  onRpcFailure?: RpcEndpointsParameters['onFailure']
  log?: ServiceLog
}

/** How long a routes answer's feedback token takes feedback (raiden-services MAX_AGE_OF_FEEDBACK_REQUESTS). */
export const FEEDBACK_TOKEN_MS = 10 * 60_000
/** How old a GET /payment/iou request's signed timestamp may be, either way (raiden-services MAX_AGE_OF_IOU_REQUESTS). */
export const IOU_REQUEST_MAX_AGE_MS = 3_600_000
/** Routes answered are kept this long for their feedback and the statistics, then pruned. */
const FEEDBACK_KEPT_MS = 30 * 86_400_000

/** What a node is as a route answer's `address_metadata` says (docs/decisions/0072): its signed presence record, under Raiden's three names. */
export type AddressMetadata = { user_id: string; displayname: string; capabilities: string }

export type RoutesRequest = Omit<PathRequest, 'value'> & { value: bigint; iou?: SignedIou | undefined }

export type RoutesAnswer = {
  result: { path: Address[]; estimated_fee: bigint; address_metadata: Record<string, AddressMetadata> }[]
  feedback_token: string
}

export type PathfindingServiceStatus = {
  address: Address
  chainId: number
  registration: EnsureRegisteredReturnType | undefined
  syncedBlock: bigint
  latestBlock: bigint
  updates: IntakeCounts & { held_for_unconfirmed_channels: number }
  network: { tokenNetworks: number; channels: number; nodes: number; nodesOnline: number }
  ious: Record<StoredIou['status'], number> & { claimedAmount: bigint }
  routes: { requests: number; answered: number; noRoute: number; refused: number; feedback: { success: number; failure: number } }
  /** On PostgreSQL: whether this instance leads (holds the lease), and its id. */
  instance?: { leading: boolean; instance: string } | undefined
}

export type PathfindingService = {
  readonly address: Address
  readonly chain: ChainClient
  /** Its transactions under way (the metrics read them). */
  readonly queue: Pick<TransactionQueue, 'pending' | 'replaced'>
  readonly store: PfsStore
  readonly serviceFee: bigint
  /** Registers (publishing `url`), catches up with the chain, then takes updates and follows the chain. */
  start(options?: { url?: string | undefined }): Promise<void>
  stop(): Promise<void>
  status(): PathfindingServiceStatus
  /** Raiden's GET /api/v1/info. */
  info(): Record<string, unknown>
  /** Raiden's POST /api/v1/<token network>/paths; PfsAnswerError when refused. */
  routes(tokenNetwork: Address, request: RoutesRequest): Promise<RoutesAnswer>
  /** Raiden's GET /api/v1/<token network>/payment/iou: the sender's IOU held, or undefined. */
  lastIou(request: { sender: Address; receiver: Address; timestamp: string; signature: Hex }): StoredIou | undefined
  /** Raiden's POST /api/v1/<token network>/feedback: whether it was taken. */
  feedback(tokenNetwork: Address, request: { token: string; success: boolean; path: Address[] }): Promise<boolean>
  /** Raiden's GET /api/v1/address/<address>/metadata: the node's, while online. */
  addressMetadata(address: Address): AddressMetadata | undefined
  /** The token networks followed. */
  followed(tokenNetwork: Address): boolean
  /** Every IOU session held, claimed or given up. */
  ious(): StoredIou[]
  readonly failed: Promise<Error>
}

/** A feedback token: its time (12 hex digits, so the store's keys sort by it) and 80 random bits; 32 hex digits, as a UUID's. */
function newFeedbackToken(now: number): string {
  const random = crypto.getRandomValues(new Uint8Array(10))
  return now.toString(16).padStart(12, '0') + Array.from(random, (b) => b.toString(16).padStart(2, '0')).join('')
}

/**
 * Builds a pathfinding service (docs/decisions/0072): its store (opened now: a second process on the same data is
 * refused here) and the view it loads, its chain client and transaction queue, the intake of updates, the chain
 * watch, the payments and their claims. Nothing runs before `start`.
 */
export async function createPathfindingService(config: PathfindingServiceConfig): Promise<PathfindingService> {
  const log = config.log ?? (() => {})
  const { deployment } = config
  const chain = await createServiceChain({ ...config, chainId: deployment.chainId, pollingInterval: config.pollingInterval ?? 1_000, log })
  const address = chain.address
  const registry = getAddress(deployment.contracts.TokenNetworkRegistry.address)
  const oneToN = getAddress(deployment.contracts.OneToN.address)
  const userDeposit = getAddress(deployment.contracts.UserDeposit.address)
  const serviceFee = config.serviceFee ?? 0n
  const confirmations = BigInt(config.confirmations ?? 5)
  const identity = { chainId: deployment.chainId, registry, address }
  // The chain client opened above is closed again when the store cannot be opened.
  const { store, database } = await openServiceStorage(config, {
    name: 'sluice pathfinding',
    leaseName: `pathfinding:${deployment.chainId}:${registry.toLowerCase()}:${address.toLowerCase()}`,
    log,
    store: { open: (dataDir) => PfsStore.open(dataDir, identity), openPostgres: (pool, options) => PfsStore.openPostgres(pool, identity, options) },
  }).catch(async (e: unknown) => {
    await chain.close()
    throw e
  })
  const queue = createServiceQueue(chain, store, { maxFeePerGas: config.maxFeePerGas, log })
  const transport = config.transport?.(address)
  let failWith: (error: Error) => void = () => {}
  const failed = new Promise<Error>((resolve) => (failWith = resolve))
  const checkStore = () => {
    if (store.failed) failWith(new PathfindingServiceFailedError(`the store failed: ${store.failed.message}`, { cause: store.failed }))
  }

  // The view: what the store holds, and from then on what each durable batch changes.
  const state: PathfindingState = createPathfindingState(BigInt(deployment.chainId))
  const ensureNetwork = (tokenNetwork: Address) => {
    let view = networkOf(state, tokenNetwork)
    if (!view) {
      view = createTokenNetworkView(tokenNetwork)
      state.networks.set(tokenNetwork.toLowerCase(), view)
    }
    return view
  }
  for (const tokenNetwork of store.sync?.tokenNetworks ?? []) ensureNetwork(tokenNetwork)
  for (const channel of store.channels()) putChannel(ensureNetwork(channel.tokenNetwork), channel)
  const watched = new Set<string>()
  const watchParticipants = (channel: PfsChannel) => {
    for (const { address: participant } of channel.participants) {
      const key = participant.toLowerCase()
      if (watched.has(key)) continue
      watched.add(key)
      transport?.watch?.(participant)
    }
  }
  for (const view of state.networks.values()) for (const channel of view.channels.values()) watchParticipants(channel)

  const intake = new UpdateIntake({
    store,
    state,
    curve: config.secp256k1,
    limits: { ...defaultIntakeLimits, ...config.limits },
    acknowledge: acknowledger(config.secp256k1, config.key, transport),
    log: (event) => {
      if ('error' in event) log(`update from ${event.from}: internal error: ${errorLine(event.error)}`, 'error')
      else if (event.outcome.outcome === 'refused' && event.outcome.reason === 'store_failed') {
        log(`update from ${event.from} not stored: ${event.outcome.detail ?? ''}`, 'error')
        checkStore()
      }
    },
  })

  store.onCommitted((committed: Committed) => {
    for (const [key, value] of committed) {
      if (!key.startsWith('c!')) continue
      if (value === null) {
        const [, tokenNetwork, id] = key.split('!') as [string, Address, string]
        const view = networkOf(state, tokenNetwork)
        if (view) removeChannel(view, BigInt(`0x${id}`))
        continue
      }
      const channel = value as PfsChannel
      const view = ensureNetwork(channel.tokenNetwork)
      const isNew = !view.channels.has(channel.channelId.toString())
      putChannel(view, channel)
      if (isNew) {
        watchParticipants(channel)
        intake.channelConfirmed(channel.tokenNetwork, channel.channelId)
      }
    }
    for (const tokenNetwork of store.sync?.tokenNetworks ?? []) ensureNetwork(tokenNetwork)
  })

  const registration = new ServiceRegistration(chain, queue, deployment.contracts.ServiceRegistry.address, log)

  let decimals: Promise<number> | undefined
  const claims = new ClaimRunner({
    chain,
    queue,
    store,
    oneToN,
    userDeposit,
    tokenPrice: config.tokenPrice ?? DEFAULT_TOKEN_PRICE,
    tokenDecimals: () => {
      decimals ??= read(chain, deployment.serviceToken, CustomToken.abi, 'decimals', []).then(Number)
      decimals.catch(() => (decimals = undefined))
      return decimals
    },
    latestBlock: () => watch?.progress().latestBlock ?? confirmedBlock(),
    onError: (where, error) => log(`${where}: ${errorLine(error)}`, 'warn'),
    onSent: (description, hash) => log(`sent ${description}: ${hash}`, 'info'),
    onClaimed: (stored) => log(`claimed ${stored.claim?.transferred ?? 0n} from ${stored.iou.sender} (IOU session ${stored.iou.expirationBlock})`, 'info'),
    onLeft: (stored, note) => log(`IOU session of ${stored.iou.sender} (expiration ${stored.iou.expirationBlock}) not claimed now: ${note}`, 'info'),
  })
  // Made when this instance leads: it starts from the sync mark as the store holds it then.
  let watch: ServiceChainWatch<PfsTx> | undefined
  const makeWatch = () =>
    pathfindingChainWatch({
      chain,
      deployment,
      store,
      confirmations,
      pollingInterval: config.pollingInterval ?? 1_000,
      onLooked: () => {
        checkStore()
        presence.write()
        claims.runDue()
        registration.renewIfDue()
      },
      onError: (where, error) => log(`${where}: ${errorLine(error)}`, 'warn'),
    })
  const confirmedBlock = () => store.sync?.syncedBlock ?? 0n
  const payments = new Payments({ chain, store, userDeposit, oneToN, serviceFee, confirmedBlock, curve: config.secp256k1 })
  // Who is online: the leader's transport knows (only the leader is on the relays); a standby answers from what the
  // leader last wrote of it in the shared store (docs/decisions/0077).
  const knowsPresence = !!transport?.presence
  const presenceOf = (node: Address): PresenceRecord | undefined => (leadership.isLeading || !database ? transport?.presence?.(node) : store.presence(node))
  const isOnline = (node: Address) => (knowsPresence ? presenceOf(node) !== undefined : true)
  const metadataOf = (node: Address): AddressMetadata | undefined => {
    if (!knowsPresence) return undefined
    const record = presenceOf(node)
    // Raiden's names, each with what plays its part on our transport: the peer id it is reached by (its user id),
    // the signature that proves the record its own (as the displayname proves the user id), and the signed
    // announcement that says where to dial it (its capabilities: how to talk to it).
    return record ? { user_id: record.peer, displayname: record.sig, capabilities: record.announcement } : undefined
  }
  const presence = presenceWriter({
    active: () => !!database && knowsPresence && leadership.isLeading && !stopped,
    watched: () => watched,
    online: (node) => transport?.presence?.(node),
    store,
    onError: (error) => log(`writing who is online: ${errorLine(error)}`, 'warn'),
  })
  const counts = { requests: 0, answered: 0, noRoute: 0, refused: 0, feedback: { success: 0, failure: 0 } }
  const feedbackBusy = new Set<string>()

  const routes = async (tokenNetwork: Address, request: RoutesRequest): Promise<RoutesAnswer> => {
    const view = networkOf(state, tokenNetwork)
    if (!view) throw new PfsAnswerError('UnsupportedTokenNetwork', 'This service does not work on the given token network.', { token_network: tokenNetwork })
    // Paid first, as raiden-services does: a request without a route is paid for all the same.
    const accepted = await payments.check(request.iou)
    const { iou: _, ...pathRequest } = request
    const found = findPaths(view, pathRequest, { isOnline, mediationFee: config.mediationFee })
    const result: RoutesAnswer['result'] = []
    if (found.ok)
      for (const route of found.paths) {
        const metadata: Record<string, AddressMetadata> = {}
        // A node gone offline since the search leaves its route out (raiden-services: a path without metadata is invalid).
        let reachable = true
        for (const node of route.path) {
          const m = metadataOf(node)
          if (m) metadata[node] = m
          else if (knowsPresence) reachable = false
        }
        if (reachable) result.push({ path: route.path, estimated_fee: route.estimatedFee, address_metadata: metadata })
      }
    const now = Date.now()
    const token = newFeedbackToken(now)
    const outcome = await store.transact((tx) => {
      if (accepted) {
        const refused = payments.store(tx, accepted)
        if (refused) return refused
      }
      if (result.length > 0) {
        const record: FeedbackRecord = {
          token,
          tokenNetwork: view.address,
          createdAt: now,
          source: request.from,
          target: request.to,
          routes: result.map((r) => ({ path: r.path, estimatedFee: r.estimated_fee })),
        }
        tx.putFeedback(record)
      }
      return undefined
    })
    if (outcome) throw new PfsAnswerError(outcome.name, outcome.message, outcome.details)
    if (!found.ok) {
      if (found.error.name === 'InvalidRequest') throw new PfsAnswerError('InvalidRequest', found.error.message)
      throw new PfsAnswerError('NoRouteFound', `${found.error.message}. Approximate block at the time of the request ${confirmedBlock()}`, {
        from: request.from,
        to: request.to,
        value: request.value,
        reason: found.error.reason,
      })
    }
    if (result.length === 0)
      throw new PfsAnswerError('NoRouteFound', 'No route between nodes found.', { from: request.from, to: request.to, value: request.value })
    return { result, feedback_token: token }
  }

  let started = false
  let stopped = false
  let pruning: ReturnType<typeof setInterval> | undefined
  const prune = () => void store.pruneFeedback(Date.now() - FEEDBACK_KEPT_MS).catch((error: unknown) => log(`pruning feedback: ${errorLine(error)}`, 'warn'))
  // On PostgreSQL only the lease holder leads; the others answer the API from the store as it follows the database.
  const leadership = new Leadership({
    lease: database?.lease,
    kind: 'pathfinding service',
    failed: (error) => failWith(error),
    log,
    lead: async () => {
      // Everything the last leader wrote (its journal above all, its claims under way) is in memory first.
      await store.catchUp()
      // What it sent before a restart or a takeover is followed again (and sent again where the chain lacks it) before anything new.
      await queue.start()
      if (stopped) return
      await registration.register()
      if (stopped) return
      watch = makeWatch()
      await watch.catchUp()
      if (stopped) return
      // Only the leader is reachable over the transport: two libp2p peers of one identity on a relay would fight.
      if (transport) await transport.start((lines, from) => intake.receive(lines, from))
      if (stopped) return void (await transport?.stop().catch(() => {}))
      watch.start()
      claims.runDue()
      prune()
      pruning = setInterval(prune, 86_400_000)
      pruning.unref?.()
    },
  })

  return {
    address,
    chain,
    queue,
    store,
    serviceFee,
    failed,
    async start(options = {}) {
      if (started) return
      started = true
      registration.url = options.url
      await leadership.start()
    },
    async stop() {
      if (stopped) return
      stopped = true
      leadership.stop()
      clearInterval(pruning)
      await intake.stop()
      await transport?.stop().catch(() => {})
      await watch?.stop()
      await registration.stop()
      await claims.stop()
      await presence.stop()
      await queue.stop()
      await store.close()
      // The lease is given up last, once nothing of this instance writes any more: a standby takes over at once.
      await database?.close()
      await chain.close()
    },
    status() {
      const progress = watch?.progress() ?? { syncedBlock: confirmedBlock(), latestBlock: confirmedBlock() }
      const ious = { held: 0, claiming: 0, claimed: 0, expired: 0, claimedAmount: 0n }
      for (const stored of store.ious()) {
        ious[stored.status]++
        if (stored.status === 'claimed') ious.claimedAmount += stored.claim?.transferred ?? 0n
      }
      let channels = 0
      let nodes = 0
      for (const view of state.networks.values()) {
        channels += view.channels.size
        nodes += view.addresses.length
      }
      let nodesOnline = 0
      for (const node of watched) if (isOnline(node as Address)) nodesOnline++
      return {
        address,
        chainId: deployment.chainId,
        registration: registration.registration,
        syncedBlock: store.sync?.syncedBlock ?? progress.syncedBlock,
        latestBlock: progress.latestBlock,
        updates: { ...intake.counters(), held_for_unconfirmed_channels: intake.deferredSize },
        network: { tokenNetworks: state.networks.size, channels, nodes, nodesOnline },
        ious,
        routes: { ...counts, feedback: { ...counts.feedback } },
        instance: leadership.role(),
      }
    },
    info() {
      return {
        price_info: serviceFee,
        network_info: {
          chain_id: deployment.chainId,
          token_network_registry_address: registry,
          user_deposit_address: userDeposit,
          service_token_address: getAddress(deployment.serviceToken),
          confirmed_block: { number: confirmedBlock() },
        },
        version,
        contracts_version: deployment.contracts_version,
        operator: config.operator ?? '',
        message: config.message ?? '',
        payment_address: address,
        UTC: new Date().toISOString().slice(0, 23),
        // Raiden's clients read a Matrix server here; ours are reached over libp2p (the relays, in the CLI's answer).
        matrix_server: '',
      }
    },
    async routes(tokenNetwork, request) {
      counts.requests++
      try {
        const answer = await routes(tokenNetwork, request)
        counts.answered++
        return answer
      } catch (error) {
        if (withCode<PfsAnswerError>(error, 'PFS_ANSWER')?.pfsName === 'NoRouteFound') counts.noRoute++
        else counts.refused++
        if (hasCode(error, 'STORAGE', 'STORAGE_CLOSED')) checkStore()
        throw error
      }
    },
    lastIou({ sender, receiver, timestamp, signature }) {
      const text = new TextEncoder().encode(timestamp)
      const signed = new Uint8Array(40 + text.length)
      signed.set(hexBytes(sender), 0)
      signed.set(hexBytes(receiver), 20)
      signed.set(text, 40)
      let signer: Address | undefined
      try {
        signer = recoverPackedSignerSync(config.secp256k1, signed, signature)
      } catch {
        signer = undefined
      }
      if (!signer || !sameAddress(signer, sender)) throw new PfsAnswerError('InvalidSignature', 'The signature did not match the signed content.')
      const at = timestampMicros(timestamp)
      if (at === undefined)
        throw new PfsAnswerError('InvalidRequest', 'Request parameter failed validation. See `error_details`.', { timestamp: ['Not a valid datetime.'] })
      if (Math.abs(at / 1000 - Date.now()) > IOU_REQUEST_MAX_AGE_MS)
        throw new PfsAnswerError('RequestOutdated', 'The request contains too old timestamps or nonces.')
      if (!sameAddress(receiver, address)) throw new PfsAnswerError('WrongIOURecipient', 'IOU not addressed to the correct receiver.', { expected: address })
      return store.activeIou(sender)
    },
    async feedback(tokenNetwork, { token, success, path }) {
      const record = await store.feedback(token)
      if (!record || !sameAddress(record.tokenNetwork, tokenNetwork) || Date.now() - record.createdAt > FEEDBACK_TOKEN_MS) return false
      const same = (route: Address[]) => route.length === path.length && route.every((a, i) => sameAddress(a, path[i]!))
      const route = record.routes.find((r) => same(r.path))
      if (!route) return false
      // A route's first feedback counts, later ones change nothing (raiden-services: `successful IS NULL`); one token's
      // feedbacks are written one at a time, so two at once cannot both be first.
      if (route.success !== undefined || feedbackBusy.has(token)) return true
      feedbackBusy.add(token)
      try {
        const fresh = (await store.feedback(token))!
        const again = fresh.routes.find((r) => same(r.path))!
        if (again.success !== undefined) return true
        again.success = success
        again.feedbackAt = Date.now()
        await store.transact((tx) => tx.putFeedback(fresh))
        counts.feedback[success ? 'success' : 'failure']++
        return true
      } finally {
        feedbackBusy.delete(token)
      }
    },
    addressMetadata: (node) => metadataOf(node),
    followed: (tokenNetwork) => networkOf(state, tokenNetwork) !== undefined,
    ious: () => store.ious(),
  }
}

/**
 * The leader's view of who is online, written in the shared store (PostgreSQL) for the standbys, which are not on the
 * relays: after each look at the chain, the watched nodes whose record changed (a new announcement, gone offline) in
 * one step that requires the lease.
 */
function presenceWriter(p: {
  active(): boolean
  watched(): ReadonlySet<string>
  online(node: Address): PresenceRecord | undefined
  store: PfsStore
  onError(error: unknown): void
}) {
  let writing: Promise<void> | undefined
  return {
    write(): void {
      if (writing || !p.active()) return
      const changed: [Address, PresenceRecord | undefined][] = []
      for (const node of p.watched()) {
        const now = p.online(node as Address)
        if (now?.sig !== p.store.presence(node as Address)?.sig) changed.push([node as Address, now])
      }
      if (changed.length === 0) return
      writing = p.store
        .transact((tx) => {
          tx.requireLease()
          for (const [node, record] of changed) tx.putPresence(node, record)
        })
        .catch(p.onError)
        .finally(() => (writing = undefined))
    },
    stop: async () => void (await writing),
  }
}

function hexBytes(address: Address): Uint8Array {
  if (!isAddress(address, { strict: false })) throw new PfsAnswerError('InvalidAddress', 'Invalid Ethereum address.')
  return Uint8Array.from(address.slice(2).match(/../g)!, (b) => Number.parseInt(b, 16))
}
