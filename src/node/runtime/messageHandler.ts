import type { Address, Hex } from 'viem'
import { takesNonce } from '../../protocol/channel/usedNonce.ts'
import type { Message, Signed } from '../../protocol/messages/types.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'
import type { ChainSeen } from '../../protocol/state/changes.ts'
import { getChannel } from '../../protocol/state/access.ts'
import type { Report } from '../notices.ts'
import type { Applied, Engine } from './engine.ts'
import { needsLookup, withStoredNonce, type NonceLookupStore } from './nonceLookups.ts'
import { takeTransferRecords, type PeerRecords } from './routeMetadata.ts'
import { secretFromMetadata } from './secretInMetadata.ts'

export type MessageHandlerParameters = {
  engine: Pick<Engine, 'dispatch' | 'current'>
  /** What the store holds under a nonce that comes back (docs/decisions/0029). */
  store: NonceLookupStore
  address: Address
  /** Our key: it opens a secret the initiator encrypted to us in a LockedTransfer's metadata (docs/decisions/0003). */
  privateKey: Uint8Array
  /** The node's curve engine: the secret is opened with it. */
  curve: Secp256k1Engine
  report: Report
  /** The chain now as the node knows it: a lock that comes is judged against it (docs/decisions/0056). */
  chainNow?: () => { headBlock: bigint; reachable: boolean }
  /**
   * Takes the presence record of the node a LockedTransfer's route has us send to next (its next hop, or its initiator
   * when we are the target) from the metadata, once checked (routeMetadata.ts): the way to it opens at once.
   */
  peerRecords?: PeerRecords
}

/**
 * The incoming side, as Raiden's MessageHandler: each verified message delivery hands up becomes a `receive` change
 * for the engine, in the order the messages came. One whose nonce comes back first waits for the store to say what it
 * holds under that nonce (the core keeps only the latest of each end; looking it up here keeps the transition pure
 * and a replay sees what the first run saw), and those after it wait behind it.
 */
export class MessageHandler {
  /** The lookups under way, in order; `inLane` counts the messages in it. */
  private lane: Promise<unknown> = Promise.resolve()
  private inLane = 0
  /**
   * Messages of a channel the chain has not shown us yet (the partner saw it opened first), by channel: the core
   * refuses them now and takes them once `channelOpened` says the channel is there, rather than at the partner's
   * next resend or delivery's redelivery seconds later (issue 19). Bounded: the latest channels, a few messages each.
   */
  private readonly early = new Map<string, { message: Signed<Message>; sender: Address; senderKey: Hex; first: Promise<Applied> }[]>()

  constructor(private readonly p: MessageHandlerParameters) {}

  /**
   * Delivery's `onMessage`. The promise tells delivery when the message is durable: its Delivered waits for that (a
   * crash between the two would lose a SecretRequest or RevealSecret its sender no longer retries).
   */
  receive(message: Signed<Message>, sender: Address, senderKey: Hex): Promise<Applied> {
    const { engine } = this.p
    const early = takesNonce(message) && !getChannel(engine.current, message.token_network_address, message.channel_identifier)
    const decryptedSecret = secretFromMetadata(this.p.curve, message, this.p.address, this.p.privateKey)
    // Beside the change, not in it: a hint to the transport, whatever the core makes of the transfer.
    if (message.type === 'LockedTransfer' && this.p.peerRecords)
      takeTransferRecords(this.p.peerRecords, message, this.p.address, { hasSecret: decryptedSecret !== undefined })
    const change = {
      type: 'receive' as const,
      message,
      sender,
      senderKey,
      ...(decryptedSecret ? { decryptedSecret } : {}),
      ...this.chainSeen(message),
    }
    let applied: Promise<Applied>
    if (this.inLane === 0 && !needsLookup(engine.current, change)) applied = engine.dispatch(change)
    else {
      this.inLane++
      // Wrapped, so the lane moves on once the change is queued, not once it is durable.
      const queued = this.lane.then(async () => {
        const dispatched = engine.dispatch(await withStoredNonce(engine.current, change, this.p.store))
        dispatched.catch(() => {})
        return { dispatched }
      })
      queued.finally(() => this.inLane--).catch(() => {})
      this.lane = queued.catch(() => {})
      applied = queued.then(({ dispatched }) => dispatched)
    }
    applied.catch((error) => this.p.report('receive', error))
    if (early) this.keepEarly(message, sender, senderKey, applied)
    return applied
  }

  /**
   * For a lock (a LockedTransfer or RefundTransfer), or a secret revealed to a mediator (RevealSecret): the chain as the
   * node knows it now, which the core judges the lock's time by.
   */
  private chainSeen(message: Signed<Message>): ChainSeen {
    if (!LOCK_TIMED.has(message.type) || !this.p.chainNow) return {}
    const { headBlock, reachable } = this.p.chainNow()
    return { headBlock, ...(reachable ? {} : { chainUnreachable: true }) }
  }

  /** The chain showed the channel: its messages that came before are handed to the core again, in arrival order. */
  channelOpened(tokenNetwork: Address, channelId: bigint): void {
    const key = earlyKey(tokenNetwork, channelId)
    const kept = this.early.get(key)
    if (!kept) return
    this.early.delete(key)
    // Only those the core refused for want of the channel: one applied meanwhile (its change came after the opening's,
    // in the same batch or the next) is not handed again, which would find its nonce used and its copy not yet stored.
    for (const { message, sender, senderKey, first } of kept)
      void first.then(
        (applied) => {
          if (refusedForUnknownChannel(applied)) this.receive(message, sender, senderKey).catch(() => {})
        },
        () => {},
      )
  }

  private keepEarly(
    message: Signed<Message> & { token_network_address: Address; channel_identifier: bigint },
    sender: Address,
    senderKey: Hex,
    first: Promise<Applied>,
  ) {
    const key = earlyKey(message.token_network_address, message.channel_identifier)
    const kept = this.early.get(key) ?? []
    if (kept.some((k) => k.message.signature === message.signature)) return
    kept.push({ message, sender, senderKey, first })
    if (kept.length > EARLY_PER_CHANNEL) kept.shift()
    this.early.delete(key)
    this.early.set(key, kept)
    if (this.early.size > EARLY_CHANNELS) this.early.delete(this.early.keys().next().value!)
  }
}

/** The messages whose effect depends on how much time a lock has left (docs/decisions/0056). */
const LOCK_TIMED: ReadonlySet<Message['type']> = new Set(['LockedTransfer', 'RefundTransfer', 'RevealSecret'])

/** How many channels, and messages of each, are kept until the chain shows them. */
const EARLY_CHANNELS = 64
const EARLY_PER_CHANNEL = 16

const earlyKey = (tokenNetwork: Address, channelId: bigint) => `${tokenNetwork.toLowerCase()}|${channelId}`

/** Whether the core refused the message because it does not hold its channel (messageRejected with `unknownChannel`). */
function refusedForUnknownChannel(applied: Applied): boolean {
  return applied.effects.some((e) => e.type === 'event' && e.event.type === 'messageRejected' && e.event.unknownChannel === true)
}
