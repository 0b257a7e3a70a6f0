/**
 * Hosts of their own on this machine, for tests across hosts (docs/decisions/0063-hosts-in-network-namespaces.md):
 * each host is a network namespace with two interfaces.
 *
 * - `eth0`, the underlay: a veth to a bridge in the root namespace, whose ports are isolated from each other. The
 *   test process reaches every host there without delay (a node's REST API, say) and every host reaches the root
 *   namespace's `rootAddress` (an anvil of the test's own); no host reaches another's underlay address.
 * - `ov0`, the overlay: a VXLAN device whose frames all go to a switch process (switch.ts), which forwards them to the
 *   other hosts with the link's delay and loss (20 ms ± 5 ms and 0.5 % by default, each way), and can cut a host off.
 *   Where the kernel has netem, netem delays and drops on each host's `ov0` instead, and the switch only forwards
 *   and cuts. Hosts reach each other only here: at their `overlay` addresses, or by name (each host's /etc/hosts,
 *   `ip netns exec` mounts /etc/netns/<netns>/hosts over it).
 *
 * Needs root, iproute2, ethtool and flock (`.ci/run` installs them). A run's names and addresses are its own (runs.ts),
 * `destroy()` removes everything, and if the test process dies first the switch does.
 */
import { fork, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { NetworkCommandError, run, toolPath } from './commands.ts'
import { claimSlot, processId, readRecord, slotAddresses, slotNames, teardownSlot, writeRecord } from './runs.ts'
import type { PairStats, SwitchCommand, SwitchConfig, SwitchReply } from './switch.ts'

export type LinkSettings = { delayMs: number; jitterMs: number; lossPercent: number }

/** What issue 29 asks of every link: 20 ms ± 5 ms of delay and 0.5 % loss, each way. */
export const WAN_LINK: LinkSettings = { delayMs: 20, jitterMs: 5, lossPercent: 0.5 }

/** A host's name (a-z, 0-9, -), and other names it answers to in every host's /etc/hosts (a relay's DNS name). */
export type HostSpec = string | { name: string; aliases?: string[] }

export type Host = {
  readonly name: string
  readonly netns: string
  /** Where the test process reaches it, without delay. */
  readonly underlay: string
  /** Where other hosts reach it, over the emulated links. */
  readonly overlay: string
  /** The names it answers to in every host's /etc/hosts: its name, then its aliases. */
  readonly names: readonly string[]
  /** `ip netns exec <netns>`: put before a command to run it in this host. */
  readonly exec: readonly string[]
  /** Spawns `cmd args` in this host (its pid is the command's own: `ip netns exec` execs it). */
  spawn(cmd: string, args: readonly string[], options?: SpawnOptions): ChildProcess
}

export type LinkStats = PairStats & { fromHost: string; toHost: string }

export type Network = {
  readonly slot: number
  readonly hosts: Readonly<Record<string, Host>>
  /** The root namespace's address on the underlay, which every host reaches without delay. */
  readonly rootAddress: string
  /** Who delays and drops: the kernel's netem on each host's `ov0`, or the switch process. */
  readonly emulation: 'netem' | 'switch'
  readonly link: LinkSettings
  /** The switch process's pid (for the harness's own tests). */
  readonly switchPid: number
  /** Drops every frame to and from `host` (and those on their way) until `heal`. */
  cut(host: string): Promise<void>
  heal(host: string): Promise<void>
  /** Cuts `host` off for `ms`, then heals it. */
  cutFor(host: string, ms: number): Promise<void>
  /** Drops every frame between `a` and `b` (and those on their way) until `healBetween`; each still reaches the others. */
  cutBetween(a: string, b: string): Promise<void>
  healBetween(a: string, b: string): Promise<void>
  /** Frames forwarded, lost and cut so far, per direction between two hosts. */
  stats(): Promise<LinkStats[]>
  /** A process of the root namespace that belongs to the network (killed at teardown if still running). */
  own(pid: number): void
  /** Kills whatever still runs in the hosts and removes every namespace, link, file and process of the network. */
  destroy(): Promise<void>
}

export type CreateNetworkOptions = {
  hosts: readonly HostSpec[]
  link?: LinkSettings
  /**
   * Who emulates the links: netem where the kernel has it, else the switch (the default, 'auto'). The variable
   * SLUICE_NETNS_LINK=switch or netem overrides it.
   */
  emulation?: 'auto' | 'netem' | 'switch'
}

const switchScript = fileURLToPath(new URL('./switch.ts', import.meta.url))
const projectRoot = fileURLToPath(new URL('../../../', import.meta.url))

export async function createNetwork(options: CreateNetworkOptions): Promise<Network> {
  const specs = options.hosts.map((h) => (typeof h === 'string' ? { name: h, aliases: [] } : { name: h.name, aliases: h.aliases ?? [] }))
  for (const { name, aliases } of specs)
    for (const n of [name, ...aliases]) if (!/^[a-z][a-z0-9.-]{0,40}$/.test(n)) throw new Error(`not a host name: ${JSON.stringify(n)}`)
  if (new Set(specs.map((s) => s.name)).size !== specs.length) throw new Error('two hosts with one name')
  if (specs.length > 250) throw new Error('at most 250 hosts')
  const link = options.link ?? WAN_LINK
  const wanted = (process.env.SLUICE_NETNS_LINK as 'netem' | 'switch' | undefined) ?? options.emulation ?? 'auto'

  const slot = await claimSlot()
  const names = slotNames(slot)
  const addresses = slotAddresses(slot)
  let switchProcess: ChildProcess | undefined
  try {
    await run('ip', ['link', 'add', names.bridge, 'type', 'bridge'])
    await run('ip', ['addr', 'add', `${addresses.root}/${addresses.prefix}`, 'dev', names.bridge])
    await run('ip', ['link', 'set', names.bridge, 'up'])
    const hosts: Record<string, Host> = {}
    for (const [i, spec] of specs.entries()) {
      const netns = names.netns(spec.name)
      const veth = names.veth(i)
      await run('ip', ['netns', 'add', netns])
      await run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns])
      await run('ip', ['link', 'set', veth, 'master', names.bridge])
      // Isolated ports reach the bridge (the root namespace), never each other: hosts meet only on the overlay.
      await run('bridge', ['link', 'set', 'dev', veth, 'isolated', 'on'])
      await run('ip', ['link', 'set', veth, 'up'])
      await run('ip', ['-n', netns, 'addr', 'add', `${addresses.underlay(i)}/${addresses.prefix}`, 'dev', 'eth0'])
      await run('ip', ['-n', netns, 'link', 'set', 'eth0', 'up'])
      await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up'])
      const exec = [toolPath('ip') ?? 'ip', 'netns', 'exec', netns] as const
      hosts[spec.name] = {
        name: spec.name,
        netns,
        underlay: addresses.underlay(i),
        overlay: addresses.overlay(i),
        names: [spec.name, ...spec.aliases],
        exec,
        spawn: (cmd, args, opts = {}) => spawn(exec[0], [...exec.slice(1), cmd, ...args], opts),
      }
    }
    const all = Object.values(hosts)

    const emulation = wanted === 'switch' ? 'switch' : (await hasNetem(all[0]!)) ? 'netem' : 'switch'
    if (wanted === 'netem' && emulation !== 'netem') throw new Error('SLUICE_NETNS_LINK=netem, but this kernel has no netem (CONFIG_NET_SCH_NETEM)')
    const sw = await startSwitch({ slot, bind: addresses.root, hosts: all.map((h) => h.underlay), ...(emulation === 'switch' ? { link } : {}) })
    switchProcess = sw.process
    writeRecord({ ...readRecord(slot)!, switch: processId(sw.process.pid!) })
    for (const h of all) {
      const dev = ['-n', h.netns, 'link', 'add', 'ov0', 'type', 'vxlan', 'id', '1', 'remote', addresses.root, 'local', h.underlay]
      await run('ip', [...dev, 'dstport', String(sw.port), 'dev', 'eth0'])
      await run('ip', ['-n', h.netns, 'addr', 'add', `${h.overlay}/${addresses.prefix}`, 'dev', 'ov0'])
      await run('ip', ['-n', h.netns, 'link', 'set', 'ov0', 'up'])
      // The switch reads frames in user space: the kernel must fill in the checksums a NIC would (a veth never does).
      await run('ip', ['netns', 'exec', h.netns, toolPath('ethtool')!, '-K', 'ov0', 'tx', 'off'])
      // A rate keeps netem from reordering frames whose delays were drawn apart, as the switch does.
      if (emulation === 'netem')
        await run('tc', [
          '-n',
          h.netns,
          'qdisc',
          'add',
          'dev',
          'ov0',
          'root',
          'netem',
          'delay',
          `${link.delayMs}ms`,
          `${link.jitterMs}ms`,
          'loss',
          `${link.lossPercent}%`,
          'rate',
          '1gbit',
        ])
    }

    mkdirSync('/etc/netns', { recursive: true })
    const hostsFile = ['127.0.0.1 localhost', '::1 localhost ip6-localhost ip6-loopback', ...all.map((h) => `${h.overlay} ${h.names.join(' ')}`), ''].join('\n')
    for (const h of all) {
      mkdirSync(`/etc/netns/${h.netns}`, { recursive: true })
      writeFileSync(`/etc/netns/${h.netns}/hosts`, hostsFile)
    }

    const hostOf = (name: string) => {
      const h = hosts[name]
      if (!h) throw new Error(`no host ${name} in this network (${Object.keys(hosts).join(', ')})`)
      return h
    }
    const nameOfUnderlay = new Map(all.map((h) => [h.underlay, h.name]))
    let destroyed: Promise<void> | undefined
    const cut = async (host: string) => void (await sw.command({ type: 'cut', host: hostOf(host).underlay }))
    const heal = async (host: string) => void (await sw.command({ type: 'heal', host: hostOf(host).underlay }))
    return {
      slot,
      hosts,
      rootAddress: addresses.root,
      emulation,
      link,
      switchPid: sw.process.pid!,
      cut,
      heal,
      async cutFor(host, ms) {
        await cut(host)
        await new Promise((r) => setTimeout(r, ms))
        await heal(host)
      },
      cutBetween: async (a, b) => void (await sw.command({ type: 'cutPair', hosts: [hostOf(a).underlay, hostOf(b).underlay] })),
      healBetween: async (a, b) => void (await sw.command({ type: 'healPair', hosts: [hostOf(a).underlay, hostOf(b).underlay] })),
      async stats() {
        const { stats = [] } = await sw.command({ type: 'stats' })
        return stats.map((s) => ({ ...s, fromHost: nameOfUnderlay.get(s.from) ?? s.from, toHost: nameOfUnderlay.get(s.to) ?? s.to }))
      },
      own(pid) {
        const id = processId(pid)
        if (id) writeRecord({ ...readRecord(slot)!, owned: [...readRecord(slot)!.owned, id] })
      },
      destroy: () =>
        (destroyed ??= (async () => {
          await sw.stop()
          await teardownSlot(slot)
        })()),
    }
  } catch (e) {
    switchProcess?.kill('SIGKILL')
    await teardownSlot(slot)
    throw e
  }
}

