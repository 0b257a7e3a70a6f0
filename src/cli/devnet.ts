import { answerAsked, formatFlags, integerFlag, parseFlags, positiveNumberFlag, stringFlag, switchFlag, type FlagSpec } from './args.ts'
import { hasCode } from '../errors.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { nextSignal } from './processSignals.ts'
import { CliError } from './cliError.ts'
import type { Command } from './command.ts'
import { formatTable } from './table.ts'

/** anvil's dev keys: #0 deploys and funds, #1.. are the nodes. */
const MAX_NODES = 9

export const devnetFlags = {
  nodes: integerFlag({ description: 'how many nodes (anvil dev keys 1..N)', valueName: 'N', min: 1, max: MAX_NODES, default: 3 }),
  channels: switchFlag({ description: 'open a line of TTT channels 0-1, 1-2, ..., funded on both sides' }),
  json: switchFlag({ description: 'print one line of JSON once every node is ready, and nothing else on stdout' }),
  portBase: integerFlag({
    description: 'REST API of node i on port PORT+i (127.0.0.1); 0 gives each a free port',
    valueName: 'PORT',
    min: 0,
    max: 65535 - MAX_NODES,
    default: 5001,
  }),
  rpcPort: integerFlag({ description: "anvil's JSON-RPC port; 0 picks a free one", valueName: 'PORT', min: 0, max: 65535, default: 0 }),
  backupPort: integerFlag({
    description: 'port of the backup server (127.0.0.1, as sluice backup-server); 0 picks a free one',
    valueName: 'PORT',
    min: 0,
    max: 65535,
    default: 0,
  }),
  blockTime: positiveNumberFlag({ description: 'mine a block every SECONDS (default: one block per transaction)', valueName: 'SECONDS' }),
  storage: {
    description: 'where the nodes keep their state: level (LevelDB files) or memory',
    valueName: 'KIND',
    expected: 'level or memory',
    parse: (raw: string) => (raw === 'level' || raw === 'memory' ? raw : undefined),
    default: 'level',
  } as FlagSpec<'level' | 'memory', true>,
  dataDir: stringFlag({ description: 'where to write the deployment file and the stores (default: a temporary directory, removed at exit)', valueName: 'DIR' }),
  monitoring: switchFlag({
    description: "also run a monitoring service (sluice monitor) on the nodes' transport, registered and funded, its REST API on the port after the nodes'",
  }),
  pathfinding: switchFlag({
    description:
      "also run a pathfinding service (sluice pathfinding), free, on the nodes' transport, registered and funded, its REST API on the port after the monitoring service's; the nodes tell it of their channels",
  }),
  transport: {
    description: 'how the nodes talk: broadcast (a BroadcastChannel in this process) or libp2p (through a relay this command starts on 127.0.0.1)',
    valueName: 'NAME',
    expected: 'broadcast or libp2p',
    parse: (raw: string) => (raw === 'broadcast' || raw === 'libp2p' ? raw : undefined),
    default: 'broadcast',
  } as FlagSpec<'broadcast' | 'libp2p', true>,
  ...logFlags,
}

const usage = `Usage: sluice devnet [flags]

One process with a whole network for development: anvil with the contracts deployed, test tokens TTT and TT2
registered, and N nodes (anvil dev keys 1..N) funded with ETH, 1000 TTT, 1000 TT2 and 100 service tokens in
the UserDeposit, talking over a BroadcastChannel (or, with --transport libp2p, over libp2p through a relay it
starts on 127.0.0.1, as nodes in separate processes do), each serving its REST API on 127.0.0.1, and a backup
server for the nodes' sealed copies (as sluice backup-server). With --monitoring, a monitoring service too
(docs/decisions/0031): funded with ETH and service tokens, registered in the ServiceRegistry, reached the way the
nodes reach each other. With --pathfinding, a pathfinding service (docs/decisions/0072, 0073), free, registered
likewise, which the nodes tell of their channels (they route locally themselves). Runs until Ctrl-C.

It logs each step as it starts and ends (the log flags below; with --json, on stderr), then prints a table of the
nodes, tokens and services (with --json, one JSON object; with --log-json and no --json, a log record holding them).

Flags:
${formatFlags(devnetFlags)}`

export type { DevnetSummary } from '../devnet/devnet.ts'

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, devnetFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  // With --json, stdout carries the one line only: every log line goes to stderr.
  const log = loggerFromFlags(flags, { stderrOnly: flags.json })
  const { createDevnet } = await import('../devnet/devnet.ts')
  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const devnet = createDevnet(flags, log)
  try {
    const settingUp = devnet.start().catch((e: unknown) => {
      // The flag that chose the port, in the words of the other commands.
      if (hasCode(e, 'DEVNET_PORT_IN_USE')) {
        const { part, port } = e as { part: string; port: number }
        throw new CliError(`port ${port} is already in use (choose another with ${part === 'anvil' ? '--rpc-port' : '--backup-port'}, or 0)`, 2)
      }
      throw e
    })
    // A Ctrl-C during the set-up stops everything; the set-up then fails on its own, which is no news.
    settingUp.catch(() => {})
    const ready = await Promise.race([settingUp, signal.received.then((s) => s)])
    if (typeof ready === 'string') {
      log.info('{signal}: stopping', { signal: ready })
      return 0
    }
    // The summary is the command's result, not a log record: one JSON line, or a table for a person.
    if (flags.json) console.log(JSON.stringify(ready))
    else if (flags.logJson) log.info('Ready: {count} nodes', { count: ready.nodes.length, ...ready })
    else {
      console.log(
        formatTable(
          ['Node', 'Address', 'REST API'],
          ready.nodes.map((n, i) => [String(i), n.address, n.api]),
        ),
      )
      console.log('')
      console.log(formatTable(['Token', 'Address'], Object.entries(ready.tokens)))
      console.log('')
      console.log(`RPC URL: ${ready.rpcUrl}`)
      if (ready.relay) console.log(`libp2p relay: ${ready.relay}`)
      console.log(`Backup server: ${ready.backup.api}`)
      if (ready.monitor) console.log(`Monitoring service: ${ready.monitor.address}, REST API ${ready.monitor.api}`)
      if (ready.pathfinding) console.log(`Pathfinding service: ${ready.pathfinding.address}, ${ready.pathfinding.url}`)
      console.log(`Deployment file: ${ready.deployment}`)
      console.log('')
      console.log('Press Ctrl-C to stop.')
    }

    // One node's POST /shutdown stops that node only; a bug (internal error) or anvil's end stops everything.
    const end = await Promise.race([signal.received.then((s) => ({ signal: s })), devnet.problem().then((problem) => ({ problem }))])
    if ('signal' in end) {
      log.info('{signal}: stopping', { signal: end.signal })
      return 0
    }
    log.error('{problem}; stopping everything', { problem: end.problem })
    return 1
  } finally {
    await devnet.stop()
    signal.dispose()
  }
}

export const devnetCommand: Command = { name: 'devnet', usage, run }
