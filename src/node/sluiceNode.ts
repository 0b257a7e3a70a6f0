import { bytesToHex, hexToBytes, sha256, type Address, type Hex } from 'viem'
import {
  createBlockWatcher,
  createChainClient,
  createTransactionQueue,
  LogChunkSize,
  openChannel as sendOpenChannel,
  sendProtocolTransaction,
  setTotalDeposit as sendSetTotalDeposit,
  syncChainEvents,
  transactionFailedChange,
  type BlockWatcher,
  type BlockWatcherEvent,
  type ChainClient,
  type TransactionQueue,
} from '../chain/index.ts'
import type { Deployment } from '../devnet/deployment.ts'
import { channelWith, defaultContext, initialState, type TransitionContext } from '../protocol/state/access.ts'
import type { StateChange } from '../protocol/state/changes.ts'
import type { NodeEvent, SecretResolverRequest } from '../protocol/state/effects.ts'
import type { Channel, NodeState } from '../protocol/state/types.ts'
import { findRoutes } from '../protocol/routing/findRoutes.ts'
import { useWasmSecp256k1 } from '../protocol/secp256k1.ts'
import { decryptSecret, encryptSecret } from '../protocol/secretCipher.ts'
import { knownPublicKey } from '../protocol/signature.ts'
import type { Message, Signed } from '../protocol/messages/types.ts'
import type { Storage, StorageIdentity, TransactionRecord } from '../storage/storage.ts'
import { createDelivery, type Delivery } from '../transport/delivery.ts'
import { defaultBackoff, retryDelay } from '../transport/backoff.ts'
import { lineSigner } from '../transport/lineSigner.ts'
import type { Transport } from '../transport/transport.ts'
import { Engine, replay, type Applied } from './engine.ts'
import { resolveFromHistory } from './history.ts'
import { Semaphore } from './semaphore.ts'
import { EventBus } from './eventBus.ts'
import { NodeStoppedError, PaymentFailedError, NoRouteError, ChannelNotFoundError, InvalidPaymentError } from './errors.ts'

export type NodeOptions = {
  rpcUrl: string
  deployment: Deployment
  privateKey: Hex
  /** Opens this node's store (one per chain, registry and address). */
  storage: (identity: StorageIdentity) => Promise<Storage>
  transport: (address: Address) => Transport
  /** Blocks on top of a block before its events count (5 by default; 0 suits a local dev chain). */
  confirmations?: bigint
  /** Milliseconds between looks at the chain. */
  pollingInterval?: number
  defaultRevealTimeout?: bigint
  defaultSettleTimeout?: bigint
  /** Where to ask for the secret of a payment started with only its hash (rest-api.md, secret resolver). */
  resolverEndpoint?: string
  /** Delivery retry backoff. */
  backoff?: { initialMs?: number; maxMs?: number }
  snapshotEvery?: number
  context?: Partial<TransitionContext>
  /**
   * Put each payment's secret in its LockedTransfer's metadata, encrypted to the target (protocol.md §3.9, the
   * light client's format), when the target's public key is known: the target then needs no SecretRequest and
   * RevealSecret from us. On by default; `false` for peers that mishandle the extra metadata field. Secrets that
   * arrive this way are used whatever this says.
   */
  encryptSecret?: boolean
  /**
   * A URL answering `{"latest": "0.2.0", "security": ["0.1.0"]}`: the notifications version_outdated and
   * version_security_warning come from it (neither is raised without it).
   */
  releaseFeedUrl?: string
  /** Service tokens the UserDeposit must hold before low_service_token goes away (5.5e18 by default). */
  minServiceTokenBalance?: bigint
}

export type NodeStatus = { status: 'syncing' | 'ready' | 'stopped'; blocksToSync: bigint; syncedBlock: bigint }

export type NodeNotice = NodeEvent | { type: 'status'; status: NodeStatus } | { type: 'error'; error: unknown; where: string }

export type PayParameters = {
  tokenNetwork: Address
  target: Address
  amount: bigint
  paymentId?: bigint
  secret?: Hex
  secrethash?: Hex
  lockTimeout?: bigint
}

