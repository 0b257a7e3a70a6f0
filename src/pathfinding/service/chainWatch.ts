import type { Address } from 'viem'
import type { ChainClient } from '../../chain/chainClient.ts'
import type { Deployment } from '../../chain/deployment.ts'
import { ServiceChainWatch, type ServiceChainWatchParameters } from '../../chain/serviceChainWatch.ts'
import type { StoredChainEvent } from '../../storage/storage.ts'
import { channelAfterEvent, pathfindingEventOf } from '../channel.ts'
import { DEPOSIT_MARGIN_FACTOR } from '../iou.ts'
import type { PfsStore, PfsTx } from './store.ts'

export type ChainWatchParameters = Pick<ServiceChainWatchParameters<PfsTx>, 'confirmations' | 'pollingInterval' | 'onLooked' | 'onError'> & {
  chain: ChainClient
  deployment: Deployment
  store: PfsStore
}

/**
 * The pathfinding service's chain watch (docs/decisions/0072; src/chain/serviceChainWatch.ts): the registry's, every
 * token network's and UserDeposit's events from the registry's deployment, each range applied in one store step with
 * the new sync mark: the channels (their opening, deposits, withdrawals, close and settlement:
 * src/pathfinding/channel.ts), and the IOU sessions a sender's deposit no longer covers well (a withdrawal planned,
 * its balance drawn down), which are then claimed at once. The service's view follows the store once a step is
 * durable.
 */
export function pathfindingChainWatch(p: ChainWatchParameters): ServiceChainWatch<PfsTx> {
  const { TokenNetworkRegistry, SecretRegistry, UserDeposit } = p.deployment.contracts
  return new ServiceChainWatch<PfsTx>({
    ...p,
    contracts: { tokenNetworkRegistry: TokenNetworkRegistry.address, secretRegistry: SecretRegistry.address, userDeposit: UserDeposit.address },
    firstBlock: BigInt(TokenNetworkRegistry.blockNumber),
    apply: (tx, events) => {
      for (const e of events) {
        const followed = pathfindingEventOf(e.change)
        if (followed && followed.type !== 'tokenNetworkCreated') {
          const next = channelAfterEvent(tx.channel(followed.tokenNetwork, followed.channelId), followed)
          if (next) tx.putChannel(next)
          else tx.deleteChannel(followed.tokenNetwork, followed.channelId)
        } else if (!followed) depositEvent(tx, e.event)
      }
    },
  })
}

/**
 * A UserDeposit event: a sender whose balance left after a planned withdrawal, or after a service was paid from it,
 * no longer covers its IOU to us with the margin, has its session claimed at once (if worth it) rather than near its
 * end. The other events of the contract say nothing here.
 */
function depositEvent(tx: PfsTx, event: StoredChainEvent): void {
  const [owner, left] =
    event.name === 'WithdrawPlanned'
      ? [event.args.withdrawer as Address, event.args.plannedBalance as bigint]
      : event.name === 'BalanceReduced'
        ? [event.args.owner as Address, event.args.newBalance as bigint]
        : [undefined, 0n]
  if (!owner) return
  const active = tx.activeIou(owner)
  if (!active || active.atRisk || left >= active.iou.amount * DEPOSIT_MARGIN_FACTOR) return
  tx.putIou({ ...active, atRisk: true, note: `${event.name} in block ${event.blockNumber}: the deposit left, ${left}, no longer covers the IOU twice` })
}
