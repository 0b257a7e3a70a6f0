/**
 * Browser commands (they run in Node) that start what a page's node talks to in the world: a `sluice relay` and
 * headless peers (`sluice serve` processes, libp2p through that relay), on the run's anvil. The page reaches the
 * peers over libp2p only; the test drives the peers through their own REST API with `peerRequest`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestClient, http, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import type { BrowserCommand } from 'vitest/node'
import type { Deployment } from '../../../src/chain/deployment.ts'
import { relayListening, startSluice, type SluiceProcess } from '../../cli/sluiceProcess.ts'

export type Peer = { address: `0x${string}`; api: string }
export type Peers = { relay: string; peers: Peer[] }

const running: { processes: SluiceProcess[]; dirs: string[] } = { processes: [], dirs: [] }

function start(args: string[]): SluiceProcess {
  const p = startSluice(args, process.cwd())
  running.processes.push(p)
  return p
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  running.dirs.push(dir)
  return dir
}

/** A relay and `count` funded peers connected to it; resolves once every peer's API answers and it is synced. */
export const startPeers: BrowserCommand<[rpc: string, deployment: Deployment, count: number]> = async (_ctx, rpc, deployment, count) => {
  const dir = tempDir('sluice-peers-')
  const deploymentFile = join(dir, 'deployment.json')
  writeFileSync(deploymentFile, JSON.stringify(deployment))
  const relay = start(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'])
  await relay.waitForOutput(/Press Ctrl-C to stop/, 60_000)
  const relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
  const anvil = createTestClient({ mode: 'anvil', transport: http(rpc) })
  const peers = await Promise.all(
    Array.from({ length: count }, async () => {
      const key: Hex = generatePrivateKey()
      const address = privateKeyToAddress(key)
      await anvil.setBalance({ address, value: parseEther('10') })
      const args = ['serve', '--rpc', rpc, '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir('sluice-peer-')]
      args.push('--api', '127.0.0.1:0', '--confirmations', '0', '--polling-interval', '50', '--environment', 'development', '--relay', relayAddress)
      const peer = start(args)
      const [, api] = await peer.waitForOutput(/REST API: (\S+)\n/, 60_000)
      await peer.waitForOutput(/Ready: synced/, 60_000)
      return { address, api: api!.replace(/\/$/, '') }
    }),
  )
  return { relay: relayAddress, peers }
}

/** One request to a peer's REST API (`api` as startPeers gave it, `path` under /api/v1): status and JSON. */
export const peerRequest: BrowserCommand<[api: string, method: string, path: string, body?: unknown]> = async (_ctx, api, method, path, body) => {
  const base = api.endsWith('/api/v1') ? api : `${api}/api/v1`
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : null }
}

/** Stops every relay and peer started, and removes their data. */
export const stopPeers: BrowserCommand<[]> = async () => {
  const processes = running.processes.splice(0)
  for (const p of processes) p.child.kill('SIGTERM')
  await Promise.all(processes.map((p) => p.exited))
  for (const dir of running.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

export const peerCommands = { startPeers, peerRequest, stopPeers }

declare module 'vitest/browser' {
  interface BrowserCommands {
    startPeers(rpc: string, deployment: Deployment, count: number): Promise<Peers>
    peerRequest<T = any>(api: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>
    stopPeers(): Promise<void>
  }
}