export type PaymentResult = Extract<NodeEvent, { type: 'paymentSentSuccess' }>

const randomBytes32 = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
const randomUint64 = (): bigint => BigInt(bytesToHex(crypto.getRandomValues(new Uint8Array(8)))) || 1n

/**
 * One node: the pure protocol core behind an engine that makes every change durable before its effects, wired
 * to the chain (sync and transactions), the delivery layer and the store. The same class runs headless in Node
 * and inside a browser worker.
 */
export class SluiceNode {
  readonly notices = new EventBus<NodeNotice>()
  private engine!: Engine
  private delivery!: Delivery
  private watcher!: BlockWatcher
  /** This account's ordered transaction queue: every on-chain action of the node goes through it. */
  queue!: TransactionQueue
  /** The node's store (payment history, events, chain events); services read it, only the engine writes. */
  storage!: Storage
  private transport!: Transport
  private readonly chunkSize = new LogChunkSize()
  private readonly ctx: TransitionContext
  private statusValue: NodeStatus = { status: 'syncing', blocksToSync: 0n, syncedBlock: 0n }
  private stopping = false
  /** Rejects on stop: whatever waits for an outcome (a payment's) races it and gives up with NodeStoppedError. */
  private readonly whenStopped: Promise<never>
  private rejectStopped: (error: Error) => void = () => {}
  private readonly runningTransactions = new Set<string>()
  /**
   * Payments in flight at once. A channel end holds at most `maxPendingLocks` locks, so more concurrent
   * payments than that would fail; instead they wait here for a slot.
   */
  private readonly paymentSlots: Semaphore
  private privateKeyBytes: Uint8Array | undefined

  private constructor(
    readonly options: NodeOptions,
    readonly chain: ChainClient,
  ) {
    this.ctx = { ...defaultContext, ...options.context, ...(options.confirmations !== undefined ? { confirmationBlocks: options.confirmations } : {}) }
    this.paymentSlots = new Semaphore(Math.max(1, this.ctx.maxPendingLocks - 32))
    this.whenStopped = new Promise<never>((_, reject) => (this.rejectStopped = reject))
    this.whenStopped.catch(() => {})
  }

  get address(): Address {
    return this.chain.address
  }

  get state(): NodeState {
    return this.engine.current
  }

  get status(): NodeStatus {
    return this.statusValue
  }

  /** Creates the node and runs it: resolves once it has caught up with the chain and is ready. */
  static async start(options: NodeOptions): Promise<SluiceNode> {
    const node = await SluiceNode.create(options)
    await node.run()
    return node
  }

  /**
   * Creates the node without starting it, so that its status can be watched while `run()` catches up with
   * the chain (the REST API answers /status during the first sync).
   */
  static async create(options: NodeOptions): Promise<SluiceNode> {
    await useWasmSecp256k1()
    const chain = await createChainClient({ rpcUrl: options.rpcUrl, privateKey: options.privateKey, chainId: options.deployment.chainId, ...(options.pollingInterval ? { pollingInterval: options.pollingInterval } : {}) })
    return new SluiceNode(options, chain)
  }

  /** Opens the store, replays it, resumes deliveries and transactions, and catches up with the chain. */
  async run(): Promise<void> {
    if (this.engine) throw new Error('the node is already running')
    await this.boot()
  }

  private get registry(): Address {
    return this.options.deployment.contracts.TokenNetworkRegistry.address
  }

