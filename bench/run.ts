// `npm run bench`: every benchmark, printed as Markdown tables; `npm run bench -- node api` runs only those parts;
// `--trace FILE` writes Chromium traces of the page's payments, one at a time and 32 in flight (the browser part), and
// its table gives their summaries (bench/traceProfile.ts); `--only sequential|payments` stops the browser part's first
// table after its one-at-a-time rows or after its payments' rows (a shorter run while working on them); `--curves` runs the
// curves of bench/curves.ts instead (after the parts named, if any; `--curves pageStored` runs that curve alone): minutes,
// so never by default. The routing part's
// network (bench/routingNetwork.ts) takes `--minutes M` of payments per routing mode (3.5 by default: about 10 minutes
// in all; 0.25 for a quick look), `--seed N`, `--nodes N` and `--transport libp2p|broadcast`.
import { parseArgs } from 'node:util'
import { benchApi } from './api.ts'
import { benchBrowser } from './browser.ts'
import { benchEngines } from './engines.ts'
import { curves } from './curves.ts'
import { benchMonitor } from './monitor.ts'
import { benchNode } from './node.ts'
import { benchPackage } from './package.ts'
import { benchPagePair } from './pagePair.ts'
import { profilePayment } from './profile.ts'
import { benchProtocol } from './protocol.ts'
import { benchSerial } from './serial.ts'
import { benchStorage } from './storage.ts'
import { benchRelayCapacity } from './relayCapacity.ts'
import { benchRouting } from './routing.ts'
import { benchScale } from './scale.ts'
import { benchServiceWorkerHops } from './serviceWorkerHops.ts'
import { benchRoutingNetwork, DEFAULT_NETWORK_OPTIONS, type RoutingNetworkOptions } from './routingNetwork.ts'
import { benchTransport } from './transport.ts'
import { benchTransportHosts } from './transportHosts.ts'

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    trace: { type: 'string' },
    only: { type: 'string' },
    curves: { type: 'boolean' },
    minutes: { type: 'string' },
    seed: { type: 'string' },
    nodes: { type: 'string' },
    transport: { type: 'string' },
  },
})

/** The routing network's options from the command line, each checked: a wrong one stops the run before anything starts. */
function networkOptions(): RoutingNetworkOptions {
  const number = (name: 'minutes' | 'seed' | 'nodes', min: number, integer: boolean) => {
    const text = values[name]
    if (text === undefined) return DEFAULT_NETWORK_OPTIONS[name]
    const n = Number(text)
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
      console.error(`--${name} must be ${integer ? 'an integer' : 'a number'} of at least ${min}, not ${text}`)
      process.exit(2)
    }
    return n
  }
  const transport = values.transport ?? DEFAULT_NETWORK_OPTIONS.transport
  if (transport !== 'libp2p' && transport !== 'broadcast') {
    console.error(`--transport must be libp2p or broadcast, not ${transport}`)
    process.exit(2)
  }
  return { minutes: number('minutes', 0.01, false), seed: number('seed', 0, true), nodes: number('nodes', 8, true), transport }
}
const network = networkOptions()
const only = values.only
if (only !== undefined && only !== 'sequential' && only !== 'payments') {
  console.error(`--only must be sequential or payments, not ${only}`)
  process.exit(2)
}

