import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { quickServeFlags, relayListening, startSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { startPostgres, type TestPostgres } from './postgres.ts'

/**
 * What a hub with a hot standby needs around it (docs/decisions/0076), shared by the process tests of the standby
 * (test/cli/serveStandby*.test.ts) and `npm run bench -- scale`: a real anvil with the contracts, a PostgreSQL server of
 * its own, a `sluice relay`, and `sluice serve` processes started on them, each stopped by `stop`.
 */
export type HubWorld = {
  net: Devnet
  pg: TestPostgres
  relayAddress: string
  /** A new temporary directory, removed by `stop`. */
  tempDir(): string
  /** `sluice serve` on this world's chain and relay with `key`, its store given by `store` (`--database URL ...` or `--data-dir DIR`). */
  serveArgs(key: Hex, store: string[]): string[]
  /** Starts a `sluice serve` (or any sluice command): killed by `stop` if still running. */
  startServe(args: string[]): SluiceProcess
  /** Kills what is still running, stops the relay, anvil and PostgreSQL, and removes the directories. */
  stop(): Promise<void>
}

export async function startHubWorld(keys: Hex[], mint?: bigint): Promise<HubWorld> {
  const dirs: string[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-standby-'))
    dirs.push(dir)
    return dir
  }
  const started: SluiceProcess[] = []
  const relay = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'], tempDir())
  const [net, pg] = await Promise.all([startDevnet(keys, mint), startPostgres(), relay.waitForOutput(/Press Ctrl-C to stop/)])
  const relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
  const deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
  return {
    net,
    pg,
    relayAddress,
    tempDir,
    serveArgs: (key, store) => [
      'serve',
      '--rpc',
      net.anvil.rpcUrl,
      '--deployment',
      deploymentFile,
      '--key',
      key,
      ...store,
      ...quickServeFlags,
      '--relay',
      relayAddress,
    ],
    startServe(args) {
      const sluice = startSluice(args, tempDir())
      started.push(sluice)
      return sluice
    },
    async stop() {
      for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
      await Promise.all(started.map((p) => p.exited))
      relay.child.kill('SIGTERM')
      await relay.exited
      await net.stop()
      await pg.stop()
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    },
  }
}

/** The API of a node that serves (active, or without a standby), once it says where. */
export async function activeApi(sluice: SluiceProcess, timeoutMs = 60_000): Promise<string> {
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, timeoutMs)
  return api!
}

/** The API of a node standing by, once it says where. */
export async function standbyApi(sluice: SluiceProcess, timeoutMs = 60_000): Promise<string> {
  const [, api] = await sluice.waitForOutput(/REST API \(standing by\): (\S+)\n/, timeoutMs)
  return api!
}

/** What GET /status answers, or undefined when nothing answers (the process is dead or between its two servers). */
export async function statusOf(api: string): Promise<{ status: string; role?: string } | undefined> {
  try {
    const r = await fetch(`${api}/status`, { signal: AbortSignal.timeout(5_000) })
    return (await r.json()) as { status: string; role?: string }
  } catch {
    return undefined
  }
}

/** Polls GET /status until it answers `status` (and `role`, when given); throws with the last answer after `timeoutMs`. */
export async function waitForStatus(api: string, expected: { status: string; role?: string }, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  let last: unknown
  for (;;) {
    last = await statusOf(api)
    const s = last as { status?: string; role?: string } | undefined
    if (s?.status === expected.status && (expected.role === undefined || s.role === expected.role)) return
    if (performance.now() > deadline) throw new Error(`${api}/status answered ${JSON.stringify(last)}, not ${JSON.stringify(expected)}, for ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
