import type { Address, Hex } from 'viem'
import type { Lock } from '../locks.ts'
import type { Message, PFSCapacityUpdate, PFSFeeUpdate } from '../messages/types.ts'
import type { SignedCopy } from './changes.ts'
import type { BalanceProofState, StaleState } from './types.ts'

/**
 * What a transition asks the shell to do once the new state is durable. Messages leave unsigned: signing
 * is deterministic (RFC 6979), so the shell signs exactly what the persisted state holds and a nonce can
 * never carry two different proofs.
 */
export type Effect =
  | {
      type: 'send'
      recipient: Address
      message: Message
      /** Channel whose ordered queue carries it; absent for the unordered queue (secret messages, Processed). */
      channelKey?: string
    }
  | { type: 'transaction'; transaction: Transaction }
  | { type: 'resolveSecret'; request: SecretResolverRequest }
  | { type: 'event'; event: NodeEvent }
  /**
   * What one of our channels can carry changed (its nonces, capacities or reveal timeout): the shell signs this update
   * and sends it to the pathfinding service, unless the node is private (docs/decisions/0073). Nothing keeps it: after
   * a restart the shell announces every channel again from the state.
   */
  | { type: 'announceCapacity'; channelKey: string; update: PFSCapacityUpdate }
  /** What we charge for mediating through one of our channels changed: the shell stamps, signs and sends it likewise. */
  | { type: 'announceFees'; channelKey: string; update: FeeAnnouncement }

/**
 * Reached by no effect: where a switch over an effect's type ends in it, TypeScript fails the build once a new
 * kind of effect has no case there (the engine's commit, the effect handler).
 */
export function unhandledEffect(effect: never): never {
  throw new Error(`no case for the effect ${(effect as { type: string }).type}`)
}

/** A PFSFeeUpdate before the shell stamps it with the time it signs it (the core reads no clock). */
export type FeeAnnouncement = Omit<PFSFeeUpdate, 'timestamp'>

export type BalanceData = { transferredAmount: bigint; lockedAmount: bigint; locksroot: Hex }

/**
 * A transaction the core asks for. `deadline`, where the chain gives one, is the last block in which it still does its
 * work (the shell prices it harder as it nears, and tells the owner in time when it may miss it): an update before the
 * partner can settle (the settle block), a secret registered before its lock expires, a withdraw before its expiry.
 * Optional: records stored before it existed have none.
 */
export type Transaction =
  | { type: 'close'; tokenNetwork: Address; channelId: bigint; partner: Address; balanceProof: BalanceProofState | null }
  | { type: 'update'; tokenNetwork: Address; channelId: bigint; partner: Address; balanceProof: BalanceProofState; deadline?: bigint }
  | {
      type: 'settle'
      tokenNetwork: Address
      channelId: bigint
      /** Ordered as the contract wants: the side with the smaller transferred + locked first. */
      participant1: Address
      participant1Balance: BalanceData
      participant2: Address
      participant2Balance: BalanceData
    }
  | { type: 'unlock'; tokenNetwork: Address; channelId: bigint; receiver: Address; sender: Address; locks: Lock[] }
  /**
   * Settle after the partner closed with one of our older proofs: the state keeps only the latest, so the shell
   * looks up the preimage of `ourBalanceHash` in the stored history, orders the sides and sends a `settle`.
   */
  | { type: 'settleWithHistory'; tokenNetwork: Address; channelId: bigint; our: Address; ourBalanceHash: Hex; partner: Address; partnerBalance: BalanceData }
  /** Unlock our locks of an older proof: the shell takes them from the stored lock history at `nonce`. */
  | { type: 'unlockWithHistory'; tokenNetwork: Address; channelId: bigint; receiver: Address; sender: Address; nonce: bigint }
  | { type: 'registerSecret'; secret: Hex; secrethash: Hex; deadline?: bigint }
  | {
      type: 'setTotalWithdraw'
      tokenNetwork: Address
      channelId: bigint
      participant: Address
      totalWithdraw: bigint
      expiration: bigint
      /** The partner's confirmation signature; ours is made by the shell over the same bytes. */
      partnerSignature: Hex
      deadline?: bigint
    }
  | {
      type: 'cooperativeSettle'
      tokenNetwork: Address
      channelId: bigint
      our: { totalWithdraw: bigint; expiration: bigint; partnerSignature: Hex }
      partner: { address: Address; totalWithdraw: bigint; expiration: bigint; partnerSignature: Hex }
      deadline?: bigint
    }

