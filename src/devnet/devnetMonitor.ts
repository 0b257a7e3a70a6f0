import { join } from 'node:path'
import { keccak256, toHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { mintTokens } from '../chain/erc20.ts'
import { readRegistrationPrice } from '../chain/serviceRegistry.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import { serveMonitorApi } from '../cli/servedMonitor.ts'
import type { ServedServiceApi } from '../cli/serviceRun.ts'
import type { Logger } from '../log/logger.ts'
import { createMonitoringService, type MonitoringService } from '../monitor/service.ts'
import type { DevnetTransport } from './devnetTransport.ts'

/** ETH for the monitoring service's transactions (registration, monitor, claimReward). */
const MONITOR_ETH = 100n * 10n ** 18n

export type DevnetMonitor = { service: MonitoringService; api?: ServedServiceApi }

/**
 * The devnet's monitoring service (`sluice monitor`, docs/decisions/0031): a key of its own (the same every run:
 * anvil's dev keys are the nodes'), funded by the deployer with ETH and the ServiceRegistry's price in service
 * tokens, on the nodes' transport, its REST API on `port`, registered once it serves. `started` is called as soon
 * as the service exists, so that a failure later still stops it.
 */
export async function startMonitoringService({
  rpcUrl,
  deployment,
  deployer,
  queue,
  transport,
  dataDir,
  port,
  started,
  log,
}: {
  rpcUrl: string
  deployment: Deployment
  deployer: ChainClient
  queue: TransactionQueue
  transport: DevnetTransport
  dataDir: string
  port: number
  started: (monitor: DevnetMonitor) => void
  log: Logger
}): Promise<DevnetMonitor> {
  const key = keccak256(toHex('sluice devnet monitoring service'))
  const address = privateKeyToAddress(key)
  await queue.send({ to: address, data: '0x', value: MONITOR_ETH, description: `fund the monitoring service ${address}` })
  const { price } = await readRegistrationPrice(deployer, { serviceRegistry: deployment.contracts.ServiceRegistry.address })
  await mintTokens(deployer, queue, { token: deployment.serviceToken, amount: price, to: address })
  const libp2p = transport.relay ? transport.create(key, address) : undefined
  const service = await createMonitoringService({
    rpc: rpcUrl,
    deployment,
    key,
    dataDir: join(dataDir, 'monitor'),
    transport: () => libp2p ?? transport.create(key, address),
    confirmations: 0,
    pollingInterval: 100,
    log: (line, level) => log[level](`monitor: ${line}`),
  })
  const monitor: DevnetMonitor = { service }
  started(monitor)
  monitor.api = await serveMonitorApi({ service, host: '127.0.0.1', port, peerId: libp2p?.peerId })
  await service.start({ url: monitor.api.server.url })
  return monitor
}
