import { join } from 'node:path'
import { keccak256, toHex, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { mintTokens } from '../chain/erc20.ts'
import { readRegistrationPrice } from '../chain/serviceRegistry.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import type { ServedServiceApi } from '../cli/serviceRun.ts'
import type { Logger } from '../log/logger.ts'
import type { Transport } from '../transport/transport.ts'
import type { DevnetTransport } from './devnetTransport.ts'

/** ETH for a service's transactions (registration, monitor and claimReward, claims). */
const SERVICE_ETH = 100n * 10n ** 18n

/** What the devnet has for setting up a service (`startMonitoringService`, `startPathfindingService`). */
export type DevnetServiceSetup = {
  rpcUrl: string
  deployment: Deployment
  deployer: ChainClient
  queue: TransactionQueue
  transport: DevnetTransport
  dataDir: string
  log: Logger
}

/** A service's account on the devnet, and what its `create` is given. */
export type DevnetServiceAccount = {
  key: Hex
  address: Address
  /** Its data directory (under the devnet's). */
  dataDir: string
  /** Its transport on the nodes' (the same one each call). */
  transport: () => Transport
  /** Its transport's libp2p identity, with a relay. */
  peerId: string | undefined
  /** Its lines in the devnet's log, prefixed with its name. */
  log: (line: string, level: 'info' | 'warn' | 'error') => void
}

/** What the devnet runs of a service: the service and, once it serves, its API. */
export type DevnetService<S> = { service: S; api?: ServedServiceApi }

/**
 * A service of the devnet (the monitoring service, the pathfinding service): a key of its own, derived from `name`
 * (the same every run: anvil's dev keys are the nodes'), funded by the deployer with ETH and the ServiceRegistry's
 * price in service tokens, on the nodes' transport, its REST API served, then started: registered with that API's
 * URL, its first sync. `started` is called as soon as the service exists, so that a failure later still stops it.
 */
export async function startDevnetService<S extends { start(options: { url: string }): Promise<void> }>(
  setup: DevnetServiceSetup,
  p: {
    /** 'monitoring service': its key's seed and its funding's description. */
    name: string
    /** Its directory under the devnet's data directory, and its log lines' prefix. */
    short: string
    create(account: DevnetServiceAccount): Promise<S>
    serve(service: S, account: DevnetServiceAccount): Promise<ServedServiceApi>
    started(running: DevnetService<S>): void
  },
): Promise<DevnetService<S>> {
  const { deployment, deployer, queue, transport } = setup
  const key = keccak256(toHex(`sluice devnet ${p.name}`))
  const address = privateKeyToAddress(key)
  await queue.send({ to: address, data: '0x', value: SERVICE_ETH, description: `fund the ${p.name} ${address}` })
  const { price } = await readRegistrationPrice(deployer, { serviceRegistry: deployment.contracts.ServiceRegistry.address })
  await mintTokens(deployer, queue, { token: deployment.serviceToken, amount: price, to: address })
  const libp2p = transport.relay ? transport.create(key, address) : undefined
  const account: DevnetServiceAccount = {
    key,
    address,
    dataDir: join(setup.dataDir, p.short),
    transport: () => libp2p ?? transport.create(key, address),
    peerId: libp2p?.peerId,
    log: (line, level) => setup.log[level](`${p.short}: ${line}`),
  }
  const service = await p.create(account)
  const running: DevnetService<S> = { service }
  p.started(running)
  running.api = await p.serve(service, account)
  await service.start({ url: running.api.server.url })
  return running
}