/** The transactions the chain layer sends: those that need the stored history are resolved into these first. */
export type ChainTransaction = Exclude<Transaction, { type: 'settleWithHistory' | 'unlockWithHistory' }>

export type SecretResolverRequest = {
  token: Address
  secrethash: Hex
  amount: bigint
  paymentIdentifier: bigint
  paymentSender: Address
  paymentRecipient: Address
  expiration: bigint
  revealTimeout: bigint
  settleTimeout: bigint
}

export type NodeEvent =
  | {
      type: 'paymentSentSuccess'
      token: Address
      tokenNetwork: Address
      target: Address
      amount: bigint
      paymentId: bigint
      secret: Hex
      secrethash: Hex
      route: Address[]
      /** What the payment cost beyond its amount: its lock less the amount (the route's estimated fee and its margin). */
      fee: bigint
    }
  | { type: 'paymentSentFailed'; token: Address; tokenNetwork: Address; target: Address; amount: bigint; paymentId: bigint; secrethash: Hex; reason: string }
  /**
   * A route of our payment was given up (Raiden's EventRouteFailed): its first hop gave the lock back, the target was
   * offered less than the amount, or the lock expired unclaimed. What the pathfinding service is told of its route.
   */
  | { type: 'routeFailed'; tokenNetwork: Address; target: Address; paymentId: bigint; secrethash: Hex; route: Address[]; reason: string }
  | { type: 'paymentReceivedSuccess'; token: Address; tokenNetwork: Address; initiator: Address; amount: bigint; paymentId: bigint; secrethash: Hex }
  /** A transfer we forwarded was paid on both sides: `amount` came in, `fee` of it (amount in less amount out) we kept. */
  | {
      type: 'mediationSucceeded'
      token: Address
      tokenNetwork: Address
      secrethash: Hex
      paymentId: bigint
      initiator: Address
      target: Address
      amount: bigint
      fee: bigint
    }
  /**
   * `unknownChannel`: the message names a channel the node does not hold, most often one whose opening it has not
   * synced yet (the partner saw it first); the sender resends it, unacknowledged, and it goes through once synced.
   */
  | { type: 'messageRejected'; sender: Address; messageType: string; reason: string; unknownChannel?: true }
  | { type: 'channelStateChanged'; tokenNetwork: Address; channelId: bigint; state: string }
  | { type: 'withdrawExpired'; tokenNetwork: Address; channelId: bigint; totalWithdraw: bigint }
  /** A participant's on-chain total deposit / total withdraw in one of our channels grew. */
  | { type: 'channelDeposit'; tokenNetwork: Address; channelId: bigint; participant: Address; totalDeposit: bigint }
  | { type: 'channelWithdraw'; tokenNetwork: Address; channelId: bigint; participant: Address; totalWithdraw: bigint }
  | { type: 'actionRejected'; action: string; reason: string }
  /**
   * The partner signed two different messages under one nonce of its end: both kept here, with their signatures, as
   * evidence of a cheating or broken partner. The second was not acknowledged and changed nothing else.
   */
  | { type: 'partnerEquivocated'; tokenNetwork: Address; channelId: bigint; partner: Address; nonce: bigint; applied: SignedCopy; second: SignedCopy }
  /**
   * A channel that waited after a restore is synced with its partner's answer (docs/decisions/0034): the nonces it
   * now holds, and whether the answer proved a newer end than the copy had (ours, the partner's).
   */
  | {
      type: 'channelSynced'
      tokenNetwork: Address
      channelId: bigint
      partner: Address
      ourNonce: bigint
      partnerNonce: bigint
      adopted: { ours: boolean; partner: boolean }
    }
  /** Our own nonce came back with content we never signed: the state is older than what we sent (NodeState.stale). */
  | ({ type: 'staleState' } & StaleState)
