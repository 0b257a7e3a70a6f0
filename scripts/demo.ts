// `npm run demo` (README, Quick start): builds the package and the demo page, starts a network for it (`sluice devnet`:
// anvil mining a block every second, a libp2p relay, two headless peers with a TTT channel, a monitoring service, a
// pathfinding service the page's node asks for routes, a backup server for the nodes' sealed copies), tells the page about that
// network in /demo.json and serves demo/dist on 127.0.0.1. Runs until Ctrl-C or SIGTERM, then stops what it started.
//
//   1. npm run build (packages/*/dist/), sluice init demo/public, vite build --config demo/vite.config.ts (demo/dist/), while
//      sluice devnet starts beside them;
//   2. demo/dist/demo.json (DemoConfig, demo/src/config.ts) and demo/dist/deployments/<chainId>.json;
//   3. a static server of demo/dist (staticServer.ts), listening from the start so that a port in use fails at once,
//      with the page's door to the peers' and the monitoring service's APIs (demoProxy.ts: /peers/<n>/api/v1/...,
//      /monitor/api/v1/...), since those APIs refuse the page's origin.
//
// Two demos at once in one checkout (a test and a person) build one after the other (a lock file), and each serves
// its own demo.json and deployment file from memory, whichever wrote demo/dist last.
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import type { Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { DemoConfig } from '../demo/src/config.ts'
import type { DevnetSummary } from '../src/cli/devnet.ts'
import { nextSignal } from '../src/cli/processSignals.ts'
import { formatTable } from '../src/cli/table.ts'
import { proxy, type ProxyTargets } from './demoProxy.ts'
import { staticServer } from './staticServer.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const distDir = join(root, 'demo/dist')
const BLOCK_TIME = 1

const usage = `Usage: npm run demo -- [--port 5173] [--rpc-port 0]

Builds the package and the demo page, starts a local network (anvil with a block every ${BLOCK_TIME} s, a libp2p relay,
two headless peers with a TTT channel, a monitoring service, a pathfinding service, a backup server) and serves the page on
http://127.0.0.1:PORT/. Runs until Ctrl-C.

Flags:
  --port PORT      where the page is served (default 5173; 0 picks a free port)
  --rpc-port PORT  anvil's JSON-RPC port (default 0: a free port)
  --help           this text`

/** A failure with the exit code it gives: 2 for what the user can fix with a flag, 1 otherwise. */
class DemoError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message)
  }
}

function portFlag(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || port > 65535) throw new DemoError(`--${name} must be a port number from 0 to 65535, not ${JSON.stringify(raw)}`, 2)
  return port
}

function parseFlags(argv: string[]): { help: true } | { help: false; port: number; rpcPort: number } {
  let values: { port?: string | undefined; 'rpc-port'?: string | undefined; help?: boolean | undefined }
  try {
    ;({ values } = parseArgs({ args: argv, options: { port: { type: 'string' }, 'rpc-port': { type: 'string' }, help: { type: 'boolean', short: 'h' } } }))
  } catch (e) {
    throw new DemoError(`${(e as Error).message} (--help lists the flags)`, 2)
  }
  if (values.help) return { help: true }
  return { help: false, port: portFlag('port', values.port, 5173), rpcPort: portFlag('rpc-port', values['rpc-port'], 0) }
}

// --- Child processes: each in a process group of its own, so that stopping one stops what it started (tsc, anvil). ---

/** Set once stopping has begun: nothing new starts after that. */
let stopping = false
const children = new Set<ChildProcess>()

function startChild(args: string[]): ChildProcess {
  if (stopping) throw new DemoError('stopping', 1)
  // detached: a new process group (and session), which Ctrl-C in the terminal does not reach: we stop it ourselves.
  const child = spawn(process.execPath, args, { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.once('close', () => children.delete(child))
  return child
}

function closed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((done) => child.once('exit', () => done()))
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // the group is gone already
  }
}

/**
 * Stops a child: SIGTERM to the process itself (the devnet then stops its nodes, relay and anvil) or to its whole
 * group; SIGKILL to the group if it has not exited after `graceMs`, and to whatever of the group outlived it.
 */
async function stopChild(child: ChildProcess, { group, graceMs }: { group: boolean; graceMs: number }): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    if (group) killGroup(child, 'SIGTERM')
    else child.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    await Promise.race([closed(child), new Promise((done) => (timer = setTimeout(done, graceMs)))])
    clearTimeout(timer)
  }
  killGroup(child, 'SIGKILL')
  await closed(child)
}

