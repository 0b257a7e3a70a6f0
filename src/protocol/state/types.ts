import type { Address, Hex } from 'viem'
import type { MediationFees } from '../fees/schedule.ts'
import type { Lock } from '../locks.ts'
import type { AddressMetadata, Metadata } from '../messages/types.ts'

/**
 * The node's whole protocol state: plain data (bigint amounts, hex strings, records), so it survives
 * structured clone into IndexedDB and a JSON round trip with a bigint replacer. Never mutated: each
 * transition returns a new state that shares what did not change.
 */
export type NodeState = {
  /** Our address: the signer of our messages and a participant of every channel here. */
  address: Address
  chainId: bigint
  /** The last block whose events have been applied. */
  blockNumber: bigint
  /** The next message_identifier to use (uint64). */
  nextMessageId: bigint
  /** Token network address -> its token and its channel graph (every channel, ours or not, for routing). */
  tokenNetworks: Record<Address, TokenNetworkState>
  /** By channelKey(tokenNetwork, channelIdentifier). Settled channels are removed once nothing is left to unlock. */
  channels: Record<string, Channel>
  /** Payments we started, by secrethash. */
  initiators: Record<Hex, InitiatorPayment>
  /** Transfers we forward, by secrethash. */
  mediators: Record<Hex, MediatedTransfer>
  /** Transfers paid to us, by secrethash. */
  targets: Record<Hex, TargetTransfer>
  /** Secrets registered on-chain before their locks expired: secrethash -> block of registration. */
  registeredSecrets: Record<Hex, bigint>
  /**
   * Public keys (64 bytes, x || y) of the nodes whose signed messages we received, by lowercase address, oldest
   * first, at most MAX_PUBLIC_KEYS: a payment's secret can be encrypted to a target whose key is here
   * (docs/decisions/0003). Absent in states stored before it existed.
   */
  publicKeys?: Record<string, Hex>
  /**
   * Set once our own nonce came back with content we never signed (docs/decisions/0029): this state is older than
   * what we sent, so from then on the node signs nothing and every change is ignored; the node stops with STALE_STATE.
   */
  stale?: StaleState
  /** Channels of ours opened up to this block were of a life the store forgot (docs/decisions/0034): they wait for their sync. */
  forgottenUpTo?: bigint
  /**
   * What this node charges for mediating, per token (docs/decisions/0069), as the operator set it last: held in the
   * state, set by a change at each start, so that a replay forwards the amounts that were forwarded. Absent: nothing.
   */
  mediationFees?: MediationFees
}

/** What showed that our state is older than what we signed. */
export type StaleState = {
  reason: string
  tokenNetwork: Address
  channelId: bigint
  /** The nonce of ours that came back, and the last nonce this state knows we used. */
  nonce: bigint
  ourNonce: bigint
  /** Where it came back: a close or update on-chain, or a message signed with our key. */
  source: 'chain' | 'message'
}

export type TokenNetworkState = {
  token: Address
  /** By channel id (decimal). Removed once settled. */
  graph: Record<string, GraphChannel>
}

/** What the chain says publicly about a channel: enough to find routes. */
export type GraphChannel = {
  participant1: Address
  participant2: Address
  deposit1: bigint
  deposit2: bigint
  withdrawn1: bigint
  withdrawn2: bigint
  open: boolean
  /** From ChannelOpened: a lock with a longer timeout cannot cross this channel. Absent in states stored before it was kept. */
  settleTimeout?: bigint
}

export type ChannelState = 'opened' | 'closing' | 'closed' | 'settling' | 'settled'

export type Channel = {
  chainId: bigint
  tokenNetwork: Address
  token: Address
  id: bigint
  partner: Address
  settleTimeout: bigint
  revealTimeout: bigint
  openedBlock: bigint
  state: ChannelState
  closedBlock?: bigint
  closer?: Address
  /**
   * Set while our updateNonClosingBalanceProof is on its way: until the chain shows it or it fails, we do not settle,
   * since a settle built before the update lands carries the closer's older proof and reverts.
   */
  updatePending?: boolean
  settledBlock?: bigint
  /** After a failed settle transaction: the block from which to try again. */
  settleNotBefore?: bigint
  our: ChannelEnd
  partnerEnd: ChannelEnd
  /**
   * Set when the node was restored from a copy (docs/decisions/0034), until the partner's ChannelSync: the copy may
   * lag behind what we signed, so nothing is signed under this channel's nonce until then.
   */
  waitingSync?: boolean
  /** After a restore whose copy kept only our later proofs: the nonce from which the stored history is complete. */
  ourHistoryFrom?: bigint
  /**
   * Opened in a life the store forgot (a wiped store, no copy holding it: `forgottenUpTo`), until its ChannelSync:
   * nothing of what we signed on it is known, so a proof of ours seen on chain or coming back is no sign of a
   * stale state, only of nonces used (ours is raised past them).
   */
  forgotten?: boolean
}

/**
 * A lock in a channel end, in the order it was added; `secret` once known off-chain. Our own locks carry the
 * nonce of the proof that added them: the storage keeps their history by it (see SentLockRecord).
 */
export type PendingLock = Lock & { secret?: Hex; nonce?: bigint }