  private async boot() {
    const { deployment } = this.options
    this.storage = await this.options.storage({ chainId: BigInt(deployment.chainId), registry: this.registry, address: this.address })
    const loaded = await this.storage.load()
    const deployedAt = BigInt(deployment.contracts.TokenNetworkRegistry.blockNumber)
    // The first message id comes from the store, not the clock: a replay from the start (no snapshot yet, or a
    // restored dump) must rebuild exactly the messages and balance proofs that were signed and sent.
    const base = loaded.snapshot?.state ?? initialState({ address: this.address, chainId: BigInt(deployment.chainId), blockNumber: deployedAt - 1n, firstMessageId: BigInt(loaded.meta.createdAt) })
    const { state, seq } = replay(base, loaded.snapshot?.seq ?? 0, loaded.changes, this.ctx)
    const syncedBlock = loaded.meta.syncedBlock > 0n ? loaded.meta.syncedBlock : deployedAt - 1n
    this.statusValue = { status: 'syncing', blocksToSync: 0n, syncedBlock }
    this.engine = new Engine({ state, seq, ctx: this.ctx, storage: this.storage, now: Date.now, snapshotEvery: this.options.snapshotEvery ?? 500, onApplied: (a) => this.onApplied(a) })
    this.queue = createTransactionQueue(this.chain)
    this.transport = this.options.transport(this.address)
    this.delivery = createDelivery({
      transport: this.transport,
      address: this.address,
      sign: lineSigner(this.options.privateKey),
      // The promise tells delivery when the message is durable: its Delivered waits for that (a crash between
      // the two would lose a SecretRequest or RevealSecret its sender no longer retries).
      onMessage: (message, sender) => {
        const decryptedSecret = this.secretFromMetadata(message)
        const applied = this.engine.dispatch({ type: 'receive', message, sender, ...(decryptedSecret ? { decryptedSecret } : {}) })
        applied.catch((error) => this.fail('receive', error))
        return applied
      },
      onAcknowledged: (keys) => this.engine.forget(keys),
      ...(this.options.backoff ? { backoff: this.options.backoff } : {}),
    })
    // Unacknowledged messages go out again, and transactions that were pending are checked again.
    this.delivery.enqueue(loaded.outbox)
    await this.delivery.start()
    for (const record of loaded.transactions) this.runTransaction(record)

    this.watcher = createBlockWatcher(this.chain.publicClient, {
      fromBlock: syncedBlock,
      confirmations: this.ctx.confirmationBlocks,
      ...(this.options.pollingInterval ? { pollingInterval: this.options.pollingInterval } : {}),
    })
    // Catch up before serving: the first sync can be long, and the status tells how far it is.
    while (!this.stopping && (await this.syncOnce()));
    // Stopped during the first sync (Ctrl-C while catching up): never start watching after stop().
    if (this.stopping) throw new NodeStoppedError()
    this.setStatus('ready')
    this.watcher.start(
      (event) => this.onChainEvent(event),
      (error) => this.fail('chain sync', error),
    )
  }

  /** The secret the initiator encrypted to us in a LockedTransfer's metadata, if any opens (the core checks it fits). */
  private secretFromMetadata(message: Signed<Message>) {
    if (message.type !== 'LockedTransfer' || typeof message.metadata.secret !== 'string') return undefined
    if (message.target.toLowerCase() !== this.address.toLowerCase()) return undefined
    this.privateKeyBytes ??= hexToBytes(this.options.privateKey)
    return decryptSecret(message.metadata.secret, this.privateKeyBytes)
  }

  /** `secret` encrypted to `target` for the LockedTransfer's metadata, when enabled and the target's key is known. */
  private secretForTarget(target: Address, secret: Hex | undefined, amount: bigint, paymentId: bigint): Hex | undefined {
    if (!secret || this.options.encryptSecret === false) return undefined
    const targetPublicKey = knownPublicKey(target)
    if (!targetPublicKey) return undefined
    try {
      return encryptSecret({
        payload: { secret, amount, paymentId },
        targetPublicKey,
        ephemeralPrivateKey: crypto.getRandomValues(new Uint8Array(32)),
        nonce: crypto.getRandomValues(new Uint8Array(16)),
      })
    } catch {
      return undefined // an ephemeral key out of range (about 2^-128): the target asks for the secret instead
    }
  }

  private setStatus(status: NodeStatus['status']) {
    const progress = this.watcher?.progress()
    this.statusValue = { status, blocksToSync: progress?.blocksToSync ?? 0n, syncedBlock: this.engine.current.blockNumber }
    this.notices.publish({ type: 'status', status: this.statusValue })
  }

