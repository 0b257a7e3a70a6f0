/**
 * Browser commands (they run in Node) for the page's node guarded while its tab is closed (docs/decisions/0035): a
 * private anvil of its own, so that the test may mine the blocks of a settle window without touching the run's
 * shared chain, and a real `sluice monitor` process on it, funded and registered, reached through the peers' relay.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestClient, http, parseEther, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import type { BrowserCommand } from 'vitest/node'
import { createChainClient } from '../../../src/chain/chainClient.ts'
import type { Deployment } from '../../../src/chain/deployment.ts'
import { mintTokens } from '../../../src/chain/erc20.ts'
import { createTransactionQueue } from '../../../src/chain/transactionQueue.ts'
import { startSluice, type SluiceProcess } from '../../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from '../../integration/support/devnet.ts'

const running: { processes: SluiceProcess[]; dirs: string[]; chains: Devnet[] } = { processes: [], dirs: [], chains: [] }

/** anvil with every contract and TTT registered; nothing minted. The page reaches it at `rpc`, as it does the shared one. */
export const startPrivateChain: BrowserCommand<[]> = async () => {
  const net = await startDevnet([])
  running.chains.push(net)
  return { rpc: net.anvil.rpcUrl, deployment: net.deployment as Deployment, token: net.token }
}

/** `sluice monitor` with a new key (ETH and service tokens to register), on `rpc`, through `relay`; resolves once it is ready. */
export const startMonitorService: BrowserCommand<[rpc: string, deployment: Deployment, relay: string]> = async (_ctx, rpc, deployment, relay) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-monitor-browser-'))
  running.dirs.push(dir)
  const key: Hex = generatePrivateKey()
  const address = privateKeyToAddress(key)
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  const chain = await createChainClient({ rpcUrl: rpc, privateKey: key, pollingInterval: 50 })
  await mintTokens(chain, createTransactionQueue(chain), { token: deployment.serviceToken, amount: 10n ** 22n })
  const deploymentFile = join(dir, 'deployment.json')
  writeFileSync(deploymentFile, JSON.stringify(deployment))
  const args = ['monitor', '--rpc', rpc, '--deployment', deploymentFile, '--key', key, '--data-dir', join(dir, 'data'), '--relay', relay]
  args.push('--api', '127.0.0.1:0', '--confirmations', '1', '--polling-interval', '50')
  const sluice = startSluice(args, dir)
  running.processes.push(sluice)
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  await sluice.waitForOutput(/Ready: synced to block \d+\n/, 60_000)
  return { address, api: api! }
}

/** Stops the monitoring services and private chains started, and removes their data. */
export const stopMonitoring: BrowserCommand<[]> = async () => {
  const processes = running.processes.splice(0)
  for (const p of processes) p.child.kill('SIGTERM')
  await Promise.all(processes.map((p) => p.exited))
  await Promise.all(running.chains.splice(0).map((c) => c.stop()))
  for (const dir of running.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

export const monitoringCommands = { startPrivateChain, startMonitorService, stopMonitoring }

declare module 'vitest/browser' {
  interface BrowserCommands {
    startPrivateChain(): Promise<{ rpc: string; deployment: Deployment; token: Address }>
    startMonitorService(rpc: string, deployment: Deployment, relay: string): Promise<{ address: Address; api: string }>
    stopMonitoring(): Promise<void>
  }
}
