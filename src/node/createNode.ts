import { hexToBytes, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createBlockWatcher } from '../chain/blockWatcher.ts'
import { createChainClient, type ChainClient } from '../chain/chainClient.ts'
import { ChainRpcError } from '../chain/errors.ts'
import { syncChainEvents } from '../chain/eventSync.ts'
import { LogChunkSize } from '../chain/getLogsByChunk.ts'
import { SyncReads } from '../chain/syncReads.ts'
import { createTransactionQueue } from '../chain/transactionQueue.ts'
import { backgroundWasmSecp256k1, wasmOrJsSecp256k1 } from '../crypto/curveEngines.ts'
import { hasCode } from '../errors.ts'
import { nodeJournal } from './runtime/nodeJournal.ts'
import { sendProtocolTransaction, updateOnChainAlready } from '../chain/transactions.ts'
import { defaultContext, initialState, type TransitionContext } from '../protocol/state/access.ts'
import { signRequestMonitoring } from '../protocol/monitoringRequest.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { signPackedSync } from '../protocol/signature.ts'
import { createDelivery } from '../transport/delivery.ts'
import { RecentMap } from '../transport/recentMap.ts'
import { lineSigner } from '../transport/lineSigner.ts'
import { createNodeClient, type ChainNow } from './actions/client.ts'
import { DeploymentMismatchError, StaleStateError } from './errors.ts'
import { resolveNodeConfig, type NodeConfig, type ResolvedNodeConfig } from './nodeConfig.ts'
import type { NodeNotice, Report } from './notices.ts'
import { ChainFollower } from './runtime/chainFollower.ts'
import { EffectHandler } from './runtime/effectHandler.ts'
import { Engine, replay } from './runtime/engine.ts'
import { EventBus } from './runtime/eventBus.ts'
import type { Applied } from './runtime/engine.ts'
import { resolveFromHistory } from './runtime/history.ts'
import { MessageHandler } from './runtime/messageHandler.ts'
import { withOurProofKnown } from './runtime/nonceLookups.ts'
import { Gossip } from './runtime/gossip.ts'
import { Pathfinder } from './runtime/pathfinder.ts'
import { peerRecordsOf } from './runtime/routeMetadata.ts'
import { ServiceMessages } from './runtime/serviceMessages.ts'
import { Signer } from './runtime/signer.ts'
import { StatusTracker } from './runtime/status.ts'
import { TransactionRunner } from './runtime/transactionRunner.ts'
import { restoreFromBackup, type Restored } from './services/backup/restore.ts'
import { createServices } from './services/nodeServices.ts'
import { SluiceNode } from './sluiceNode.ts'
import type { NodeState } from '../protocol/state/types.ts'
import type { Loaded, Storage } from '../storage/storage.ts'

/** How many peers' public keys are kept from the transport (every node online on the relays announces one). */
const PEER_KEYS_KEPT = 4096

/**
 * The one way to build a node, for every host (`sluice serve`, `sluice devnet`, the browser worker, tests), in four
 * steps that follow here in order: it connects to the chain and opens the store side by side; reads the store
 * (restoring `config.import` first, if given, or into an empty store with `backupUrl` the newest copy on the backup
 * server, docs/decisions/0034); rebuilds the state from it; and wires the runtime around the protocol core (the
 * engine, messaging, chain following, routing and transactions; then the client the actions take, the services and
 * the node; last the effect handler that carries out what each commit applied, and halts the node). The node is not
 * running yet: `node.run()` catches up with the chain. Browser-safe: nothing reachable from here imports a Node-only
 * module (the host brings LevelDB, or native secp256k1, when it has them).
 *
 * Throws ChainRpcError / ChainIdMismatchError for the endpoint, DeploymentMismatchError when the chain has no
 * registry where the deployment says (the chain's error first when the store fails too), and the store's errors
 * (StorageLockedError when another instance holds it, DumpRejectedError for a refused import), and the backup
 * client's coded errors when an empty store's copy cannot be had or opened.
 */