  private fail(where: string, error: unknown) {
    if (!this.stopping) this.notices.publish({ type: 'error', error, where })
  }

  /** Looks at the chain once and applies what is new; false when there was nothing. */
  private async syncOnce(): Promise<boolean> {
    const event = await this.watcher.poll()
    if (!event) return false
    await this.onChainEvent(event)
    if (event.type === 'blocks') this.watcher.synced(event)
    return true
  }

  private async onChainEvent(event: BlockWatcherEvent): Promise<void> {
    if (event.type === 'reorg') {
      // Only confirmed blocks are acted on; a reorg deeper than that is reported, and the range synced again.
      this.fail('chain reorg', new Error(`blocks from ${event.resyncFrom} were replaced${event.deep ? ' (deeper than remembered)' : ''}`))
      return
    }
    const { deployment } = this.options
    const known = Object.keys(this.engine.current.tokenNetworks) as Address[]
    const { events } = await syncChainEvents(this.chain.publicClient, {
      contracts: { tokenNetworkRegistry: this.registry, secretRegistry: deployment.contracts.SecretRegistry.address, userDeposit: deployment.contracts.UserDeposit.address },
      tokenNetworks: known,
      fromBlock: event.fromBlock,
      toBlock: event.toBlock,
      defaultRevealTimeout: this.options.defaultRevealTimeout ?? 50n,
      chunkSize: this.chunkSize,
    })
    // All of the range and the block itself go into one commit: either the range is synced, or none of it.
    const pending: Promise<Applied>[] = []
    for (const e of events) {
      if (e.change) pending.push(this.engine.dispatch(e.change, { chainEvents: [e.event] }))
    }
    const rawOnly = events.filter((e) => !e.change).map((e) => e.event)
    pending.push(this.engine.dispatch({ type: 'block', blockNumber: event.toBlock }, { meta: { syncedBlock: event.toBlock }, chainEvents: rawOnly }))
    await Promise.all(pending)
    const progress = this.watcher.progress()
    this.statusValue = { ...this.statusValue, blocksToSync: progress.blocksToSync, syncedBlock: event.toBlock }
  }

  private onApplied(applied: Applied[]) {
    for (const a of applied) {
      if (a.outbox.length) this.delivery.enqueue(a.outbox)
      for (const record of a.transactions) this.runTransaction(record)
      for (const effect of a.effects) {
        if (effect.type === 'event') this.notices.publish(effect.event)
        else if (effect.type === 'resolveSecret') void this.resolveSecret(effect.request)
      }
    }
  }

  /** Carries out a stored transaction intent; its record is dropped once it is mined or has failed for good. */
  private runTransaction(record: TransactionRecord) {
    if (this.runningTransactions.has(record.key)) return
    this.runningTransactions.add(record.key)
    const done = () => {
      this.runningTransactions.delete(record.key)
      this.engine.forget([], [record.key])
    }
    const run = async () => {
      if (record.status === 'sent' && record.hash) {
        // Sent before a restart: it may have been mined meanwhile.
        const receipt = await this.chain.publicClient.getTransactionReceipt({ hash: record.hash }).catch(() => undefined)
        if (receipt) {
          if (receipt.status !== 'success') await this.engine.dispatch(transactionFailedChange(record.transaction, new Error('reverted')))
          return done()
        }
      }
      try {
        const transaction = await resolveFromHistory(record.transaction, this.storage)
        await sendProtocolTransaction(transaction, {
          queue: this.queue,
          signer: this.chain,
          secretRegistry: this.options.deployment.contracts.SecretRegistry.address,
          onSubmitted: ({ hash, nonce }) => this.engine.updateTransaction({ ...record, status: 'sent', hash, nonce }),
        })
      } catch (error) {
        if (this.stopping) return
        this.fail(`transaction ${record.transaction.type}`, error)
        await this.engine.dispatch(transactionFailedChange(record.transaction, error))
      }
      done()
    }
    void run().catch((error) => this.fail('transaction', error))
  }