/** Runs one build step to completion; its output is shown only if it fails. */
async function runStep(title: string, args: string[]): Promise<void> {
  console.log(`${title}...`)
  const started = performance.now()
  const child = startChild(args)
  let output = ''
  child.stdout!.on('data', (c: Buffer) => (output += c))
  child.stderr!.on('data', (c: Buffer) => (output += c))
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail)
    child.once('close', (code) => done(code))
  })
  if (stopping) throw new DemoError('stopping', 1)
  if (code !== 0) throw new DemoError(`${title} failed (exit code ${code}):\n${output.trimEnd()}`, 1)
  console.log(`  done in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Takes the build lock of this checkout (a file in the temporary directory holding our pid), waiting while another
 * live process holds it; resolves to its release.
 */
async function buildLock(): Promise<() => Promise<void>> {
  const path = join(tmpdir(), `sluice-demo-build-${createHash('sha256').update(root).digest('hex').slice(0, 16)}.lock`)
  let told = false
  for (;;) {
    if (stopping) throw new DemoError('stopping', 1)
    try {
      await writeFile(path, String(process.pid), { flag: 'wx' })
      return () => rm(path, { force: true })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
    const holder = Number(await readFile(path, 'utf8').catch(() => ''))
    const since = await stat(path).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    )
    // A holder that died (or an empty file left by one that died as it wrote it) leaves a stale lock.
    if (holder ? !isAlive(holder) : since > 10_000) {
      await rm(path, { force: true })
      continue
    }
    if (!told && holder) {
      console.log(`Waiting for another npm run demo (pid ${holder}) to finish building...`)
      told = true
    }
    await new Promise((r) => setTimeout(r, 200))
  }
}

async function buildPage(): Promise<void> {
  const release = await buildLock()
  try {
    await buildSteps()
  } finally {
    await release()
  }
}

async function buildSteps(): Promise<void> {
  await runStep('Building the package (npm run build)', ['node_modules/tsx/dist/cli.mjs', 'scripts/build.ts'])
  await mkdir(join(root, 'demo/public'), { recursive: true })
  await runStep('Copying the service worker and the node worker into demo/public (sluice init)', ['bin/sluice.mjs', 'init', 'demo/public'])
  await runStep('Building the page (vite build)', ['node_modules/vite/bin/vite.js', 'build', '--config', 'demo/vite.config.ts'])
}

type Devnet = { child: ChildProcess; ready: Promise<DevnetSummary>; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }

/**
 * `sluice devnet --json`: resolves `ready` with its one line. Its log (stderr: each step as it starts, and any problem
 * once it runs) is shown as it comes, each line after `devnet: `, so a slow start says what it waits for.
 */
function startDevnet(rpcPort: number): Devnet {
  const args = [
    '--nodes',
    '2',
    '--channels',
    '--monitoring',
    '--pathfinding',
    '--transport',
    'libp2p',
    '--block-time',
    String(BLOCK_TIME),
    '--json',
    '--port-base',
    '0',
    '--rpc-port',
    String(rpcPort),
  ]
  const child = startChild(['bin/sluice.mjs', 'devnet', ...args])
  let out = ''
  let err = ''
  let isReady = false
  child.stderr!.on('data', (c: Buffer) => {
    err += c
    if (!stopping) process.stderr.write(c.toString().replace(/^(?=.)/gm, 'devnet: '))
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('close', (code, signal) => done({ code, signal })))
  const ready = new Promise<DevnetSummary>((done, fail) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line === undefined || isReady) return
      isReady = true
      done(JSON.parse(line) as DevnetSummary)
    })
    void exited.then(({ code, signal }) => {
      if (isReady) return
      // Its own one-line error (sluice devnet: port N is already in use ...) says it best; the rest was shown as it came.
      const lastLine = err.trimEnd().split('\n').at(-1) ?? ''
      if (code === 2 && lastLine.startsWith('sluice devnet: ')) fail(new DemoError(lastLine.slice('sluice devnet: '.length), 2))
      else fail(new DemoError(`the network did not start (sluice devnet: ${signal ?? `exit code ${code}`}; its log is above, after devnet:)`, 1))
    })
  })
  return { child, ready, exited }
}

// --- The page's server ---

function listen(server: Server, port: number): Promise<number> {
  return new Promise((done, fail) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') fail(new DemoError(`port ${port} is in use; choose another with --port`, 2))
      else fail(new DemoError(`cannot serve on 127.0.0.1:${port}: ${e.message}`, 2))
    })
    server.listen(port, '127.0.0.1', () => {
      const address = server.address()
      done(typeof address === 'object' && address ? address.port : port)
    })
  })
}

// --- The demo ---

/** Writes what the page reads, /demo.json and the deployment file it names; resolves to them by path, and the config. */
async function writeConfig(devnet: DevnetSummary): Promise<{ config: DemoConfig; files: Map<string, string> }> {
  const deploymentText = await readFile(devnet.deployment, 'utf8')
  const { chainId } = JSON.parse(deploymentText) as { chainId: number }
  if (!devnet.relay) throw new DemoError('sluice devnet gave no relay (it should with --transport libp2p)', 1)
  if (!devnet.monitor) throw new DemoError('sluice devnet gave no monitoring service (it should with --monitoring)', 1)
  const config: DemoConfig = {
    rpc: devnet.rpcUrl,
    deployment: `/deployments/${chainId}.json`,
    chainId,
    relay: [devnet.relay],
    tokens: devnet.tokens,
    peers: devnet.nodes.map((n, i) => ({ name: `Peer ${i + 1}`, address: n.address, api: n.api, via: `/peers/${i + 1}/api/v1` })),
    blockTime: BLOCK_TIME,
    backup: devnet.backup.api,
    monitor: { ...devnet.monitor, via: '/monitor/api/v1' },
    ...(devnet.pathfinding ? { pathfinding: devnet.pathfinding } : {}),
  }
  const configText = `${JSON.stringify(config, null, 2)}\n`
  await mkdir(join(distDir, 'deployments'), { recursive: true })
  await writeFile(join(distDir, 'deployments', `${chainId}.json`), deploymentText)
  await writeFile(join(distDir, 'demo.json'), configText)
  const files = new Map([
    ['/demo.json', configText],
    [config.deployment, deploymentText],
  ])
  return { config, files }
}

function printSummary(url: string, config: DemoConfig): void {
  console.log('')
  console.log(`Demo: ${url}`)
  console.log('')
  console.log(`Chain: ${config.rpc} (anvil, chain id ${config.chainId}, a block every ${config.blockTime} s)`)
  console.log(`Relay: ${config.relay.join(', ')}`)
  console.log(`Backup server: ${config.backup}`)
  console.log(`Monitoring service: ${config.monitor.address}, REST API ${config.monitor.api} (the page reaches it at ${config.monitor.via})`)
  if (config.pathfinding) console.log(`Pathfinding service: ${config.pathfinding.address}, ${config.pathfinding.url} (the page's node asks it for routes)`)
  console.log('')
  console.log(
    formatTable(
      ['Peer', 'Address', 'REST API', 'From the page'],
      config.peers.map((p) => [p.name, p.address, p.api, p.via]),
    ),
  )
  console.log('')
  console.log(formatTable(['Token', 'Address'], Object.entries(config.tokens)))
  console.log('')
  console.log('Press Ctrl-C to stop.')
}

async function main(argv: string[]): Promise<number> {
  const flags = parseFlags(argv)
  if (flags.help) {
    console.log(usage)
    return 0
  }
  const signal = nextSignal(['SIGINT', 'SIGTERM', 'SIGHUP'])
  let ownFiles: Map<string, string> | undefined
  let targets: ProxyTargets | undefined
  const server = staticServer(
    distDir,
    () => ownFiles,
    (req, res) => proxy(req, res, targets),
  )
  let devnet: Devnet | undefined
  const stopAll = async () => {
    stopping = true
    const builds = [...children].filter((c) => c !== devnet?.child)
    await Promise.all([
      ...builds.map((c) => stopChild(c, { group: true, graceMs: 5_000 })),
      ...(devnet ? [stopChild(devnet.child, { group: false, graceMs: 20_000 })] : []),
      new Promise((done) => {
        server.close(done)
        server.closeAllConnections()
      }),
    ])
  }
  try {
    const setUp = async () => {
      // The port first: a port in use fails before anything is built or started.
      const port = await listen(server, flags.port)
      console.log(
        `Starting the network: anvil (a block every ${BLOCK_TIME} s), a libp2p relay, two peers with a TTT channel, a monitoring service, a pathfinding service, a backup server (sluice devnet)...`,
      )
      const started = performance.now()
      devnet = startDevnet(flags.rpcPort)
      const network = devnet.ready.then((summary) => {
        console.log(`  network ready in ${((performance.now() - started) / 1000).toFixed(1)} s`)
        return summary
      })
      const [summary] = await Promise.all([network, buildPage()])
      const { config, files } = await writeConfig(summary)
      targets = { peers: summary.nodes.map((n) => n.api), monitor: config.monitor.api }
      ownFiles = files
      return { url: `http://127.0.0.1:${port}/`, config, devnet }
    }
    const settingUp = setUp()
    // A signal during the set-up stops everything; the set-up then fails on its own, which is no news.
    settingUp.catch(() => {})
    const ready = await Promise.race([settingUp, signal.received])
    if (typeof ready === 'string') {
      console.error(`${ready}: stopping`)
      return 0
    }
    printSummary(ready.url, ready.config)
    const end = await Promise.race([signal.received.then((s) => ({ signal: s })), ready.devnet.exited.then((exit) => ({ exit }))])
    if ('signal' in end) {
      console.error(`${end.signal}: stopping`)
      return 0
    }
    throw new DemoError(`the network (sluice devnet) stopped: ${end.exit.signal ?? `exit code ${end.exit.code}`}; stopping everything`, 1)
  } catch (e) {
    if (!(e instanceof DemoError)) throw e
    console.error(`sluice demo: ${e.message}`)
    return e.exitCode
  } finally {
    await stopAll()
    signal.dispose()
  }
}

let code: number
try {
  code = await main(process.argv.slice(2))
} catch (e) {
  if (!(e instanceof DemoError)) throw e
  console.error(`sluice demo: ${e.message}`)
  code = e.exitCode
}
// exit() rather than exitCode: once everything is stopped there is nothing left to wait for.
process.exit(code)