/** Whether this kernel has netem: tried on the loopback device of `host`'s namespace (and taken off again). */
async function hasNetem(host: Host): Promise<boolean> {
  try {
    await run('tc', ['-n', host.netns, 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms'])
  } catch (e) {
    // "Error: Specified qdisc kind is unknown."
    if (e instanceof NetworkCommandError && /unknown|not found/i.test(e.stderr)) return false
    throw e
  }
  await run('tc', ['-n', host.netns, 'qdisc', 'del', 'dev', 'lo', 'root'])
  return true
}

type RunningSwitch = {
  process: ChildProcess
  port: number
  command(c: DistributiveOmit<SwitchCommand, 'id'>): Promise<Extract<SwitchReply, { type: 'done' }>>
  /** Asks it to exit without tearing anything down (the caller does), and waits until it has. */
  stop(): Promise<void>
}
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never

/** Forks the switch (switch.ts) and resolves once it listens. */
async function startSwitch(config: SwitchConfig): Promise<RunningSwitch> {
  const child = fork(switchScript, [JSON.stringify(config)], {
    cwd: projectRoot,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const pending = new Map<number, (reply: Extract<SwitchReply, { type: 'done' }>) => void>()
  let nextId = 1
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the switch did not start within 30 s')), 30_000)
    child.on('message', (reply: SwitchReply) => {
      if (reply.type === 'listening') {
        clearTimeout(timer)
        resolve(reply.port)
      } else pending.get(reply.id)?.(reply)
    })
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`the switch exited (${child.exitCode ?? child.signalCode})`))
    })
  })
  const gone = new Error('the switch is gone')
  return {
    process: child,
    port,
    command: (c) =>
      new Promise((resolve, reject) => {
        if (!child.connected) return reject(gone)
        const id = nextId++
        const timer = setTimeout(() => reject(new Error(`the switch did not answer ${c.type} within 10 s`)), 10_000)
        pending.set(id, (reply) => {
          clearTimeout(timer)
          pending.delete(id)
          resolve(reply)
        })
        child.send({ ...c, id })
        void exited.then(() => reject(gone))
      }),
    async stop() {
      if (child.connected) child.send({ type: 'exit', id: 0 } satisfies SwitchCommand)
      const killed = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(killed)
    },
  }
}