export async function createNode(nodeConfig: NodeConfig): Promise<SluiceNode> {
  const secp256k1 = nodeConfig.secp256k1 ?? (await loadCurveEngine(nodeConfig.secp256k1Wasm))
  const { config, confirmations } = resolveNodeConfig({ ...nodeConfig, secp256k1 })
  if (!config.rpc && !config.provider) throw new TypeError('createNode needs `rpc` or `provider`')
  // What the node tells its listeners; an endpoint going down or coming back is one of its notices.
  const notices = new EventBus<NodeNotice>()
  const address = privateKeyToAddress(config.key)
  const { chain, storage } = await openChainAndStore(config, address, notices)
  try {
    const { loaded, restored } = await readStore(storage, chain, config, nodeConfig.import)
    const { state, seq, ctx, syncedBlock } = stateOf(loaded, config, confirmations, address)
    return await wireNode({ config, confirmations, chain, storage, loaded, restored, notices, address, state, seq, ctx, syncedBlock })
  } catch (error) {
    await Promise.all([storage.close().catch(() => {}), chain.close().catch(() => {})])
    throw error
  }
}

/**
 * The node's curve engine when its host gave none: the WASM one, loaded before the node starts, or (`background`) an
 * engine of this node's own that is JS until the WASM has loaded. The engine is only a matter of speed: all sign the
 * same bytes (RFC 6979), so the switch may happen while the node runs.
 */
async function loadCurveEngine(wasm: NodeConfig['secp256k1Wasm']): Promise<Secp256k1Engine> {
  return wasm === 'background' ? backgroundWasmSecp256k1().engine : wasmOrJsSecp256k1()
}

/**
 * Step 1: the chain client (its registry checked where the deployment says) and the store, opened side by side:
 * neither waits for the other (in a page, IndexedDB's open and the endpoint's first answers overlap). When the chain
 * fails, the store opened is closed again and the chain's error thrown; when the store fails, the chain is closed.
 */
async function openChainAndStore(
  config: ResolvedNodeConfig,
  address: Address,
  notices: EventBus<NodeNotice>,
): Promise<{ chain: ChainClient; storage: Storage }> {
  const { deployment } = config
  const registry = deployment.contracts.TokenNetworkRegistry.address
  const connecting = (async () => {
    const chain = await createChainClient({
      ...(config.rpc ? { rpcUrl: config.rpc } : {}),
      ...(config.provider ? { provider: config.provider } : {}),
      endpoints: {
        onChange: (change) => notices.publish({ type: 'rpcEndpoint', ...change }),
        ...(config.onRpcFailure ? { onFailure: config.onRpcFailure } : {}),
      },
      privateKey: config.key,
      curve: config.secp256k1,
      chainId: deployment.chainId,
      pollingInterval: config.pollingInterval,
    })
    try {
      const code = await chain.publicClient.getCode({ address: registry }).catch((e: unknown) => {
        throw new ChainRpcError('eth_getCode', e)
      })
      if (!code || code === '0x') throw new DeploymentMismatchError(registry)
      return chain
    } catch (error) {
      // A client of a WebSocket endpoint left open would keep its connection (and a Node.js process) alive.
      await chain.close().catch(() => {})
      throw error
    }
  })()
  const opening = config.storage({ chainId: BigInt(deployment.chainId), registry, address })
  const [chain, storage] = await Promise.allSettled([connecting, opening])
  if (chain.status === 'rejected') {
    if (storage.status === 'fulfilled') await storage.value.close().catch(() => {})
    throw chain.reason
  }
  if (storage.status === 'rejected') {
    await chain.value.close().catch(() => {})
    throw storage.reason
  }
  return { chain: chain.value, storage: storage.value }
}

