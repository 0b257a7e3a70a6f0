// The channel the monitoring service's CLI tests (`sluice monitor`) watch: a partner and a requester with deposits on
// both sides, on an anvil with a relay; the requester pays the service from its UserDeposit and hears its
// acknowledgements. No vitest imports.
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import type { Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import type { ProofOf } from './monitoring.ts'
import {
  acknowledgedTransport,
  fundServiceAndPayer,
  openChannelWithDeposits,
  startDevnetAndRelay,
  testAccounts,
  type ServiceNetwork,
} from './serviceProcess.ts'

export const [partnerKey, requesterKey, serviceKey] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]] as [Hex, Hex, Hex]
export const [partner, requester, serviceAddress] = [partnerKey, requesterKey, serviceKey].map((k) => privateKeyToAddress(k)) as [Address, Address, Address]

export type MonitoredChannel = ServiceNetwork & {
  channel: ProofOf
  /** The requester on the relay. */
  requesterTransport: Libp2pTransport
  /** Ids of the Delivered the service sent the requester. */
  acknowledged: Set<bigint>
}

/**
 * The partner's and the requester's channel (1000 tokens deposited by each, settled `settleTimeout` blocks after a
 * close) on an anvil with a relay, its deployment in `dir`. The service holds service tokens to register with, the
 * requester 10 in its UserDeposit to pay rewards from. stop() stops the requester's transport, the relay and anvil.
 */
export async function startMonitoredChannel({ settleTimeout, dir }: { settleTimeout: bigint; dir: string }): Promise<MonitoredChannel> {
  const network = await startDevnetAndRelay([partnerKey, requesterKey], dir)
  const { net, relay } = network
  let requesterTransport: Libp2pTransport | undefined
  const stop = async () => {
    await requesterTransport?.stop()
    await network.stop()
  }
  try {
    const account = testAccounts(net.anvil.rpcUrl)
    const [deployer, p, n] = await Promise.all([account(anvilKeys[0] as Hex), account(partnerKey), account(requesterKey)])
    // The service pays the registry in service tokens; the requester's UserDeposit pays the service.
    await fundServiceAndPayer(net.deployment, { deployer, service: serviceAddress, payer: n, deposit: 10n ** 19n })
    const channelId = await openChannelWithDeposits(p, n, { tokenNetwork: net.tokenNetwork, settleTimeout, deposit: 1000n })
    const acknowledged = new Set<bigint>()
    requesterTransport = await acknowledgedTransport(requesterKey, relay.multiaddrs, serviceAddress, acknowledged)
    const channel = { tokenNetwork: net.tokenNetwork, chainId: BigInt(net.deployment.chainId), channelId }
    return { ...network, channel, requesterTransport, acknowledged, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
