import type { Address, Hex } from 'viem'
import { packIou, packIouQuery, type Iou } from '../../protocol/iou.ts'
import { packMessage } from '../../protocol/messages/pack.ts'
import type { Message, PFSCapacityUpdate, PFSFeeUpdate, RequestMonitoring, Signed } from '../../protocol/messages/types.ts'
import { encodeMessage } from '../../protocol/messages/wire.ts'
import type { SignRequestMonitoringParameters } from '../../protocol/monitoringRequest.ts'
import { StaleStateError } from '../errors.ts'
import type { Engine } from './engine.ts'

export type SignerParameters = {
  /** The engine's state: a transition that found it stale stops the signing at once. */
  engine: Pick<Engine, 'current'>
  /** Signs a message as this node and encodes it as its wire line (transport/lineSigner.ts). */
  signLine: (message: Message) => Promise<string>
  /** Signs a RequestMonitoring as this node, both its signatures (protocol/monitoringRequest.ts). */
  signRequest: (parameters: SignRequestMonitoringParameters) => Signed<RequestMonitoring>
  /** Signs bytes as this node (EIP-191, as every message and IOU is signed). */
  signBytes: (data: Hex | Uint8Array) => Hex
}

/** The messages a service is sent signed whole, their acknowledgement id derived from their signature (transport/acknowledgement.ts). */
export type ServiceMessage = Signed<RequestMonitoring> | Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>

const isServiceMessage = (message: Message): message is ServiceMessage =>
  (message.type === 'RequestMonitoring' || message.type === 'PFSCapacityUpdate' || message.type === 'PFSFeeUpdate') && 'signature' in message

/**
 * The node's one signer outside the core, under the stale-state rule (docs/decisions/0029): delivery signs each
 * message with it as it sends it (docs/decisions/0002), the service messages their RequestMonitoring, and the effect
 * handler stops it on the commit that found the state stale. It refuses from the moment the transition found it (in
 * the engine's state before that commit reaches the effect handler), whatever was queued before.
 */
export class Signer {
  /**
   * Set by the effect handler when a commit found the state stale, or when the node lost its store to another
   * instance (LeaseLostError, docs/decisions/0076): from then on nothing is signed.
   */
  private stale: Error | undefined

  constructor(private readonly p: SignerParameters) {}

  /**
   * Delivery's signer. A service's message (a RequestMonitoring, a PFSCapacityUpdate or PFSFeeUpdate) comes signed
   * whole, its id derived from its signature: it is only encoded, still behind the same refusal.
   */
  sign(message: Message): Promise<string> {
    this.refuseIfStale()
    if (isServiceMessage(message)) return Promise.resolve(encodeMessage(message))
    return this.p.signLine(message)
  }

  /** Signs a capacity or fee announcement for a pathfinding service (docs/decisions/0073), under the same rule. */
  signAnnouncement<M extends PFSCapacityUpdate | PFSFeeUpdate>(message: M): Signed<M> {
    this.refuseIfStale()
    return { ...message, signature: this.p.signBytes(packMessage(message)) }
  }

  /** Signs an IOU to a pathfinding service (the 188 bytes OneToN checks). */
  signIou(iou: Iou): Iou & { signature: Hex } {
    this.refuseIfStale()
    return { ...iou, signature: this.p.signBytes(packIou(iou)) }
  }

  /** Signs the query for our last IOU a pathfinding service holds. */
  signIouQuery(sender: Address, receiver: Address, timestamp: string): Hex {
    this.refuseIfStale()
    return this.p.signBytes(packIouQuery(sender, receiver, timestamp))
  }

  /** Signs a RequestMonitoring as this node (docs/decisions/0035), under the same rule. */
  signRequestMonitoring(parameters: SignRequestMonitoringParameters): Signed<RequestMonitoring> {
    this.refuseIfStale()
    return this.p.signRequest(parameters)
  }

  /** The effect handler found the state stale, or the store was lost to another instance: nothing is signed from now on. */
  refuse(error: Error): void {
    this.stale = error
  }

  private refuseIfStale(): void {
    if (this.stale) throw this.stale
    const stale = this.p.engine.current.stale
    if (stale) throw new StaleStateError(`this node's state is older than what it signed: ${stale.reason}`)
  }
}
