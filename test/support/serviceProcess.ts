// A service process (`sluice monitor`, `sluice pathfinding`) in a test, on an anvil with a relay: the anvil and the
// relay, its flags, its start, the accounts that pay it and their channels, and the nodes it acknowledges. No vitest
// imports.
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { createChainClient, type ChainClient } from '../../src/chain/chainClient.ts'
import type { Deployment } from '../../src/chain/deployment.ts'
import { mintTokens } from '../../src/chain/erc20.ts'
import { openChannel, setTotalDeposit } from '../../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue, type TransactionQueue } from '../../src/chain/transactionQueue.ts'
import { depositToUserDeposit } from '../../src/chain/userDepositActions.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { decodeMessage } from '../../src/protocol/messages/sign.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { startSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

export type ServiceNetwork = { net: Devnet; relay: Relay; deploymentFile: string; stop(): Promise<void> }

/**
 * What a service runs on: an anvil with the contracts (`keys` minted tokens), its deployment written to
 * `dir`/deployment.json for --deployment, and a relay on a free port. What started is stopped again if the rest fails.
 */
export async function startDevnetAndRelay(keys: readonly Hex[], dir: string): Promise<ServiceNetwork> {
  const started = await Promise.allSettled([startDevnet(keys), startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })])
  const [net, relay] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined)) as [Devnet | undefined, Relay | undefined]
  const stop = async () => {
    await relay?.stop()
    await net?.stop()
  }
  try {
    for (const s of started) if (s.status === 'rejected') throw s.reason
    const deploymentFile = join(dir, 'deployment.json')
    await writeDeployment(deploymentFile, net!.deployment)
    return { net: net!, relay: relay!, deploymentFile, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

export type ServiceFlags = { rpcUrl: string; deploymentFile: string; key: Hex; dataDir: string; relay: string; confirmations: number }

/** The flags every test start of a service gives: its chain, key, data, relay, an API on a free port, quick polling. */
export function serviceFlags(p: ServiceFlags): string[] {
  return [
    ...['--rpc', p.rpcUrl, '--deployment', p.deploymentFile, '--key', p.key, '--data-dir', p.dataDir, '--relay', p.relay],
    ...['--api', '127.0.0.1:0', '--confirmations', String(p.confirmations), '--polling-interval', '50'],
  ]
}

/**
 * Starts `sluice <args>` and waits until it serves its API and is ready (registered, first sync done). It goes in
 * `started` first, so that the test's end kills it even if it never gets ready.
 */
export async function startServiceProcess(
  args: readonly string[],
  cwd: string,
  started: SluiceProcess[] = [],
): Promise<{ sluice: SluiceProcess; api: string }> {
  const sluice = startSluice(args, cwd)
  started.push(sluice)
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  await sluice.waitForOutput(/Ready: synced to block \d+\n/, 60_000)
  return { sluice, api: api! }
}

export type TestAccount = { chain: ChainClient; queue: TransactionQueue }

/** A chain client and a transaction queue per key, each made once (two queues of one key would share its nonces). */
export function testAccounts(rpcUrl: string): (key: Hex) => Promise<TestAccount> {
  const made = new Map<Hex, Promise<TestAccount>>()
  return (key) => {
    let account = made.get(key)
    if (!account) {
      account = createChainClient({ rpcUrl, privateKey: key, pollingInterval: 20 }).then((chain) => ({ chain, queue: createTransactionQueue(chain) }))
      made.set(key, account)
    }
    return account
  }
}

/** Opens a channel between `one` and `two`, each depositing `deposit`: its id. */
export async function openChannelWithDeposits(
  one: TestAccount,
  two: TestAccount,
  { tokenNetwork, settleTimeout, deposit }: { tokenNetwork: Address; settleTimeout: bigint; deposit: bigint },
): Promise<bigint> {
  const { channelId } = await openChannel(one.chain, one.queue, { tokenNetwork, partner: two.chain.address, settleTimeout, totalDeposit: deposit })
  await setTotalDeposit(two.chain, two.queue, { tokenNetwork, channelId, partner: one.chain.address, totalDeposit: deposit })
  return channelId
}

/**
 * What the services are paid with: `service` gets service tokens from `deployer` for the ServiceRegistry's price, and
 * `payer` deposits `deposit` service tokens in its UserDeposit (a monitoring reward, IOUs).
 */
export async function fundServiceAndPayer(
  deployment: Deployment,
  { deployer, service, payer, deposit }: { deployer: TestAccount; service: Address; payer: TestAccount; deposit: bigint },
): Promise<void> {
  await mintTokens(deployer.chain, deployer.queue, { token: deployment.serviceToken, amount: 10n ** 22n, to: service })
  await mintTokens(payer.chain, payer.queue, { token: deployment.serviceToken, amount: deposit })
  await depositToUserDeposit(payer.chain, payer.queue, { userDeposit: deployment.contracts.UserDeposit.address, totalDeposit: deposit })
}

/**
 * A node's libp2p transport on `relays`, started: the id of each Delivered `service` signs to it goes in `acknowledged`.
 * One that fails to start is stopped (what it had opened before failing), since the caller never gets it to stop.
 */
export async function acknowledgedTransport(key: Hex, relays: string[], service: Address, acknowledged: Set<bigint>): Promise<Libp2pTransport> {
  const transport = createLibp2pTransport({ privateKey: key, relays, announceIntervalMs: 1_000 })
  try {
    await transport.start(async (lines) => {
      for (const text of lines) {
        const decoded = await decodeMessage(jsSecp256k1, text).catch(() => undefined)
        if (decoded?.message.type === 'Delivered' && decoded.signer === service) acknowledged.add(decoded.message.delivered_message_identifier)
      }
    })
  } catch (e) {
    await transport.stop().catch(() => {})
    throw e
  }
  return transport
}
