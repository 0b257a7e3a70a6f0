import type { Address, Hex } from 'viem'
import type { MediationFees } from '../fees/schedule.ts'
import type { AddressMetadata, Message, Signed } from '../messages/types.ts'

/**
 * Everything that can change the node's state. Each comes from outside (a block, a chain event, a user
 * action, a peer's message, a transaction outcome) and carries all it needs: the core reads no clock and
 * draws no randomness, so fresh secrets and block numbers arrive here.
 */
export type StateChange =
  | { type: 'block'; blockNumber: bigint }
  | { type: 'tokenNetworkCreated'; token: Address; tokenNetwork: Address }
  | {
      type: 'channelOpened'
      tokenNetwork: Address
      channelId: bigint
      participant1: Address
      participant2: Address
      settleTimeout: bigint
      blockNumber: bigint
      /** Reveal timeout to use for this channel (the node's default unless the caller chose). */
      revealTimeout: bigint
    }
  | { type: 'channelDeposit'; tokenNetwork: Address; channelId: bigint; participant: Address; totalDeposit: bigint }
  | { type: 'channelWithdraw'; tokenNetwork: Address; channelId: bigint; participant: Address; totalWithdraw: bigint }
  | {
      type: 'channelClosed'
      tokenNetwork: Address
      channelId: bigint
      closer: Address
      nonce: bigint
      balanceHash: Hex
      blockNumber: bigint
      /** When the proof submitted is ours (the partner closed): whether our store holds a proof we signed with this balance hash. */
      ourProofKnown?: boolean
    }
  | {
      type: 'nonClosingUpdated'
      tokenNetwork: Address
      channelId: bigint
      closer: Address
      nonce: bigint
      balanceHash: Hex
      /** When the proof submitted is ours (we closed): whether our store holds a proof we signed with this balance hash. */
      ourProofKnown?: boolean
    }
  | {
      type: 'channelSettled'
      tokenNetwork: Address
      channelId: bigint
      participant1: Address
      participant1Amount: bigint
      participant1Locksroot: Hex
      participant2: Address
      participant2Amount: bigint
      participant2Locksroot: Hex
      blockNumber: bigint
    }
  | {
      type: 'channelUnlocked'
      tokenNetwork: Address
      channelId: bigint
      receiver: Address
      sender: Address
      locksroot: Hex
      unlockedAmount: bigint
      returnedTokens: bigint
    }
  | { type: 'secretRegistered'; secrethash: Hex; secret: Hex; blockNumber: bigint }
  | ({
      type: 'initPayment'
      tokenNetwork: Address
      target: Address
      amount: bigint
      paymentId: bigint
      /** The payment's secret; absent when the caller gave only its hash (then the resolver is asked). */
      secret?: Hex
      secrethash: Hex
      ownSecret: boolean
      lockTimeout?: bigint
      /** Candidate routes in order of preference; each is the hops after us, ending at the target. */
      routes: Address[][]
      /**
       * The estimated mediation fee of each route, in the same order (a pathfinding service's, or the node's own guess;
       * absent: 0). The lock carries the amount, this fee and Raiden's margin on it.
       */
      routeFees?: bigint[]
      /**
       * The checked presence records of each route's nodes, by address, in the same order (a pathfinding service's
       * `address_metadata`; absent: none): each route's LockedTransfer carries its own in `metadata.routes[].address_metadata`.
       */
      routeMetadata?: (Record<string, AddressMetadata> | undefined)[]
      /** The most the payment may cost beyond its amount (`--pathfinding-max-fee`); absent in changes logged before: no limit. */
      maxFee?: bigint
      /** Secrets for retries over further routes, used only when `ownSecret`. */
      freshSecrets: Hex[]
      /**
       * `secret` encrypted to the target (secretCipher.ts), for the LockedTransfer's `metadata.secret`: the target
       * then skips the SecretRequest. The shell makes it (it holds the randomness and the target's public key).
       */
      encryptedSecret?: Hex
    } & ChainSeen)
  | ({
      type: 'receive'
      message: Signed<Message>
      sender: Address
      /** The sender's public key, recovered from the signature by the shell (64 bytes, x || y). */
      senderKey?: Hex
      /**
       * What the shell decrypted from a LockedTransfer's `metadata.secret` with our key. The core checks it against
       * the lock (hash, amount, payment id) and asks for the secret as usual when it does not fit.
       */
      decryptedSecret?: DecryptedSecret
      /**
       * For a message that takes a nonce of the partner's end (a balance proof or a withdraw message) under a nonce
       * the partner already used: what we applied under that nonce, as the shell found it in the store (null: looked
       * for, none kept). The core tells a resend from an equivocation with it.
       */
      applied?: SignedCopy | null
      /** For a balance proof signed with our own key: whether our store holds a proof we signed with its balance hash. */
      ourProofKnown?: boolean
    } & ChainSeen)
  | { type: 'secretResolved'; secrethash: Hex; secret: Hex }
  /**
   * The state was restored from a copy of version `version` (docs/decisions/0034): every channel waits for its
   * partner's sync. Stored with the restored copy itself, so a crash after the restore cannot forget it.
   */
  | {
      type: 'restored'
      version: bigint
      /**
       * By channel key: the nonce from which the copy kept the proofs we signed (older ones were left out to bound its
       * size). A proof of ours below it coming back cannot be checked against the history, so it does not prove the
       * state stale.
       */
      ourHistoryFrom?: Record<string, bigint>
      /**
       * With no copy to restore (version 0: the store was empty, the backup server had none): channels opened up to
       * this block, which the sync will find on chain, were this node's in a life it forgot; they wait too.
       */
      openedUpTo?: bigint
    }
  /** Ask the partner of each channel that waits for its sync (at every start while one waits). */
  | { type: 'requestChannelSyncs' }
  /** What the node charges for mediating from now on (its config, at each start where it differs from the state's). */
  | { type: 'setMediationFees'; fees: MediationFees }
  | { type: 'closeChannel'; tokenNetwork: Address; channelId: bigint }
  | { type: 'withdraw'; tokenNetwork: Address; channelId: bigint; totalWithdraw: bigint }
  | { type: 'coopSettle'; tokenNetwork: Address; channelId: bigint }
  | { type: 'setRevealTimeout'; tokenNetwork: Address; channelId: bigint; revealTimeout: bigint }
  | { type: 'transactionFailed'; transaction: TransactionKind; tokenNetwork?: Address; channelId?: bigint; secrethash?: Hex; reason: string }

/**
 * What the shell knew of the chain when a payment started, a lock came or a secret was revealed to us
 * (docs/decisions/0056), so that the core judges a lock's time against the chain of that moment and a replay judges it
 * the same. Absent in changes logged before it was kept: the synced block alone then, as it was.
 */
export type ChainSeen = {
  /**
   * The chain's confirmed head as the shell knew it (as last seen, extrapolated while the endpoint is out of reach).
   * A lock's expiry, and the time an incoming lock has left, count from max(synced block, headBlock): a node behind the
   * chain never sets an expiry from a stale block.
   */
  headBlock?: bigint
  /** The endpoint could not be reached: a mediator then forwards no new lock, as it could not register a secret in time. */
  chainUnreachable?: boolean
}

/** A signed message as evidence: its type, the bytes its signature covers (packMessage) and the signature. */
export type SignedCopy = { type: string; signed: Hex; signature: Hex }

/** A payment secret the shell decrypted from a LockedTransfer's `metadata.secret` (secretCipher.ts). */
export type DecryptedSecret = { secret: Hex; amount: bigint; paymentId?: bigint }

export type TransactionKind = 'close' | 'update' | 'settle' | 'unlock' | 'registerSecret' | 'setTotalWithdraw' | 'cooperativeSettle'
