import type { Address, Hex } from 'viem'
import type { Message, Signed } from '../../protocol/messages/types.ts'
import type { Report } from '../notices.ts'
import type { Applied, Engine } from './engine.ts'
import { needsLookup, withStoredNonce, type NonceLookupStore } from './nonceLookups.ts'
import { secretFromMetadata } from './secretInMetadata.ts'

export type MessageHandlerParameters = {
  engine: Pick<Engine, 'dispatch' | 'current'>
  /** What the store holds under a nonce that comes back (docs/decisions/0029). */
  store: NonceLookupStore
  address: Address
  /** Our key: it opens a secret the initiator encrypted to us in a LockedTransfer's metadata (docs/decisions/0003). */
  privateKey: Uint8Array
  report: Report
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

  constructor(private readonly p: MessageHandlerParameters) {}

  /**
   * Delivery's `onMessage`. The promise tells delivery when the message is durable: its Delivered waits for that (a
   * crash between the two would lose a SecretRequest or RevealSecret its sender no longer retries).
   */
  receive(message: Signed<Message>, sender: Address, senderKey: Hex): Promise<Applied> {
    const { engine } = this.p
    const decryptedSecret = secretFromMetadata(message, this.p.address, this.p.privateKey)
    const change = { type: 'receive' as const, message, sender, senderKey, ...(decryptedSecret ? { decryptedSecret } : {}) }
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
    return applied
  }
}