/**
 * Step 2: what the store holds, the import given (`config.import`) put in first. An empty store (wiped: Safari's
 * 7 days, site data cleared, a lost disk; or never run) takes the backup server's newest copy first, with
 * `backupUrl` (docs/decisions/0034). A store with transactions in its journal has run: never wiped (the copy holds
 * no journal).
 */
async function readStore(
  storage: Storage,
  chain: ChainClient,
  config: ResolvedNodeConfig,
  dump: NodeConfig['import'],
): Promise<{ loaded: Loaded; restored: Restored | undefined }> {
  if (dump) await storage.importDump(dump)
  const loaded = await storage.load()
  const wiped = !loaded.snapshot && loaded.changes.length === 0 && loaded.chainTransactions.length === 0
  if (!wiped) return { loaded, restored: undefined }
  // Channels of ours opened up to the head that no copy holds (opened after it, or no copy, or no backup server)
  // are of a life the store forgot, in which it signed nonces it no longer knows: the first sync finds them on
  // chain, and they wait for their partner's sync before signing again (decision 0034). A key that never ran
  // has none, and nothing waits.
  const openedUpTo = await chain.publicClient.getBlockNumber().catch((e: unknown) => {
    throw new ChainRpcError('eth_blockNumber', e)
  })
  let restored: Restored | undefined
  if (config.backupUrl !== undefined)
    restored = await restoreFromBackup(storage, {
      url: config.backupUrl,
      key: config.key,
      curve: config.secp256k1,
      openedUpTo,
      ...(config.backup?.timeoutMs ? { timeoutMs: config.backup.timeoutMs } : {}),
    })
  if (!restored) await storage.commit({ changes: [{ seq: 1, time: Date.now(), change: { type: 'restored', version: 0n, openedUpTo } }] })
  return { loaded: await storage.load(), restored }
}

/**
 * Step 3: the state the store holds, its snapshot and the changes after it replayed, and the block the chain is
 * followed from. A state found stale signs nothing again: restore the newest backup instead (docs/decisions/0029).
 */
function stateOf(
  loaded: Loaded,
  config: ResolvedNodeConfig,
  confirmations: bigint,
  address: Address,
): { state: NodeState; seq: number; ctx: TransitionContext; syncedBlock: bigint } {
  const { deployment } = config
  const ctx: TransitionContext = { ...defaultContext, ...config.context, confirmationBlocks: confirmations, curve: config.secp256k1 }
  const deployedAt = BigInt(deployment.contracts.TokenNetworkRegistry.blockNumber)
  // The first message id comes from the store, not the clock: a replay from the start (no snapshot yet, or a
  // restored dump) must rebuild exactly the messages and balance proofs that were signed and sent.
  const base =
    loaded.snapshot?.state ??
    initialState({ address, chainId: BigInt(deployment.chainId), blockNumber: deployedAt - 1n, firstMessageId: BigInt(loaded.meta.createdAt) })
  const { state, seq } = replay(base, loaded.snapshot?.seq ?? 0, loaded.changes, ctx)
  if (state.stale) throw new StaleStateError(`this node's stored state is older than what it signed: ${state.stale.reason}`)
  const syncedBlock = loaded.meta.syncedBlock > 0n ? loaded.meta.syncedBlock : deployedAt - 1n
  return { state, seq, ctx, syncedBlock }
}

type Opened = {
  config: ResolvedNodeConfig
  confirmations: bigint
  chain: ChainClient
  storage: Storage
  loaded: Loaded
  restored: Restored | undefined
  notices: EventBus<NodeNotice>
  address: Address
  state: NodeState
  seq: number
  ctx: TransitionContext
  syncedBlock: bigint
}

/**
 * Step 4: the runtime wired around the protocol core, each part made from parts above it: the engine, the
 * transaction queue, messaging (the transport, delivery, the signer), chain following, routing, transactions; then
 * the client the actions take, the services and the node; last the effect handler. The two cycles (the engine and
 * its effect handler, delivery and the service messages) are closed once both sides exist, and the outbox resumes
 * once all is wired (docs/decisions/0050).
 */
