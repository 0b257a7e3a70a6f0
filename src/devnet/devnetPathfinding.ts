import { join } from 'node:path'
import { keccak256, toHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { mintTokens } from '../chain/erc20.ts'
import { readRegistrationPrice } from '../chain/serviceRegistry.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import { servePathfindingApi } from '../cli/servedPathfinding.ts'
import type { ServedServiceApi } from '../cli/serviceRun.ts'
import type { Logger } from '../log/logger.ts'
import { serviceMediationFee } from '../pathfinding/mediationFee.ts'
import { createPathfindingService, type PathfindingService } from '../pathfinding/service/service.ts'
import type { DevnetTransport } from './devnetTransport.ts'

/** ETH for the pathfinding service's transactions (registration, claims). */
const PATHFINDING_ETH = 100n * 10n ** 18n

export type DevnetPathfinding = { service: PathfindingService; api?: ServedServiceApi }

/**
 * The devnet's pathfinding service (`sluice pathfinding`, docs/decisions/0072), free (no IOU asked) unless given a `serviceFee`, as the monitoring
 * service is set up (devnetMonitor.ts): a key of its own, funded with ETH and the ServiceRegistry's price, on the
 * nodes' transport, its REST API on `port`, registered with that URL once it serves. Started before the nodes, which
 * announce their channels to it (docs/decisions/0073). `started` is called as soon as the service exists.
 */
export async function startPathfindingService({
  rpcUrl,
  deployment,
  deployer,
  queue,
  transport,
  dataDir,
  port,
  started,
  log,
  serviceFee,
}: {
  rpcUrl: string
  deployment: Deployment
  deployer: ChainClient
  queue: TransactionQueue
  transport: DevnetTransport
  dataDir: string
  port: number
  started: (pathfinding: DevnetPathfinding) => void
  log: Logger
  /** What a routes request costs, in service tokens (bench/routingNetwork.ts: paid by IOUs); free when absent. */
  serviceFee?: bigint
}): Promise<DevnetPathfinding> {
  const key = keccak256(toHex('sluice devnet pathfinding service'))
  const address = privateKeyToAddress(key)
  await queue.send({ to: address, data: '0x', value: PATHFINDING_ETH, description: `fund the pathfinding service ${address}` })
  const { price } = await readRegistrationPrice(deployer, { serviceRegistry: deployment.contracts.ServiceRegistry.address })
  await mintTokens(deployer, queue, { token: deployment.serviceToken, amount: price, to: address })
  const libp2p = transport.relay ? transport.create(key, address) : undefined
  const service = await createPathfindingService({
    rpc: rpcUrl,
    deployment,
    key,
    dataDir: join(dataDir, 'pathfinding'),
    transport: () => libp2p ?? transport.create(key, address),
    mediationFee: serviceMediationFee,
    ...(serviceFee === undefined ? {} : { serviceFee }),
    confirmations: 0,
    pollingInterval: 100,
    log: (line, level) => log[level](`pathfinding: ${line}`),
  })
  const pathfinding: DevnetPathfinding = { service }
  started(pathfinding)
  const relays = transport.relay?.multiaddrs ?? []
  pathfinding.api = await servePathfindingApi({
    service,
    host: '127.0.0.1',
    port,
    ...(libp2p?.peerId ? { transportInfo: { peerId: libp2p.peerId, relays } } : {}),
  })
  await service.start({ url: pathfinding.api.server.url })
  return pathfinding
}