const parts = {
  package: ['Package: what a dApp installs, and what a browser downloads, gzipped (target: the node worker without libp2p at most 250 kB)', benchPackage],
  protocol: ['Protocol core (one process: signing, encoding, decoding, verifying and every transition; payments include all their messages)', benchProtocol],
  serial: ['Tasks one at a time per key: our helper against p-queue, p-limit and async-mutex, one per key (docs/decisions/0061)', benchSerial],
  storage: ['Storage (payment-sized commits: 1 change, 1 outbox put, 1 outbox delete)', benchStorage],
  transport: [
    ['libp2p transport (two nodes and a sluice relay in one process, WebSockets on loopback, Noise, yamux): through the relay and direct', benchTransport],
    [
      'libp2p transport across hosts (network namespaces, test/support/netns/: each transport in a process on a host of its own, a sluice relay on a third; needs root)',
      benchTransportHosts,
    ],
    [
      'One sluice relay in its own process, measured from /proc (its nodes are real transports in two other processes on loopback; SLUICE_BENCH_RELAY_STEPS sets the node counts)',
      benchRelayCapacity,
    ],
  ],
  node: ['Node runtime (3 nodes, each in its own worker thread, LevelDB storage with sync writes, anvil)', benchNode],
  api: ['REST API over HTTP (sluice devnet in its own process: 2 nodes, LevelDB storage with sync writes, anvil; keep-alive fetch)', benchApi],
  routing: [
    [
      'Pathfinding service core (one process, one thread: route requests on a token network of 10,000 channels, fees of every mediator estimated; src/pathfinding/)',
      benchRouting,
    ],
    [
      `Routing in a network of ${network.nodes} headless nodes (in one process, memory storage, ${network.transport === 'libp2p' ? 'libp2p through one relay' : 'a BroadcastChannel between them'}; an anvil of its own mining a block a second; random payments for ${network.minutes} min in each mode, each mode on a fresh chain): every node with --routing-mode pfs and a pathfinding service charging per request, then with --routing-mode local; each row gives the service's figure, then local routing's`,
      () => benchRoutingNetwork(network),
    ],
  ],
  monitor: ['Monitoring service (sluice monitor: one service on anvil, LevelDB storage with sync writes; per-peer rate limits lifted)', benchMonitor],
  scale: [
    "Beyond one machine (issue 31; a PostgreSQL 15 server of the bench's own, fsync on): a payer's store on LevelDB against PostgreSQL (3 nodes in worker threads, anvil), a hub's hot standby taking over after kill -9 (sluice serve processes, a relay, anvil), the monitoring service on one PostgreSQL instance and on two",
    benchScale,
  ],
  browser: [
    [
      'The node in a page (Chromium headless; the package as built; anvil, a sluice relay and a headless sluice serve peer; every node reads the chain each second, the default)',
      () => benchBrowser(undefined, { ...(values.trace ? { trace: values.trace } : {}), ...(only ? { only } : {}) }),
    ],
    [
      'The node in a page in each engine, side by side (Chromium and Firefox ESR headless through puppeteer-core, WebKitGTK MiniBrowser under Xvfb through WebDriver; the same site, relay and peer; SLUICE_ENGINES chooses)',
      benchEngines,
    ],
    [
      "Two pages, two nodes (two Chromium headless browsers, each node in its page's worker; the package as built; a sluice relay; WebRTC on this machine's own addresses): one payment at a time, over WebRTC and through the relay",
      benchPagePair,
    ],
  ],
  hops: [
    "A request through a service worker in Chromium headless, one step added at a time (a static origin of the bench's own, no node: what each hop of the request channel costs, worker/apiChannel.ts; 500 sequential POSTs each)",
    benchServiceWorkerHops,
  ],
  profile: ['CPU profile of one direct payment (both nodes in one process, LevelDB sync writes; self time per payment)', profilePayment],
} as const satisfies Record<string, Table | readonly Table[]>
/** A table: its title and what measures its rows. */
type Table = readonly [string, () => Promise<Record<string, string>>]
type Part = keyof typeof parts

// With --curves, a name may be a curve's: only the curves named run then (all of them when none is named).
const isCurve = (p: string) => values.curves === true && p in curves
const unknown = positionals.filter((p) => !(p in parts) && !isCurve(p))
if (unknown.length > 0) {
  console.error(
    `unknown part ${unknown.join(', ')}; the parts are: ${Object.keys(parts).join(', ')}; the curves (with --curves): ${Object.keys(curves).join(', ')}`,
  )
  process.exit(2)
}
const namedParts = positionals.filter((p) => p in parts) as Part[]
const namedCurves = positionals.filter(isCurve)
const chosen = namedParts.length > 0 ? namedParts : values.curves ? [] : (Object.keys(parts) as Part[])

function table(title: string, rows: Record<string, string>) {
  console.log(`\n### ${title}\n\n| measure | value |\n| --- | --- |`)
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${v} |`)
}

// A part that fails is a row that says so, and the others still run (the exit code is 1 then).
async function runPart(name: string, [title, run]: readonly [string, () => Promise<Record<string, string>>]) {
  try {
    table(title, await run())
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).replaceAll('\n', ' ').replaceAll('|', '/')
    table(title, { [`${name}: failed`]: message })
    process.exitCode = 1
  }
}

console.log(`Sluice benchmarks, ${new Date().toISOString()}, Node ${process.version}`)
for (const name of Object.keys(parts) as Part[]) {
  if (!chosen.includes(name)) continue
  const part: Table | readonly Table[] = parts[name]
  for (const table of typeof part[0] === 'string' ? [part as Table] : (part as readonly Table[])) await runPart(name, table)
}
if (values.curves) for (const [name, part] of Object.entries(curves)) if (namedCurves.length === 0 || namedCurves.includes(name)) await runPart(name, part)
// A part may leave a handle behind (a browser's pipe, a child's stream) that would keep the process waiting
// after its tables are printed: the run ends here.
process.exit()