  /**
   * Asks the resolver endpoint for the secret of a payment started with only its hash. A resolver that is
   * unreachable or answers 503 is asked again with the delivery backoff until the lock expires (as the Raiden
   * node does); any other answer than 200 with a secret ends it (the payment then fails when the lock expires).
   */
  private async resolveSecret(request: SecretResolverRequest) {
    const endpoint = this.options.resolverEndpoint
    if (!endpoint) return
    // rest-api.md types the numbers as JSON integers: written digit for digit (JSON.stringify cannot write a bigint).
    const body = JSON.stringify(
      {
        token: request.token,
        secrethash: request.secrethash,
        amount: request.amount,
        payment_identifier: request.paymentIdentifier,
        payment_sender: request.paymentSender,
        payment_recipient: request.paymentRecipient,
        expiration: request.expiration,
        reveal_timeout: request.revealTimeout,
        settle_timeout: request.settleTimeout,
      },
      (_, v) => (typeof v === 'bigint' ? `#int:${v}` : v),
    ).replace(/"#int:(\d+)"/g, '$1')
    const backoff = { ...defaultBackoff, ...this.options.backoff }
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined
      try {
        response = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      } catch (error) {
        this.fail('secret resolver', error)
      }
      if (response && response.status !== 503) {
        try {
          if (!response.ok) throw new Error(`resolver answered ${response.status}`)
          const answer = (await response.json()) as { secret?: unknown }
          if (typeof answer.secret !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(answer.secret)) throw new Error('resolver gave no 32-byte secret')
          await this.engine.dispatch({ type: 'secretResolved', secrethash: request.secrethash, secret: answer.secret.toLowerCase() as Hex })
        } catch (error) {
          this.fail('secret resolver', error)
        }
        return
      }
      if (response) this.fail('secret resolver', new Error('resolver answered 503; asking again'))
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryDelay(backoff, attempt))
        void this.whenStopped.catch(() => (clearTimeout(timer), resolve()))
      })
      if (this.stopping || this.engine.current.blockNumber >= request.expiration) return
    }
  }

  // ---- actions ---------------------------------------------------------------------------------------------

  /** Dispatches a change and waits until it is durable (its effects are under way). */
  dispatch(change: StateChange): Promise<Applied> {
    if (this.stopping) return Promise.reject(new NodeStoppedError())
    return this.engine.dispatch(change)
  }

  /** Resolves once the state has synced the given block (chain events up to it are applied). */
  async waitForBlock(blockNumber: bigint, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (this.engine.current.blockNumber < blockNumber) {
      if (this.stopping) throw new NodeStoppedError()
      if (Date.now() > deadline) throw new Error(`block ${blockNumber} not synced within ${timeoutMs} ms`)
      if (!(await this.syncOnce())) await new Promise((r) => setTimeout(r, 20))
    }
    await this.engine.settled()
  }

  channel(tokenNetwork: Address, partner: Address): Channel | undefined {
    return channelWith(this.engine.current, tokenNetwork, partner)
  }

  /** Opens a channel (with our deposit, if any) and returns it once the node has synced its opening. */
  async openChannel({ tokenNetwork, partner, settleTimeout, revealTimeout, totalDeposit }: { tokenNetwork: Address; partner: Address; settleTimeout?: bigint; revealTimeout?: bigint; totalDeposit?: bigint }): Promise<Channel> {
    const sent = await sendOpenChannel(this.chain, this.queue, { tokenNetwork, partner, settleTimeout: settleTimeout ?? this.options.defaultSettleTimeout ?? 500n, ...(totalDeposit ? { totalDeposit } : {}) })
    await this.waitForBlock(sent.receipt.blockNumber)
    if (revealTimeout !== undefined) await this.engine.dispatch({ type: 'setRevealTimeout', tokenNetwork, channelId: sent.channelId, revealTimeout })
    const channel = this.channel(tokenNetwork, partner)
    if (!channel) throw new ChannelNotFoundError(`channel ${sent.channelId} was opened but not synced`)
    return channel
  }

  async deposit({ tokenNetwork, partner, totalDeposit }: { tokenNetwork: Address; partner: Address; totalDeposit: bigint }): Promise<Channel> {
    const channel = this.channel(tokenNetwork, partner)
    if (!channel) throw new ChannelNotFoundError(`no channel with ${partner}`)
    const sent = await sendSetTotalDeposit(this.chain, this.queue, { tokenNetwork, channelId: channel.id, partner, totalDeposit })
    await this.waitForBlock(sent.receipt.blockNumber)
    return this.channel(tokenNetwork, partner)!
  }

  /**
   * Pays `amount` to `target`: directly if we share a channel, else over routes through the network. Resolves
   * once the payment succeeded (our Unlock is on its way); throws PaymentFailedError or NoRouteError.
   */
  async pay(p: PayParameters): Promise<PaymentResult> {
    if (p.amount <= 0n) throw new InvalidPaymentError('amount must be positive')
    if (p.secret && p.secrethash && sha256(p.secret) !== p.secrethash.toLowerCase()) throw new InvalidPaymentError('secret_hash is not the SHA-256 of the secret')
    const secret = p.secret ?? (p.secrethash ? undefined : randomBytes32())
    const secrethash = p.secrethash ?? sha256(secret!)
    const paymentId = p.paymentId ?? randomUint64()
    const release = await this.paymentSlots.acquire()
    try {
      return await this.payNow(p, paymentId, secret, secrethash)
    } finally {
      release()
    }
  }

  private async payNow(p: PayParameters, paymentId: bigint, secret: Hex | undefined, secrethash: Hex): Promise<PaymentResult> {
    const routes = findRoutes(this.engine.current, { tokenNetwork: p.tokenNetwork, target: p.target, amount: p.amount })
    if (routes.length === 0) throw new NoRouteError(`no route to ${p.target} can carry ${p.amount}`)
    const encryptedSecret = this.secretForTarget(p.target, secret, p.amount, paymentId)
    const outcome = this.notices.next(
      (e) => (e.type === 'paymentSentSuccess' || e.type === 'paymentSentFailed') && e.paymentId === paymentId && e.target.toLowerCase() === p.target.toLowerCase(),
    )
    await this.dispatch({
      type: 'initPayment',
      tokenNetwork: p.tokenNetwork,
      target: p.target,
      amount: p.amount,
      paymentId,
      ...(secret ? { secret } : {}),
      secrethash,
      ownSecret: !p.secret && !p.secrethash,
      ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}),
      routes,
      freshSecrets: !p.secret && !p.secrethash ? [randomBytes32(), randomBytes32()] : [],
      ...(encryptedSecret ? { encryptedSecret } : {}),
    })
    const result = await Promise.race([outcome, this.whenStopped])
    if (result.type === 'paymentSentFailed') throw new PaymentFailedError(result.reason)
    return result as PaymentResult
  }

  async close(tokenNetwork: Address, partner: Address): Promise<Channel> {
    const channel = this.channel(tokenNetwork, partner)
    if (!channel) throw new ChannelNotFoundError(`no channel with ${partner}`)
    await this.dispatch({ type: 'closeChannel', tokenNetwork, channelId: channel.id })
    return this.channel(tokenNetwork, partner)!
  }

  async withdraw(tokenNetwork: Address, partner: Address, totalWithdraw: bigint): Promise<void> {
    const channel = this.channel(tokenNetwork, partner)
    if (!channel) throw new ChannelNotFoundError(`no channel with ${partner}`)
    await this.dispatch({ type: 'withdraw', tokenNetwork, channelId: channel.id, totalWithdraw })
  }

  /** Stops syncing, delivering and accepting work; waits for what is being committed, then closes the store. */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.rejectStopped(new NodeStoppedError())
    await this.watcher?.stop()
    await this.delivery?.stop()
    await this.engine?.settled()
    await this.storage?.close()
    this.statusValue = { ...this.statusValue, status: 'stopped' }
    // Subscribers that outlive the node (the API's event streams) learn here that nothing more will come.
    this.notices.publish({ type: 'status', status: this.statusValue })
  }
}
