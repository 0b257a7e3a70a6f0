// The commands the network harness builds hosts with (iproute2's ip and bridge, tc, ethtool), each bounded in time
// and failing with what the command said.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'

export class NetworkCommandError extends Error {
  override name = 'NetworkCommandError'
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || 'failed'}`)
  }
}

/** Runs `cmd args` (10 s at most) and resolves with its stdout; rejects with its stderr. */
export function run(cmd: string, args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new NetworkCommandError(`${cmd} ${args.join(' ')}`, stderr || error.message))
      else resolve(stdout)
    })
  })
}

/** `ip -j ARGS`, parsed. */
export async function ipJson<T>(args: readonly string[]): Promise<T> {
  const out = await run('ip', ['-j', ...args])
  return (out.trim() === '' ? [] : JSON.parse(out)) as T
}

/** The tools the harness needs, each with the Debian package that brings it, and those missing on this machine. */
const TOOLS = [
  ['/usr/sbin/ip', '/usr/bin/ip', 'iproute2'],
  ['/usr/sbin/bridge', '/sbin/bridge', 'iproute2'],
  ['/usr/sbin/ethtool', '/sbin/ethtool', 'ethtool'],
  ['/usr/bin/flock', '/bin/flock', 'util-linux'],
] as const

/**
 * Why network namespaces cannot be built here (not root, a tool missing: `.ci/run` installs them with apt), or
 * undefined when they can.
 */
export function networkUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces are Linux's (this is ${process.platform})`
  if (process.getuid?.() !== 0) return 'building hosts in network namespaces needs root'
  const missing = [...new Set(TOOLS.filter((paths) => !paths.slice(0, 2).some((p) => existsSync(p))).map(([, , pkg]) => pkg))]
  if (missing.length > 0) return `missing ${missing.join(', ')}: apt-get install -y ${missing.join(' ')}`
  return undefined
}
