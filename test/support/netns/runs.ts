// Which run of the harness owns which names and addresses, and how a run's leftovers are found and removed.
//
// Every run takes a slot (0..255): its names start with slcNNN (network namespaces slcNNN-<host>, the root
// namespace's bridge slcNNNbr and veths slcNNNv<i>) and its addresses are 10.213.N.0/24 (underlay) and
// 10.214.N.0/24 (overlay). A record in /run/sluice-netns/NNN.json says which process owns the slot. A slot is
// taken under an exclusive lock (flock(1) on /run/sluice-netns/lock, released by the kernel if its holder dies),
// and in the same lock every slot whose owner and switch are both gone is torn down: leftovers of a run that was
// killed outright never outlive the next run.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { ipJson, run, toolPath } from './commands.ts'

export const RUN_DIR = '/run/sluice-netns'
const LOCK_FILE = `${RUN_DIR}/lock`
const TAG = /^slc(\d{3})/

/** A process as /proc knows it: its pid and its start time, so that a pid used again is not taken for it. */
export type ProcessId = { pid: number; start: string }

export type RunRecord = {
  slot: number
  owner: ProcessId
  /** The switch process (switch.ts), which tears the slot down when its owner goes. */
  switch?: ProcessId
  /** Processes of the root namespace that belong to the run (an anvil on the underlay): killed at teardown. */
  owned: ProcessId[]
  createdAt: string
}

export const slotTag = (slot: number) => `slc${String(slot).padStart(3, '0')}`
export const slotNames = (slot: number) => {
  const tag = slotTag(slot)
  return { tag, bridge: `${tag}br`, veth: (i: number) => `${tag}v${i}`, netns: (host: string) => `${tag}-${host}` }
}
export const slotAddresses = (slot: number) => ({
  /** The root namespace's side of the underlay, which every host reaches. */
  root: `10.213.${slot}.1`,
  underlay: (i: number) => `10.213.${slot}.${i + 2}`,
  overlay: (i: number) => `10.214.${slot}.${i + 2}`,
  prefix: 24,
})

const recordPath = (slot: number) => `${RUN_DIR}/${String(slot).padStart(3, '0')}.json`

export function processId(pid: number): ProcessId | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces): state is the 1st, starttime the 20th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[0] === 'Z' ? undefined : { pid, start: fields[19]! }
  } catch {
    return undefined
  }
}

export function isRunning(id: ProcessId | undefined): boolean {
  return id !== undefined && processId(id.pid)?.start === id.start
}

export function readRecord(slot: number): RunRecord | undefined {
  try {
    return JSON.parse(readFileSync(recordPath(slot), 'utf8')) as RunRecord
  } catch {
    return undefined
  }
}

export function writeRecord(record: RunRecord): void {
  writeFileSync(recordPath(record.slot), `${JSON.stringify(record, null, 2)}\n`)
}

/** Runs `fn` holding the harness's lock: one run at a time looks for leftovers and takes a slot. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(RUN_DIR, { recursive: true })
  // flock holds the lock while `cat` waits on its stdin; closing stdin (or this process dying) releases it.
  const holder = spawn(toolPath('flock') ?? 'flock', ['-w', '60', LOCK_FILE, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | null>((resolve) => holder.once('close', resolve))
  await new Promise<void>((resolve, reject) => {
    let out = ''
    holder.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('locked')) resolve()
    })
    void exited.then((code) => reject(new Error(`could not take ${LOCK_FILE} (flock exited with ${code})`)))
  })
  try {
    return await fn()
  } finally {
    holder.stdin!.end()
    await exited
  }
}

/** Every name of the harness on this machine: namespaces, links of the root namespace, /etc/netns folders. */
async function harnessNames(): Promise<{ netns: string[]; links: string[]; etc: string[] }> {
  const netns = (await ipJson<{ name: string }[]>(['netns', 'list'])).map((n) => n.name).filter((n) => TAG.test(n))
  const links = (await ipJson<{ ifname: string }[]>(['link', 'show'])).map((l) => l.ifname).filter((n) => TAG.test(n))
  const etc = existsSync('/etc/netns') ? readdirSync('/etc/netns').filter((n) => TAG.test(n)) : []
  return { netns, links, etc }
}

/** The slots something of the harness still uses: records, namespaces, links, /etc/netns folders. */
async function slotsInUse(): Promise<{ recorded: Set<number>; named: Set<number> }> {
  // Names before records: a name seen here was made after its record was written (both under the lock).
  const { netns, links, etc } = await harnessNames()
  const named = new Set<number>()
  for (const name of [...netns, ...links, ...etc]) {
    const m = TAG.exec(name)
    if (m) named.add(Number(m[1]))
  }
  const recorded = new Set<number>()
  for (const file of readdirSync(RUN_DIR)) {
    const m = /^(\d{3})\.json$/.exec(file)
    if (m) recorded.add(Number(m[1]))
  }
  return { recorded, named }
}

