import { tmpdir } from 'node:os'
import type { DevnetSummary } from '../../src/cli/devnet.ts'
import { childProcesses, startSluice, type SluiceProcess } from './sluiceProcess.ts'

/** The --json line: the command's own summary (`relay` only with --transport libp2p, `monitor` only with --monitoring). */
export type DevnetJson = DevnetSummary

/** Starts `sluice devnet --json` and resolves with its one line once every node is ready. */
export async function startDevnetCommand(args: string[], cwd: string = tmpdir()): Promise<{ sluice: SluiceProcess; info: DevnetJson; anvilPid: number }> {
  const sluice = startSluice(['devnet', '--json', ...args], cwd)
  const [line] = await sluice.waitForOutput(/^\{.*\}\n/m, 120_000)
  const info = JSON.parse(line!) as DevnetJson
  const anvil = childProcesses(sluice.child.pid!).find((p) => p.name === 'anvil')
  if (!anvil) throw new Error('no anvil child process')
  return { sluice, info, anvilPid: anvil.pid }
}

export async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : undefined }
}
