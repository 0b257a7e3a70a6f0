import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { ServiceChainWatch, type ServiceChainWatchParameters } from '../chain/serviceChainWatch.ts'
import { applyChainEvent } from './channelEvents.ts'
import type { MonitorStore, MonitorTx } from './store.ts'

export type ChainWatchParameters = Pick<ServiceChainWatchParameters<MonitorTx>, 'confirmations' | 'pollingInterval' | 'onLooked' | 'onError'> & {
  chain: ChainClient
  deployment: Deployment
  store: MonitorStore
}

/**
 * The monitoring service's chain watch (src/chain/serviceChainWatch.ts): every token network's channel events and
 * MonitoringService's, from the earlier of the registry's and MonitoringService's deployments, each range applied to
 * the watched channels (channelEvents.ts) with the new sync mark in one store step.
 */
export function monitorChainWatch(p: ChainWatchParameters): ServiceChainWatch<MonitorTx> {
  const { TokenNetworkRegistry, SecretRegistry, MonitoringService } = p.deployment.contracts
  const service = p.chain.address
  return new ServiceChainWatch<MonitorTx>({
    ...p,
    contracts: { tokenNetworkRegistry: TokenNetworkRegistry.address, secretRegistry: SecretRegistry.address, monitoringService: MonitoringService.address },
    firstBlock: BigInt(Math.min(TokenNetworkRegistry.blockNumber, MonitoringService.blockNumber)),
    apply: (tx, events) => {
      for (const e of events) applyChainEvent(tx, e.event, service)
    },
  })
}