async function wireNode(o: Opened): Promise<SluiceNode> {
  const { config, confirmations, chain, storage, loaded, restored, notices, address, ctx } = o
  const commits = new EventBus<number>()
  // Each commit's changes, for what observes the node from outside (a headless host's metrics): after `commits`.
  const appliedChanges = new EventBus<readonly Applied[]>()
  const stopping = new AbortController()
  const report: Report = (where, error, detail) => {
    if (!stopping.signal.aborted) notices.publish({ type: 'error', error, where, ...(detail ? { detail } : {}) })
  }
  // The loop. It commits nothing before it is handed the effect handler, made below from the parts it drives.
  const engine = new Engine({
    state: o.state,
    seq: o.seq,
    replayed: loaded.changes.length,
    ctx,
    storage,
    now: Date.now,
    snapshotEvery: config.snapshotEvery,
    snapshotWhenIdle: config.snapshotWhenIdle,
  })
  // Every transaction of the account, journaled in the store before it is broadcast (docs/decisions/0051, 0054).
  const queue = createTransactionQueue(chain, {
    journal: nodeJournal(engine, loaded.chainTransactions),
    confirmations,
    // A caller (a REST request) waits this long for its transaction, then is answered CONFIRMATION_TIMEOUT: it goes on.
    timeoutMs: config.confirmationTimeoutMs,
    ...(config.maxFeePerGas !== undefined ? { maxFeePerGas: config.maxFeePerGas } : {}),
    onRisk: (nonce, risk) => notices.publish({ type: 'transactionRisk', id: `nonce:${nonce}`, risk }),
    // An endpoint failing a look is the sync's to tell (it fails there too); the rest is the operator's to know.
    onError: (error) => {
      if (!hasCode(error, 'CHAIN_RPC')) report('transaction', error)
    },
  })
  const { transport, peerRecords, peerKeys, signer, delivery, serviceMessages } = await wireMessaging({
    config,
    address,
    engine,
    storage,
    notices,
    report,
    chainNow: () => client.chainNow(),
  })
  const { follower, status } = wireChainFollowing({
    config,
    chain,
    engine,
    storage,
    notices,
    report,
    stopping,
    confirmations,
    syncedBlock: o.syncedBlock,
    loaded,
  })
  // Route announcements between nodes (docs/decisions/0074): ours to our partners, theirs checked, held and passed on.
  const gossip = new Gossip({ config, state: () => engine.current, delivery })
  delivery.onAnnouncement((update, from) => void gossip.receive(update, from))
  transport.onPeerSeen?.((peer) => gossip.peerSeen(peer))
  // The pathfinding service's client (docs/decisions/0073): our channels announced to it, routes asked of it.
  const pathfinder = new Pathfinder({
    config,
    chain,
    state: () => engine.current,
    headBlock: () => status.headBlock(),
    signer,
    serviceMessages,
    gossip,
    notify: (notice) => notices.publish(notice),
    stopped: stopping.signal,
  })
  const transactions = wireTransactions({ config, chain, queue, engine, storage, notices, report, stopping })

  const client = createNodeClient({
    config,
    chain,
    queue,
    storage,
    engine,
    delivery,
    transport,
    peerKeys,
    peerRecords,
    commits,
    applied: appliedChanges,
    follower,
    status,
    notices,
    stopped: stopping.signal,
    report,
    paymentSlots: Math.max(1, ctx.maxPendingLocks - 32),
    serviceMessages,
    pathfinder,
    gossip,
  })
  const node = new SluiceNode({
    client,
    services: createServices(client, restored ? { restored } : {}),
    storage,
    engine,
    delivery,
    follower,
    transactions,
    pendingTransactions: loaded.transactions,
    notices,
    status,
    report,
    stopping,
  })

  // Carries out each durable commit, and halts the node when one finds the state stale.
  const effects = new EffectHandler({
    engine,
    delivery,
    transactions,
    notices,
    signer,
    ...(config.resolverEndpoint ? { resolver: { endpoint: config.resolverEndpoint, fetch: config.fetch, backoff: config.backoff } } : {}),
    announce: (effect) => pathfinder.announce(effect),
    blockSynced: () => status.progressed(),
    halt: (error) => void node.halt(error),
    report,
    stopped: stopping.signal,
  })
  engine.handEffectsTo((applied) => {
    effects.handle(applied)
    commits.publish(applied.at(-1)!.seq)
    appliedChanges.publish(applied)
  })
  // A store another instance can take over (PostgreSQL's, under a lease: docs/decisions/0076): once this instance lost
  // it, nothing more leaves the node, resends included (delivery stops at once and the signer refuses), and the node
  // halts; its commits fail already (LeaseLostError), so nothing it would send was ever recorded as sent.
  storage.onLeaseLost?.((error) => {
    signer.refuse(error)
    void delivery.stop()
    void node.halt(error)
  })
  // Everything wired: what the last run left unacknowledged waits in delivery for the node's run.
  delivery.resume(loaded.outbox, config.resendWhen)
  return node
}

