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

/** Where root finds the tools the harness runs: PATH, and the sbin folders a non-login shell may leave out of it. */
const SEARCH = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/sbin', '/usr/bin', '/bin']

/** The tools the harness runs, each with the Debian package that brings it. */
const TOOLS = { ip: 'iproute2', bridge: 'iproute2', tc: 'iproute2', ethtool: 'ethtool', flock: 'util-linux' } as const
export type Tool = keyof typeof TOOLS

const found = new Map<string, string | undefined>()
/** The full path of `tool`, or undefined when it is not installed. */
export function toolPath(tool: Tool): string | undefined {
  if (!found.has(tool))
    found.set(
      tool,
      SEARCH.map((dir) => `${dir}/${tool}`).find((p) => existsSync(p)),
    )
  return found.get(tool)
}

/** Runs `cmd args` (10 s at most) and resolves with its stdout; rejects with its stderr. */
export function run(cmd: Tool, args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(toolPath(cmd) ?? cmd, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
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

/**
 * Why network namespaces cannot be built here (not root, a tool missing: `.ci/run` installs them with apt), or
 * undefined when they can.
 */
export function networkUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces are Linux's (this is ${process.platform})`
  if (process.getuid?.() !== 0) return 'building hosts in network namespaces needs root'
  const missing = [...new Set(Object.entries(TOOLS).flatMap(([tool, pkg]) => (toolPath(tool as Tool) ? [] : [pkg])))]
  if (missing.length > 0) return `missing ${missing.join(', ')}: apt-get install -y ${missing.join(' ')}`
  return undefined
}
