import type { Address } from 'viem'
import type { ChainClient } from '../../chain/chainClient.ts'
import { ChainRpcError } from '../../chain/errors.ts'
import { readSessionSettled } from '../../chain/oneToN.ts'
import { UserDeposit } from '../../contracts/index.ts'
import { checkIou, depositCovers, type IouContext, type IouError, type SignedIou, type StoredIou } from '../iou.ts'
import { PfsAnswerError } from './errors.ts'
import type { PfsStore, PfsTx } from './store.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'

export type PaymentsParameters = {
  chain: ChainClient
  store: PfsStore
  userDeposit: Address
  oneToN: Address
  serviceFee: bigint
  /** The service's curve engine: an IOU's signer is recovered with it. */
  curve: Secp256k1Engine
  /** The latest confirmed block (the chain watch's). */
  confirmedBlock: () => bigint
  now?: () => number
}

/** An IOU that passed every check, to be stored with the request's answer. */
export type AcceptedIou = { iou: SignedIou }

const answer = (error: IouError) => new PfsAnswerError(error.name, error.message, error.details)

/**
 * The service's side of an IOU (docs/decisions/0072), raiden-services' `process_payment`: the checks of iou.ts against
 * what the store holds of the sender, then the chain's word for a new session (not paid by OneToN already) and the
 * sender's deposit (the lower of its effective balances at the latest and the confirmed block, as
 * `get_pessimistic_udc_balance`, against twice what it owes). The IOU is stored in the same step as the request's
 * answer, where the checks against the store are made again (two requests of one sender may race).
 */
export class Payments {
  constructor(private readonly p: PaymentsParameters) {}

  private context(): IouContext {
    return {
      service: this.p.chain.address,
      chainId: BigInt(this.p.chain.chainId),
      oneToN: this.p.oneToN,
      serviceFee: this.p.serviceFee,
      latestBlock: this.p.confirmedBlock(),
      curve: this.p.curve,
    }
  }

  /** Checks a request's IOU; PfsAnswerError with raiden-services' name when refused, undefined when requests are free. */
  async check(iou: SignedIou | undefined): Promise<AcceptedIou | undefined> {
    const { store, chain } = this.p
    const held = iou ? heldOf(iou, store) : { active: undefined, sessionClaimed: false }
    const checked = checkIou(iou, this.context(), held)
    if (!checked.ok) throw answer(checked.error)
    if (checked.free) return undefined
    if (
      !held.active &&
      (await readSessionSettled(chain, {
        oneToN: this.p.oneToN,
        sender: checked.iou.sender,
        receiver: checked.iou.receiver,
        expirationBlock: checked.iou.expirationBlock,
      }))
    )
      throw new PfsAnswerError('IOUAlreadyClaimed', 'The IOU is already claimed. Please start new session with different `expiration_block`.')
    const balance = await this.pessimisticBalance(checked.iou.sender)
    const low = depositCovers(balance, checked.expected)
    if (low) throw answer({ ...low, details: { ...low.details, block_number: this.p.confirmedBlock() } })
    return { iou: checked.iou }
  }

  /** In the store's step that answers the request: the checks against the store again, then the IOU as the session's newest. */
  store(tx: PfsTx, accepted: AcceptedIou): IouError | undefined {
    const { iou } = accepted
    const active = tx.activeIou(iou.sender)
    const same = tx.iou(iou.sender, iou.expirationBlock)
    const checked = checkIou(iou, this.context(), { active, sessionClaimed: same?.status === 'claimed' || same?.status === 'claiming' })
    if (!checked.ok) return checked.error
    // A raise keeps what the chain said of the session's deposit (at risk: claimed at once).
    const stored: StoredIou = { iou, status: 'held', updatedAt: (this.p.now ?? Date.now)(), ...(same?.atRisk ? { atRisk: true } : {}) }
    tx.putIou(stored)
    return undefined
  }

  /** The lower of the sender's effective UserDeposit balance at the latest block and at the last confirmed one. */
  private async pessimisticBalance(sender: Address): Promise<bigint> {
    const { publicClient } = this.p.chain
    const readAt = (blockNumber?: bigint) =>
      publicClient
        .readContract({
          address: this.p.userDeposit,
          abi: UserDeposit.abi,
          functionName: 'effectiveBalance',
          args: [sender],
          ...(blockNumber === undefined ? {} : { blockNumber }),
        })
        .catch((e: unknown) => {
          throw new ChainRpcError(`effectiveBalance of ${this.p.userDeposit}`, e)
        })
    const confirmed = this.p.confirmedBlock()
    const [latest, atConfirmed] = await Promise.all([readAt(), confirmed > 0n ? readAt(confirmed) : readAt()])
    return latest < atConfirmed ? latest : atConfirmed
  }
}

function heldOf(iou: SignedIou, store: PfsStore) {
  const same = store.iou(iou.sender, iou.expirationBlock)
  return { active: store.activeIou(iou.sender), sessionClaimed: same?.status === 'claimed' || same?.status === 'claiming' }
}