/** Whether 10.213.N.0/24 or 10.214.N.0/24 overlaps a route this machine already has (its own networks). */
function overlapsRoutes(slot: number, routes: string[]): boolean {
  const toInt = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)
  const range = (cidr: string): [number, number] => {
    const [ip, bits = '32'] = cidr.split('/')
    const size = 2 ** (32 - Number(bits))
    const start = Math.floor(toInt(ip!) / size) * size
    return [start, start + size - 1]
  }
  const ours = [range(`10.213.${slot}.0/24`), range(`10.214.${slot}.0/24`)]
  return routes.some((r) => {
    const [a, b] = range(r)
    return ours.some(([c, d]) => a <= d && c <= b)
  })
}

/**
 * Takes a free slot for the calling process, after tearing down every slot whose owner and switch are gone (and
 * names of the harness that no record explains). Resolves with the slot; its record is written.
 */
export async function claimSlot(): Promise<number> {
  return withLock(async () => {
    const { recorded, named } = await slotsInUse()
    for (const slot of new Set([...recorded, ...named])) {
      const record = readRecord(slot)
      if (record && (isRunning(record.owner) || isRunning(record.switch))) continue
      await teardownSlot(slot, record)
    }
    // The machine's own networks: every route but the default and those of the harness's bridges.
    const routes = (await ipJson<{ dst: string; dev?: string }[]>(['-4', 'route', 'show', 'table', 'all']))
      .filter((r) => /^\d/.test(r.dst) && !r.dst.endsWith('/0') && !TAG.test(r.dev ?? ''))
      .map((r) => r.dst)
    const after = await slotsInUse()
    const start = Math.floor(Math.random() * 256)
    for (let k = 0; k < 256; k++) {
      const slot = (start + k) % 256
      if (after.recorded.has(slot) || after.named.has(slot) || overlapsRoutes(slot, routes)) continue
      writeRecord({ slot, owner: processId(process.pid)!, owned: [], createdAt: new Date().toISOString() })
      return slot
    }
    throw new Error('no free slot for a test network (256 in use?)')
  })
}

/**
 * Removes everything of a slot: kills the processes in its namespaces and those its record owns, deletes its
 * links (which takes the namespaces' ends of its veths along), its namespaces, their /etc/netns folders and its
 * record. Idempotent, and leaves nothing half done when a part is already gone.
 */
export async function teardownSlot(slot: number, record: RunRecord | undefined = readRecord(slot)): Promise<void> {
  const names = slotNames(slot)
  const ofSlot = (n: string) => n.startsWith(names.tag)
  const present = await harnessNames()
  const namespaces = present.netns.filter(ofSlot)
  const victims: number[] = []
  for (const ns of namespaces) {
    const pids = await run('ip', ['netns', 'pids', ns]).catch(() => '')
    victims.push(...pids.split(/\s+/).filter(Boolean).map(Number))
  }
  for (const id of record?.owned ?? []) if (isRunning(id)) victims.push(id.pid)
  for (const pid of victims) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
  // A namespace with a process still in it lives on after `ip netns del`: wait for the kills to land.
  for (let i = 0; i < 100 && victims.some((pid) => processId(pid) !== undefined); i++) await sleep(20)
  // The veths first (each takes its namespace's end along), then the bridge.
  const links = present.links.filter(ofSlot).sort((a, b) => Number(a === names.bridge) - Number(b === names.bridge))
  for (const link of links) await run('ip', ['link', 'del', link]).catch(() => {})
  for (const ns of namespaces) await run('ip', ['netns', 'del', ns]).catch(() => {})
  for (const dir of present.etc.filter(ofSlot)) rmSync(`/etc/netns/${dir}`, { recursive: true, force: true })
  rmSync(recordPath(slot), { force: true })
}

/** What of a slot is still there: its namespaces and links (empty once it is torn down). */
export async function slotLeftovers(slot: number): Promise<string[]> {
  const tag = slotTag(slot)
  const { netns, links, etc } = await harnessNames()
  return [
    ...netns.filter((n) => n.startsWith(tag)),
    ...links.filter((n) => n.startsWith(tag)),
    ...etc.filter((n) => n.startsWith(tag)).map((d) => `/etc/netns/${d}`),
    ...(existsSync(recordPath(slot)) ? [recordPath(slot)] : []),
  ]
}