/** Messaging: the transport, what comes in turned into changes, the node's one signer, delivery and the service messages. */
async function wireMessaging(p: {
  config: ResolvedNodeConfig
  address: Address
  engine: Engine
  storage: Storage
  notices: EventBus<NodeNotice>
  report: Report
  chainNow: () => ChainNow
}) {
  const { config, address, engine, notices } = p
  const transport = await config.transport({ address, key: config.key })
  // Presence records a pathfinding service or a LockedTransfer hands on, checked by the transport (docs/decisions/0073).
  const peerRecords = peerRecordsOf(transport, (notice) => notices.publish(notice))
  const messages = new MessageHandler({
    engine,
    store: p.storage,
    address,
    privateKey: hexToBytes(config.key),
    curve: config.secp256k1,
    report: p.report,
    chainNow: p.chainNow,
    peerRecords,
  })
  // A partner's messages that came before the chain showed us their channel go to the core once it has.
  notices.subscribe((notice) => {
    if (notice.type === 'channelStateChanged' && notice.state === 'opened') messages.channelOpened(notice.tokenNetwork, notice.channelId)
  })
  // Keys the transport authenticated as peers came online: a payment's secret can go to a target in its first
  // LockedTransfer before any message of the target reached us (no SecretRequest round trip).
  const peerKeys = new RecentMap<string, Hex>(PEER_KEYS_KEPT)
  // The node's one signer, under the stale-state rule: delivery, the service messages and the effect handler share it.
  const signer = new Signer({
    engine,
    signLine: lineSigner(config.secp256k1, config.key),
    signRequest: (parameters) => signRequestMonitoring(config.secp256k1, config.key, parameters),
    signBytes: (data) => signPackedSync(config.secp256k1, config.key, data),
  })
  const delivery = createDelivery({
    transport,
    curve: config.secp256k1,
    onPeerKey: (peer, publicKey) => peerKeys.set(peer.toLowerCase(), publicKey),
    address,
    sign: (message) => signer.sign(message),
    onMessage: (message, sender, senderKey) => messages.receive(message, sender, senderKey),
    backoff: config.backoff,
  })
  const serviceMessages = new ServiceMessages({ delivery, signer })
  // A service's messages are acknowledged to the service; the rest are the engine's outbox rows.
  delivery.onAcknowledged((keys) => {
    const outbox = serviceMessages.acknowledged(keys)
    if (outbox.length) engine.forget(outbox)
  })
  return { transport, peerRecords, peerKeys, signer, delivery, serviceMessages }
}

