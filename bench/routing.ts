// The pathfinding service's core (src/pathfinding/): how many route requests one service answers per second on a
// token network of 10,000 channels, and how fast it takes in the updates that build it. One process, one thread.
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { findPaths, type PathsResult } from '../src/pathfinding/paths.ts'
import { checkUpdate } from '../src/pathfinding/updates.ts'
import type { PFSCapacityUpdate, Signed } from '../src/protocol/messages/types.ts'
import { flatAndProportionalFee, mediatorSchedule } from '../test/support/mediationFees.ts'
import { signCapacityUpdate, TEST_NOW, TestNetwork, testNodes, type TestNode } from '../test/support/pathfinding.ts'
import { mulberry32 } from '../test/support/random.ts'
import { fmt, percentile } from './measure.ts'

const NODES = 2_000
const CHANNELS = 10_000
const OFFLINE_SHARE = 0.05
const REQUESTS = 2_000

/**
 * A network grown by preferential attachment (each new node opens channels to nodes picked in proportion to the
 * channels they have: a few hubs, many small nodes, as payment networks are), 10,000 channels among 2,000 nodes.
 * Every participant deposits 100 to 10,000 tokens, announces its capacity and a fee schedule (0 to 10 flat, 0 to
 * 0.5 % per mediation), all signed and checked by the service as they would arrive.
 */
function buildNetwork(random: () => number): { net: TestNetwork; nodes: TestNode[] } {
  const nodes = testNodes(NODES, 11)
  const net = new TestNetwork()
  const ends: number[] = [] // every channel's two nodes: picking from it picks a node as often as it has channels
  const linked = new Set<string>()
  const perNode = Math.ceil(CHANNELS / NODES)
  const fees = nodes.map(() => mediatorSchedule({ flat: BigInt(Math.floor(random() * 11)), proportional: BigInt(Math.floor(random() * 5_001)) }))
  let channels = 0
  for (let i = 1; i < NODES && channels < CHANNELS; i++) {
    for (let k = 0; k < Math.min(i, perNode) && channels < CHANNELS; k++) {
      const j = ends.length > 0 && random() < 0.9 ? ends[Math.floor(random() * ends.length)]! : Math.floor(random() * i)
      const key = `${Math.min(i, j)}-${Math.max(i, j)}`
      if (j === i || linked.has(key)) continue
      linked.add(key)
      const deposit = () => BigInt(100 + Math.floor(random() * 9_901))
      const id = net.fund(nodes[i]!, nodes[j]!, deposit(), deposit())
      net.setFees(id, nodes[i]!, fees[i]!)
      net.setFees(id, nodes[j]!, fees[j]!)
      ends.push(i, j)
      channels++
    }
  }
  // Close the count with channels between random nodes, if preferential attachment fell short of it.
  while (channels < CHANNELS) {
    const [i, j] = [Math.floor(random() * NODES), Math.floor(random() * NODES)]
    const key = `${Math.min(i, j)}-${Math.max(i, j)}`
    if (i === j || linked.has(key)) continue
    linked.add(key)
    const id = net.fund(nodes[i]!, nodes[j]!, 5_000n, 5_000n)
    net.setFees(id, nodes[i]!, fees[i]!)
    net.setFees(id, nodes[j]!, fees[j]!)
    channels++
  }
  return { net, nodes }
}

/** Each participant of `count` channels sends the update after the one held (nonces one up), signed beforehand. */
function nextUpdates(net: TestNetwork, nodes: TestNode[], count: number): Signed<PFSCapacityUpdate>[] {
  const keyOf = new Map(nodes.map((n) => [n.address.toLowerCase(), n.key]))
  return [...net.view.channels.values()].slice(0, count).flatMap((channel) =>
    channel.participants.map((p) => {
      const { type: _, signature: __, ...held } = p.capacityUpdate!
      return signCapacityUpdate(keyOf.get(p.address.toLowerCase())!, { ...held, updating_nonce: held.updating_nonce + 1n })
    }),
  )
}

/** CPU seconds (this process, user and system) that `f` takes. */
function cpuSeconds(f: () => void): number {
  const before = process.cpuUsage()
  f()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1e6
}

export async function benchRouting(): Promise<Record<string, string>> {
  const curve = await loadNativeSecp256k1()
  const random = mulberry32(20_260_101)
  const { net, nodes } = buildNetwork(random)
  const offline = new Set(nodes.filter(() => random() < OFFLINE_SHARE).map((n) => n.address.toLowerCase()))
  const online = nodes.filter((n) => !offline.has(n.address.toLowerCase()))
  const context = { isOnline: (address: string) => !offline.has(address.toLowerCase()), mediationFee: flatAndProportionalFee }
  const requests = Array.from({ length: REQUESTS }, () => {
    const from = online[Math.floor(random() * online.length)]!.address
    let to = from
    while (to === from) to = online[Math.floor(random() * online.length)]!.address
    return { from, to, value: BigInt(1 + Math.floor(random() * 1_000)) }
  })
  // Warm-up, then every request once, one after the other. CPU time, not the clock: other processes share the machine.
  for (const request of requests.slice(0, 100)) findPaths(net.view, request, context)
  const times: number[] = []
  const results: PathsResult[] = []
  const cpu = cpuSeconds(() => {
    for (const request of requests) {
      const t = performance.now()
      results.push(findPaths(net.view, request, context))
      times.push(performance.now() - t)
    }
  })
  const updates = nextUpdates(net, nodes, 1_000)
  let accepted = 0
  const checking = cpuSeconds(() => {
    for (const update of updates) if (checkUpdate(net.state, update, { now: TEST_NOW, curve }).outcome === 'accepted') accepted++
  })
  if (accepted !== updates.length) throw new Error(`${updates.length - accepted} updates refused`)
  const answered = results.filter((r) => r.ok)
  const paths = answered.flatMap((r) => (r.ok ? r.paths : []))
  return {
    'network (preferential attachment; 5 % of nodes offline)': `${net.view.channels.size.toLocaleString('en-US')} channels, ${net.view.addresses.length.toLocaleString('en-US')} nodes`,
    'route requests answered per CPU second (value 1 to 1,000, max_paths 5)': fmt(REQUESTS / cpu),
    'request time, median / p99 (ms)': `${fmt(percentile(times, 50))} / ${fmt(percentile(times, 99))}`,
    'requests with a route': `${((100 * answered.length) / REQUESTS).toFixed(1)} %`,
    'capacity updates checked per CPU second (signature recovered; native secp256k1)': fmt(updates.length / checking),
    'routes per answer, hops per route (mean)': `${(paths.length / answered.length).toFixed(2)}, ${(paths.reduce((s, p) => s + p.path.length - 1, 0) / paths.length).toFixed(2)}`,
  }
}
