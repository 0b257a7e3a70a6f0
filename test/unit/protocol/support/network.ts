import { hexToBytes, sha256, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { balanceHash } from '../../../../src/protocol/balanceProof.ts'
import { decodeMessage, encodeMessage, signMessage } from '../../../../src/protocol/messages/index.ts'
import type { AddressMetadata, EnvelopeMessage, Message, Signed } from '../../../../src/protocol/messages/types.ts'
import { defaultContext, initialState, type TransitionContext } from '../../../../src/protocol/state/access.ts'
import type { ChainSeen, StateChange } from '../../../../src/protocol/state/changes.ts'
import type { Effect, NodeEvent, Transaction } from '../../../../src/protocol/state/effects.ts'
import { resolveFromHistory } from '../../../../src/node/runtime/history.ts'
import { byAdded, lockAlive } from '../../../../src/storage/sentRecords.ts'
import { receivedHistory, sentHistory, syncedHistory } from '../../../../src/node/runtime/records.ts'
import { withStoredNonce } from '../../../../src/node/runtime/nonceLookups.ts'
import type { ReceivedRecord, SentLockRecord, SentProofRecord, Storage } from '../../../../src/storage/storage.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
import { transition } from '../../../../src/protocol/transition.ts'
import { decryptSecret, encryptSecret } from '../../../../src/protocol/secretCipher.ts'
import { awaitsStateAnswer, retrievableId } from '../../../../src/transport/acknowledgement.ts'
import { ChainModel, type ChainEvent } from './chainModel.ts'

export type SimNode = {
  name: string
  key: Hex
  address: Address
  state: NodeState
  events: NodeEvent[]
  transactions: Transaction[]
  /** What the core asked to announce to a pathfinding service (announceCapacity, announceFees), in order. */
  announced: Extract<Effect, { type: 'announceCapacity' | 'announceFees' }>[]
  /** Every message this node signed, in order, with its recipient and the chain's block when it was sent. */
  sent: { to: Address; message: Signed<Message>; block: bigint }[]
  online: boolean
  /**
   * Behind the chain: the blocks and chain events mined meanwhile wait (`held`) and reach the node when it catches
   * up (`stall(name, false)`), in order, as a sync that lags would hand them over.
   */
  held?: StateChange[]
}

type InFlight = { from: string; to: string; text: string }

const isEnvelope = (m: Message): m is EnvelopeMessage =>
  m.type === 'LockedTransfer' || m.type === 'RefundTransfer' || m.type === 'Unlock' || m.type === 'LockExpired'

/**
 * Nodes wired only through the pure transition function: messages are really signed, encoded, decoded and
 * verified on the way; transactions go to a ChainModel; blocks are mined on demand. Every envelope message
 * ever signed is recorded, so tests can check nonces and proofs across the whole run.
 */
export class Network {
  readonly chain = new ChainModel()
  readonly nodes: Record<string, SimNode> = {}
  readonly inFlight: InFlight[] = []
  /** Every balance proof signed: `${channel}:${signer}:${nonce}` -> balance hash. */
  readonly proofsByNonce = new Map<string, Hex>()
  readonly violations: string[] = []
  /** Every chain event and block handed to the nodes, with the block it belongs to: what a sync fetches again. */
  readonly mined: { block: bigint; change: StateChange }[] = []
  /**
   * Balance proofs and withdraw messages not yet answered by their receiver's state machine (Processed, or
   * WithdrawConfirmation), by `${from}>${to}:${id}`: a runtime resends them until answered, and its delivery hands a
   * resend to the state machine again (src/transport/delivery.ts), which may accept now what it refused before.
   */
  readonly unanswered = new Map<string, InFlight>()

  /**
   * Which payments carry their secret in the metadata, encrypted to the target (as the runtime does when it knows
   * the target's key); the others go through SecretRequest / RevealSecret. By default none.
   */
  secretInMetadata: (paymentId: bigint) => boolean = () => false

  /**
   * What each node's shell knows of the chain when it starts a payment or a lock comes (docs/decisions/0056): by
   * default the chain's head, as a runtime that looks at the chain does whatever its sync lags; `{}` is a shell that
   * passes nothing (a change logged before the head was kept). A node in `unreachable` says the chain is out of reach.
   */
  chainSeen: (name: string) => ChainSeen = (name) => ({ headBlock: this.chain.block, ...(this.unreachable.has(name) ? { chainUnreachable: true } : {}) })
  readonly unreachable = new Set<string>()

  constructor(
    names: string[],
    readonly ctx: TransitionContext = defaultContext,
  ) {
    names.forEach((name, i) => {
      const key = anvilKeys[i + 1]!
      const address = privateKeyToAddress(key)
      this.nodes[name] = {
        name,
        key,
        address,
        state: initialState({ address, chainId: 31337n, blockNumber: 1n }),
        events: [],
        transactions: [],
        announced: [],
        sent: [],
        online: true,
      }
    })
    for (const node of Object.values(this.nodes))
      node.state = transition(node.state, { type: 'tokenNetworkCreated', token: this.chain.token, tokenNetwork: this.chain.tokenNetwork }, ctx).state
  }

  node(name: string): SimNode {
    return this.nodes[name]!
  }
  byAddress(address: Address): SimNode | undefined {
    return Object.values(this.nodes).find((n) => n.address.toLowerCase() === address.toLowerCase())
  }

  /** Opens a channel between two nodes with these deposits; returns its id. */
  async open(a: string, b: string, depositA: bigint, depositB: bigint, settleTimeout = 100n, revealTimeout = 10n): Promise<bigint> {
    const { id, events } = this.chain.open(this.node(a).address, this.node(b).address, settleTimeout, revealTimeout)
    await this.applyChainEvents(events)
    if (depositA > 0n) await this.applyChainEvents(this.chain.deposit(id, this.node(a).address, depositA))
    if (depositB > 0n) await this.applyChainEvents(this.chain.deposit(id, this.node(b).address, depositB))
    this.chain.balances.set(this.chain.tokenNetwork.toLowerCase(), (this.chain.balances.get(this.chain.tokenNetwork.toLowerCase()) ?? 0n) + depositA + depositB)
    return id
  }

  /** `who` raises its total deposit in the channel by `amount`. */
  async deposit(channelId: bigint, who: string, amount: bigint): Promise<void> {
    const side = this.chain.channels.get(channelId)!.sides[this.node(who).address.toLowerCase()]!
    const tokenNetwork = this.chain.tokenNetwork.toLowerCase()
    this.chain.balances.set(tokenNetwork, (this.chain.balances.get(tokenNetwork) ?? 0n) + amount)
    await this.applyChainEvents(this.chain.deposit(channelId, this.node(who).address, side.deposit + amount))
  }

  private async applyChainEvents(events: ChainEvent[]) {
    // The chain is public: every node sees every event (it needs other channels for routing).
    for (const e of events) {
      this.mined.push({ block: this.chain.block, change: e.change })
      for (const n of Object.values(this.nodes)) await this.fromChain(n.name, e.change)
    }
  }

  /**
   * A node whose state is synced to `block` (a copy restored, docs/decisions/0034) catches up as its chain sync does
   * from the stored synced block: every event and block mined after it, in order.
   */
  async catchUpFrom(name: string, block: bigint): Promise<void> {
    for (const m of this.mined.filter((m) => m.block > block)) await this.fromChain(name, m.change)
  }

  /** A chain event or a block for a node: now, or once it catches up when it is behind. */
  private async fromChain(name: string, change: StateChange): Promise<void> {
    const node = this.node(name)
    if (node.held) node.held.push(change)
    else await this.dispatch(name, change)
  }

  /** Makes a node's sync lag behind the chain (`on`), or catch up with everything mined meanwhile. */
  async stall(name: string, on: boolean): Promise<void> {
    const node = this.node(name)
    if (on) {
      node.held ??= []
      return
    }
    const held = node.held ?? []
    delete node.held
    for (const change of held) await this.dispatch(name, change)
  }

  /** Runs one state change through a node and carries out its effects. */
  async dispatch(name: string, change: StateChange): Promise<void> {
    const node = this.node(name)
    const before = node.state
    const { state, effects } = transition(node.state, change, this.ctx)
    node.state = state
    // The record of a partner's message the runtime would store with the commit (src/node/runtime/records.ts).
    const received = receivedHistory(change, before, state)
    if (received) this.history.received.set(`${name}:${received.channelKey}:${received.nonce}`, received)
    const synced = syncedHistory(change, before, state)
    for (const proof of synced.proofs) this.history.proofs.set(`${name}:${proof.channelKey}:${proof.balanceHash}`, proof)
    for (const lock of synced.locks) this.history.locks.set(`${name}:${lock.channelKey}:${lock.secrethash}:${lock.addedNonce}`, lock)
    for (const effect of effects) {
      if (effect.type === 'event') node.events.push(effect.event)
      else if (effect.type === 'announceCapacity' || effect.type === 'announceFees') node.announced.push(effect)
      else if (effect.type === 'transaction') {
        node.transactions.push(effect.transaction)
        this.chain.submit(node.address, await resolveFromHistory(effect.transaction, this.historyOf(name)))
      } else if (effect.type === 'send') {
        // The history the runtime would store with the commit (src/node/runtime/records.ts).
        const { proof, lock } = sentHistory(effect, before)
        if (proof) this.history.proofs.set(`${name}:${proof.channelKey}:${proof.balanceHash}`, proof)
        if (lock) this.history.locks.set(`${name}:${lock.channelKey}:${lock.secrethash}:${lock.addedNonce}`, lock)
        const signed = await signMessage(this.ctx.curve, node.key, effect.message)
        node.sent.push({ to: effect.recipient, message: signed, block: this.chain.block })
        this.checkTimeLeft(node, state, signed)
        if (isEnvelope(signed)) this.recordProof(node, signed)
        const to = this.byAddress(effect.recipient)
        if (to) {
          const sent = { from: name, to: to.name, text: encodeMessage(signed) }
          this.inFlight.push(sent)
          if (awaitsStateAnswer(signed)) this.unanswered.set(`${name}>${to.name}:${retrievableId(signed)}`, sent)
        }
      }
    }
  }

  /**
   * The rule of docs/decisions/0056, seen from the chain: a lock is sent (by its initiator or a mediator) with more
   * blocks left than its channel's reveal timeout, and a target asks for a secret only while its lock has more than
   * that left, counted from the chain's block, not from the sender's synced block.
   */
  private checkTimeLeft(node: SimNode, state: NodeState, m: Signed<Message>) {
    const head = this.chain.block
    if (m.type === 'LockedTransfer') {
      const channel = Object.values(state.channels).find((c) => c.id === m.channel_identifier)
      if (channel && m.lock.expiration - head <= channel.revealTimeout)
        this.violations.push(`${node.name} sent a lock with ${m.lock.expiration - head} blocks left, within the reveal timeout ${channel.revealTimeout}`)
    }
    if (m.type === 'SecretRequest') {
      const task = state.targets[m.secrethash]
      const channel = task && state.channels[task.channelKey]
      if (channel && m.expiration - head <= channel.revealTimeout)
        this.violations.push(`${node.name} asked for a secret with ${m.expiration - head} blocks left, within the reveal timeout ${channel.revealTimeout}`)
    }
  }

  private recordProof(node: SimNode, m: EnvelopeMessage) {
    const key = `${m.channel_identifier}:${node.name}:${m.nonce}`
    const hash = balanceHash({ transferredAmount: m.transferred_amount, lockedAmount: m.locked_amount, locksroot: m.locksroot })
    const seen = this.proofsByNonce.get(key)
    if (seen !== undefined && seen !== hash)
      this.violations.push(`${node.name} signed two different balance proofs with nonce ${m.nonce} in channel ${m.channel_identifier}`)
    this.proofsByNonce.set(key, hash)
  }

  readonly history = { proofs: new Map<string, SentProofRecord>(), locks: new Map<string, SentLockRecord>(), received: new Map<string, ReceivedRecord>() }

  /** The stored history as the runtime's storage answers it, over what this run recorded. */
  historyOf(name: string): Pick<Storage, 'sentProof' | 'sentLocks' | 'receivedMessage'> {
    return {
      receivedMessage: async (key, nonce) => this.history.received.get(`${name}:${key}:${nonce}`),
      sentProof: async (key, hash) => this.history.proofs.get(`${name}:${key}:${hash}`),
      sentLocks: async (key, nonce) =>
        [...this.history.locks.entries()]
          .filter(([k, l]) => k.startsWith(`${name}:`) && l.channelKey === key && lockAlive(l, nonce))
          .map(([, l]) => l)
          .sort(byAdded),
    }
  }

  /** Delivers the oldest in-flight message from `from` to `to` (FIFO per pair), if its recipient is online. */
  async deliver(index: number, duplicate = false): Promise<boolean> {
    const deliverable = this.inFlight.filter((m) => this.node(m.to).online)
    if (deliverable.length === 0) return false
    const pick = deliverable[index % deliverable.length]!
    const head = this.inFlight.find((m) => m.from === pick.from && m.to === pick.to)!
    if (!duplicate) this.inFlight.splice(this.inFlight.indexOf(head), 1)
    const { message, signer } = await decodeMessage(this.ctx.curve, head.text, this.node(head.from).address)
    this.answered(head, message)
    await this.dispatch(head.to, await this.received(head.to, message, signer))
    return true
  }

  /** A Processed or WithdrawConfirmation that reaches its addressee ends the resends of what it answers. */
  private answered(m: InFlight, message: Message) {
    if (message.type === 'Processed' || message.type === 'WithdrawConfirmation') this.unanswered.delete(`${m.to}>${m.from}:${message.message_identifier}`)
  }

  /** Every sender resends, once, what its partners have not answered yet (as its retry timer would). */
  resendUnanswered(): void {
    for (const m of this.unanswered.values()) this.inFlight.push({ ...m })
  }

  /** Delivers the first in-flight message from `from` to `to` of the given type; false if there is none. */
  async deliverMessage(from: string, to: string, type: Message['type']): Promise<boolean> {
    for (const m of this.inFlight) {
      if (m.from !== from || m.to !== to) continue
      const { message, signer } = await decodeMessage(this.ctx.curve, m.text, this.node(from).address)
      if (message.type !== type) continue
      this.inFlight.splice(this.inFlight.indexOf(m), 1)
      this.answered(m, message)
      await this.dispatch(to, await this.received(to, message, signer))
      return true
    }
    return false
  }

  /**
   * The receive change the runtime makes: with the secret decrypted from the metadata when it is for us, and what the
   * store knows of a nonce that comes back (src/node/runtime/nonceLookups.ts).
   */
  async received(to: string, message: Signed<Message>, sender: Address): Promise<StateChange> {
    const node = this.node(to)
    const decryptedSecret =
      message.type === 'LockedTransfer' && typeof message.metadata.secret === 'string' && message.target.toLowerCase() === node.address.toLowerCase()
        ? decryptSecret(this.ctx.curve, message.metadata.secret, hexToBytes(node.key))
        : undefined
    const seen = message.type === 'LockedTransfer' || message.type === 'RefundTransfer' || message.type === 'RevealSecret' ? this.chainSeen(to) : {}
    return withStoredNonce(node.state, { type: 'receive', message, sender, ...(decryptedSecret ? { decryptedSecret } : {}), ...seen }, this.historyOf(to))
  }

  async deliverAll(limit = 10_000): Promise<void> {
    for (let i = 0; i < limit && (await this.deliver(0)); i++);
  }

  /** Mines `n` blocks: pending transactions land, their events and the new block reach every node. */
  async mine(n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      await this.applyChainEvents(this.chain.mine())
      const block: StateChange = { type: 'block', blockNumber: this.chain.block }
      this.mined.push({ block: this.chain.block, change: block })
      for (const node of Object.values(this.nodes)) await this.fromChain(node.name, block)
    }
  }

  /**
   * A payment from `from` to `to` over `route` (hops after the initiator), with a fresh deterministic secret; `fees`:
   * each route's estimated mediation fee and the most the payment may cost in fees.
   */
  async pay(
    from: string,
    to: string,
    amount: bigint,
    paymentId: bigint,
    routes?: string[][],
    lockTimeout?: bigint,
    fees: { routeFees?: bigint[]; maxFee?: bigint; routeMetadata?: (Record<string, AddressMetadata> | undefined)[] } = {},
  ): Promise<Hex> {
    const secret = sha256(`0x${paymentId.toString(16).padStart(64, '0')}`)
    const fresh = [1n, 2n, 3n].map((k) => sha256(`0x${(paymentId * 1000n + k).toString(16).padStart(64, '0')}`))
    const r = (routes ?? [[to]]).map((route) => route.map((n) => this.node(n).address))
    // Deterministic randomness, so a failing property run replays exactly.
    const encryptedSecret = this.secretInMetadata(paymentId)
      ? encryptSecret(this.ctx.curve, {
          payload: { secret, amount, paymentId },
          targetPublicKey: this.ctx.curve.publicKey(hexToBytes(this.node(to).key)),
          ephemeralPrivateKey: hexToBytes(sha256(`0x${(paymentId * 1000n + 999n).toString(16).padStart(64, '0')}`)),
          nonce: hexToBytes(sha256(secret)).subarray(0, 16),
        })
      : undefined
    await this.dispatch(from, {
      type: 'initPayment',
      tokenNetwork: this.chain.tokenNetwork,
      target: this.node(to).address,
      amount,
      paymentId,
      secret,
      secrethash: sha256(secret),
      ownSecret: true,
      routes: r,
      ...fees,
      freshSecrets: fresh,
      ...(lockTimeout ? { lockTimeout } : {}),
      ...(encryptedSecret ? { encryptedSecret } : {}),
      ...this.chainSeen(from),
    })
    return sha256(secret)
  }

  /** Restart: the state goes through its serialized form; unacknowledged messages are resent (duplicates). */
  restart(name: string): void {
    const node = this.node(name)
    const text = JSON.stringify(node.state, (_k, v) => (typeof v === 'bigint' ? { $bigint: v.toString() } : v))
    node.state = JSON.parse(text, (_k, v) => (v && typeof v === 'object' && '$bigint' in v ? BigInt(v.$bigint) : v))
    for (const { to, message } of node.sent.slice(-3)) {
      const recipient = this.byAddress(to)
      if (recipient) this.inFlight.push({ from: name, to: recipient.name, text: encodeMessage(message) })
    }
  }

  outcomes(name: string, paymentId: bigint): NodeEvent[] {
    return this.node(name).events.filter((e) => (e.type === 'paymentSentSuccess' || e.type === 'paymentSentFailed') && e.paymentId === paymentId)
  }
}