/** Chain following: the sync's bounded reads, the block watcher and the events of each step, and the node's status. */
function wireChainFollowing(p: {
  config: ResolvedNodeConfig
  chain: ChainClient
  engine: Engine
  storage: Storage
  notices: EventBus<NodeNotice>
  report: Report
  stopping: AbortController
  confirmations: bigint
  syncedBlock: bigint
  loaded: Loaded
}): { follower: ChainFollower; status: StatusTracker } {
  const { config, chain, engine, storage } = p
  const { deployment } = config
  const chunkSize = new LogChunkSize()
  // The sync's reads: each bounded in time and retried in place; what they meet says whether the chain is in reach.
  const reads = new SyncReads({ signal: p.stopping.signal })
  const follower = new ChainFollower(
    {
      engine,
      // A long catch-up in pieces of one eth_getLogs each, every piece durable with its synced mark and block hashes.
      watcher: createBlockWatcher(chain.publicClient, {
        fromBlock: p.syncedBlock,
        confirmations: p.confirmations,
        maxRange: () => chunkSize.current,
        reads,
        ...(p.loaded.meta.recentBlocks ? { recentBlocks: p.loaded.meta.recentBlocks } : {}),
      }),
      pollingInterval: config.pollingInterval,
      events: async ({ fromBlock, toBlock, tokenNetworks }) => {
        const synced = await syncChainEvents(chain.publicClient, {
          contracts: {
            tokenNetworkRegistry: deployment.contracts.TokenNetworkRegistry.address,
            secretRegistry: deployment.contracts.SecretRegistry.address,
            userDeposit: deployment.contracts.UserDeposit.address,
          },
          tokenNetworks,
          fromBlock,
          toBlock,
          defaultRevealTimeout: config.defaultRevealTimeout,
          chunkSize,
          reads,
        })
        // A close or update that put a proof of ours on-chain is checked against the proofs we signed.
        for (const e of synced.events) if (e.change) e.change = await withOurProofKnown(engine.current, e.change, storage)
        return synced.events
      },
      onError: p.report,
      endpoint: () => reads.health,
      onStep: () => status.progressed(),
    },
    p.syncedBlock,
  )
  const status = new StatusTracker(follower, p.notices, { pollingInterval: config.pollingInterval })
  return { follower, status }
}

/** The protocol's transactions: each sent through the queue (joined again after a restart by its key) and followed until mined. */
function wireTransactions(p: {
  config: ResolvedNodeConfig
  chain: ChainClient
  queue: ReturnType<typeof createTransactionQueue>
  engine: Engine
  storage: Storage
  notices: EventBus<NodeNotice>
  report: Report
  stopping: AbortController
}): TransactionRunner {
  const { config, chain, notices, stopping } = p
  return new TransactionRunner({
    engine: p.engine,
    receipt: (hash) => chain.publicClient.getTransactionReceipt({ hash }),
    send: async (record, onSubmitted) => {
      const transaction = await resolveFromHistory(record.transaction, p.storage)
      // Back within the settle window after a monitoring service put this proof on-chain: nothing left to send.
      if (transaction.type === 'update' && (await updateOnChainAlready(chain, transaction))) return
      return sendProtocolTransaction(transaction, {
        queue: p.queue,
        signer: chain,
        secretRegistry: config.deployment.contracts.SecretRegistry.address,
        onSubmitted,
        // A restart joins the transaction the journal holds for this intent instead of sending another.
        key: record.key,
        // The node's own: followed until mined, however long (its risk is told meanwhile).
        timeoutMs: Number.POSITIVE_INFINITY,
      })
    },
    onFailed: (transaction, error) => {
      p.report('transaction', error, transaction.type)
      notices.publish({ type: 'transactionFailed', transaction, error })
    },
    onRisk: (key, risk) => notices.publish({ type: 'transactionRisk', id: key, risk }),
    retryMs: Math.max(config.pollingInterval, 1_000),
    isStopping: () => stopping.signal.aborted,
    stopped: stopping.signal,
  })
}