/** What one side of a channel has put in, taken out and sent. */
export type ChannelEnd = {
  address: Address
  /** On-chain total deposit. */
  deposit: bigint
  /** On-chain total withdraw. */
  withdrawn: bigint
  /** Withdraws this end asked for and the partner has not yet seen on-chain or expired. */
  pendingWithdraws: PendingWithdraw[]
  /**
   * Our last withdraws that expired: a confirmation can still arrive for one, and it must be applied (it used
   * the partner's nonce) though it is no longer acted on.
   */
  expiredWithdraws?: { totalWithdraw: bigint; expiration: bigint }[]
  /** The last nonce this end used (0: none yet). */
  nonce: bigint
  /** The latest balance proof this end sent; for the partner, with its signature. */
  balanceProof: BalanceProofState | null
  /** Pending locks in insertion order (their encoding gives the locksroot). */
  locks: PendingLock[]
  /** Balance data as the contract holds it after close/update: what settle must be called with. */
  onchainBalanceHash?: Hex
  onchainNonce?: bigint
  /** After settlement: the locksroot the contract kept for this end's locks, with the amount still locked. */
  settledLocksroot?: Hex
  settledLockedAmount?: bigint
  unlocked?: boolean
  /** After settlement: the block from which we unlock our locks ourselves if the partner has not. */
  unlockAt?: bigint
  /** The partner's end: how many times it signed a second, different message under a nonce it had used. */
  equivocations?: number
}

export type PendingWithdraw = {
  totalWithdraw: bigint
  expiration: bigint
  nonce: bigint
  messageIdentifier: bigint
  /** The requester's signature over the withdraw message. */
  requesterSignature?: Hex
  /** The partner's confirmation signature (for our own withdraws). */
  confirmationSignature?: Hex
  /** Part of a cooperative settle: never sent alone with setTotalWithdraw. */
  coopSettle?: boolean
  /** We started the cooperative settle: we send the cooperativeSettle transaction. */
  coopInitiator?: boolean
  /** The setTotalWithdraw transaction was sent. */
  sent?: boolean
}

export type BalanceProofState = {
  nonce: bigint
  transferredAmount: bigint
  lockedAmount: bigint
  locksroot: Hex
  balanceHash: Hex
  /** additional_hash: the message hash of the message that carried this proof. */
  messageHash: Hex
  signature?: Hex
}

export type PaymentStatus = 'pending' | 'secret_revealed' | 'succeeded' | 'failed'

export type InitiatorPayment = {
  tokenNetwork: Address
  token: Address
  target: Address
  amount: bigint
  paymentId: bigint
  secrethash: Hex
  /** Unknown while a payment started with only a secret hash has not resolved it. */
  secret?: Hex
  /** Whether Sluice made the secret up (then the payment may reroute with a fresh one). */
  ownSecret: boolean
  lockTimeout?: bigint
  /** Routes not tried yet, each a list of hops ending at the target. */
  remainingRoutes: Address[][]
  /** The estimated mediation fee of each of remainingRoutes, in the same order (absent: 0). */
  remainingRouteFees?: bigint[]
  /** The checked presence records of each of remainingRoutes' nodes, in the same order (absent: none). */
  remainingRouteMetadata?: (Record<string, AddressMetadata> | undefined)[]
  /**
   * The most the payment may cost beyond its amount (`--pathfinding-max-fee`): a route whose estimated fee with its
   * margin is more is not tried. Absent in payments started before it was kept: no limit.
   */
  maxFee?: bigint
  freshSecrets: Hex[]
  /** `secret` encrypted to the target, sent as the LockedTransfer's `metadata.secret` (first route only). */
  encryptedSecret?: Hex
  /** The route and lock in flight; the lock's amount is the payment's amount, the route's estimated fee and its margin. */
  channelKey: string
  route: Address[]
  lock: Lock
  messageIdentifier: bigint
  startedBlock: bigint
  status: PaymentStatus
  failureReason?: string
  /** Why the routes tried before this one failed (a hop refunded, or the route could not take the lock), for the final reason. */
  failedRoutes?: string[]
  /** The secret request we answered, so only the first one counts. */
  secretRequested?: boolean
  /** A secret request waits for the resolver to give the secret. */
  awaitingResolver?: boolean
}

export type PayerState = 'pending' | 'secret_revealed' | 'waiting_registration' | 'unlocked' | 'expired'
export type PayeeState = 'pending' | 'secret_revealed' | 'unlocked' | 'expired' | 'refunded'

export type MediatedTransfer = {
  secrethash: Hex
  tokenNetwork: Address
  paymentId: bigint
  initiator: Address
  target: Address
  payerChannelKey: string
  payer: Address
  payerLock: Lock
  payerState: PayerState
  payeeChannelKey?: string
  payee?: Address
  payeeLock?: Lock
  payeeState?: PayeeState
  secret?: Hex
  metadata: Metadata
  /** True once we gave the lock back with a RefundTransfer. */
  refunded?: boolean
}

export type TargetTransfer = {
  secrethash: Hex
  tokenNetwork: Address
  channelKey: string
  initiator: Address
  payer: Address
  paymentId: bigint
  lock: Lock
  secret?: Hex
  state: 'secret_request' | 'secret_revealed' | 'registering' | 'unlocked' | 'expired'
  secretRequested?: boolean
}
