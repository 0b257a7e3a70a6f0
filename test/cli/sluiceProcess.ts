import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { stripVTControlCharacters } from 'node:util'

export const sluiceBin = fileURLToPath(new URL('../../bin/sluice.mjs', import.meta.url))

export type SluiceProcess = {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /**
   * Resolves when stdout, without terminal colour codes, matches `pattern`; rejects if the process exits first or
   * after `timeoutMs`. (Tools such as Vite colour their output whenever `CI` is set, as it is under .ci/run.)
   */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export type StartSluiceOptions = {
  /** The process's environment (default: this one's). */
  env?: NodeJS.ProcessEnv
  /** The command line run in place of `node ...` (test/support/testCa.ts `withHosts`); the pid is still node's once it execs. */
  wrap?: (command: string[]) => string[]
}

/**
 * Runs `node bin/sluice.mjs <args>` in `cwd` (or another Node script: an installed package's bin; or Node's own
 * arguments before `args`, such as `--import tsx`), collecting its output. `options.wrap` puts a command that
 * execs node before it, such as a host's `ip netns exec NAME` (test/support/netns/), so that the pid is still node's.
 */
export function startSluice(
  args: readonly string[],
  cwd: string,
  script: string | readonly string[] = sluiceBin,
  options: StartSluiceOptions = {},
): SluiceProcess {
  const node = [process.execPath, ...(typeof script === 'string' ? [script] : script), ...args]
  const [command, ...commandArgs] = options.wrap ? options.wrap(node) : node
  const child = spawn(command!, commandArgs, { cwd, stdio: ['ignore', 'pipe', 'pipe'], ...(options.env ? { env: options.env } : {}) })
  let out = ''
  let err = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  )
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stripVTControlCharacters(out))
          if (!match) return false
          cleanup()
          resolve(match)
          return true
        }
        const onExit = () => {
          if (check()) return
          cleanup()
          reject(new Error(`sluice exited before printing ${pattern}\nstdout: ${out}\nstderr: ${err}`))
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`no ${pattern} within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`))
        }, timeoutMs)
        const cleanup = () => {
          clearTimeout(timer)
          child.stdout!.off('data', check)
          child.off('close', onExit)
        }
        if (check()) return
        child.stdout!.on('data', check)
        child.once('close', onExit)
      })
    },
  }
}

/**
 * The flags of a `sluice serve` under test beside its chain, key and data: an API on a free port, no confirmations,
 * a quick poll of the chain, and the development environment (the testing endpoints).
 */
export const quickServeFlags = ['--api', '127.0.0.1:0', '--confirmations', '0', '--polling-interval', '50', '--environment', 'development'] as const

/** Asks it to stop (SIGTERM), and kills it if it has not exited within `graceMs`; resolves once it is gone. */
export async function stopSluice(p: SluiceProcess, graceMs = 20_000): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return
  p.child.kill('SIGTERM')
  const killed = setTimeout(() => p.child.kill('SIGKILL'), graceMs)
  await p.exited
  clearTimeout(killed)
}

/** Runs sluice to completion. */
export async function runSluice(args: readonly string[], cwd: string) {
  const p = startSluice(args, cwd)
  const { code, signal } = await p.exited
  return { code, signal, stdout: p.stdout(), stderr: p.stderr() }
}

/** Every process now, with its parent and command name, read from /proc (Linux). */
function processTable(): { pid: number; parent: number; name: string }[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        // The name in field 2 may contain spaces, so split the fields after its closing parenthesis.
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        return [{ pid: Number(d), parent: Number(fields[1]), name }]
      } catch {
        return [] // the process ended while we looked
      }
    })
}

/** The processes whose parent is `pid`, with their command names, read from /proc (Linux). */
export function childProcesses(pid: number): { pid: number; name: string }[] {
  return processTable()
    .filter((p) => p.parent === pid)
    .map(({ pid, name }) => ({ pid, name }))
}

/**
 * Every process under `pid` (its children, theirs, and so on), from one read of /proc: a watch that samples a tree
 * often reads each process once per sample, not once per process of the tree.
 */
export function descendants(pid: number): { pid: number; name: string }[] {
  const children = new Map<number, { pid: number; name: string }[]>()
  for (const { pid, parent, name } of processTable()) {
    const siblings = children.get(parent)
    if (siblings) siblings.push({ pid, name })
    else children.set(parent, [{ pid, name }])
  }
  const found: { pid: number; name: string }[] = []
  const queue = [pid]
  while (queue.length > 0)
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child)
      queue.push(child.pid)
    }
  return found
}

/** Whether a process is still there and not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

/** What starts a log line up to its message, in either format: `HH:MM:SS.mmm LEVEL ` (src/log), or `..."msg":"` (--log-json). */
const LOG_HEAD = String.raw`(?:^\d\d:\d\d:\d\d\.\d{3} [A-Z]+ +|"msg":")`

/** A log line whose message starts with `msg` (a RegExp source), pretty or JSON: `logged('Ready: synced to block (\\d+)')`. */
export function logged(msg: string, flags = 'm'): RegExp {
  return new RegExp(`${LOG_HEAD}${msg}`, flags)
}

/** The pretty log lines of `output` without their clock and level: the message, then the fields it did not name. */
export function logMessages(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^\d\d:\d\d:\d\d\.\d{3} [A-Z]+ +/, ''))
}

/** Where `sluice relay` listens, from its output (pretty or --log-json): its `Relay <peer id> listening on <multiaddrs>` line. */
export function relayListening(output: string): { peerId: string; multiaddrs: string[] } | undefined {
  for (const line of output.split('\n')) {
    if (line.startsWith('{')) {
      const record = JSON.parse(line) as { msg: string; peerId?: string; multiaddrs?: string[] }
      if (record.msg.startsWith('Relay ') && record.peerId && record.multiaddrs) return { peerId: record.peerId, multiaddrs: record.multiaddrs }
      continue
    }
    const m = /^\d\d:\d\d:\d\d\.\d{3} INFO +Relay (\S+) listening on (.+)$/.exec(line)
    if (m) return { peerId: m[1]!, multiaddrs: m[2]!.split(', ') }
  }
  return undefined
}
