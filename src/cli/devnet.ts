import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { keccak256, toHex, type Address, type Hex } from 'viem'
import { answerAsked, formatFlags, integerFlag, parseFlags, positiveNumberFlag, stringFlag, switchFlag, type FlagSpec } from './args.ts'
import { hasCode } from '../errors.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { nextSignal } from './processSignals.ts'
import { CliError } from './cliError.ts'
import type { Command } from './command.ts'
import type { ServedNode } from './servedNode.ts'
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
nodes reach each other. Runs until Ctrl-C.

It logs each step as it starts and ends (the log flags below; with --json, on stderr), then prints a table of the
nodes, tokens and services (with --json, one JSON object; with --log-json and no --json, a log record holding them).

Flags:
${formatFlags(devnetFlags)}`

/** What each node gets: 1000 tokens of 18 decimals of TTT and TT2, and 100 service tokens in the UserDeposit. */
const TOKENS_PER_NODE = 1000n * 10n ** 18n
const SERVICE_DEPOSIT = 100n * 10n ** 18n
/** Each side's deposit in the --channels line. */
const CHANNEL_DEPOSIT = 100n * 10n ** 18n
/** ETH for the monitoring service's transactions (registration, monitor, claimReward). */
const MONITOR_ETH = 100n * 10n ** 18n

export type DevnetSummary = {
  rpcUrl: string
  deployment: string
  tokens: Record<string, Address>
  nodes: { address: Address; api: string }[]
  /** With --transport libp2p only: the multiaddr of the relay the nodes use (other nodes can use it too). */
  relay?: string
  /** The backup server (`sluice backup-server`): its API's base URL, http://127.0.0.1:PORT/backup/v1. */
  backup: { api: string }
  /** With --monitoring only: the monitoring service's address and REST API. */
  monitor?: { address: Address; api: string }
}

/** How long a libp2p devnet waits, once the nodes run, for each to have seen every other (presence). */
const PRESENCE_WAIT_MS = 10_000

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, devnetFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  // With --json, stdout carries the one line only: every log line goes to stderr.
  const log = loggerFromFlags(flags, { stderrOnly: flags.json })
  const [
    { anvilKeys, startAnvil },
    { deployContracts },
    { deploymentPath, writeDeployment },
    { createDevnetClient },
    chain,
    { createNode },
    { openChannel },
    { openLevelStorage },
    { openMemoryStorage },
    { createBroadcastChannelTransport },
    { serveNode, describeError },
    { version },
    { serveBackups },
    monitoring,
  ] = await Promise.all([
    import('../devnet/anvil.ts'),
    import('../devnet/deploy.ts'),
    import('../devnet/deploymentFile.ts'),
    import('../devnet/devnetClient.ts'),
    import('../chain/index.ts'),
    import('../node/createNode.ts'),
    import('../node/actions/channels.ts'),
    import('../storage/levelStorage.ts'),
    import('../storage/memoryStorage.ts'),
    import('../transport/broadcastChannelTransport.ts'),
    import('./servedNode.ts'),
    import('../version.ts'),
    import('./backupServer.ts'),
    flags.monitoring ? Promise.all([import('../monitor/service.ts'), import('./servedMonitor.ts')]) : undefined,
  ])
  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const ownDir = flags.dataDir === undefined
  const dataDir = flags.dataDir ? resolve(flags.dataDir) : await mkdtemp(join(tmpdir(), 'sluice-devnet-'))
  let anvil: Awaited<ReturnType<typeof startAnvil>> | undefined
  let relay: import('../transport/libp2p/relay.ts').Relay | undefined
  let backups: import('./backupServer.ts').ServedBackups | undefined
  const served: ServedNode[] = []
  let monitor: { service: import('../monitor/service.ts').MonitoringService; api?: import('./servedMonitor.ts').ServedMonitorApi } | undefined
  const stopAll = async () => {
    await monitor?.api?.server.close(1_000)
    await monitor?.service.stop().catch(() => {})
    await Promise.all(served.map((s) => s.stop(1_000).catch(() => {})))
    await backups?.close(1_000).catch(() => {})
    await relay?.stop().catch(() => {})
    await anvil?.stop()
    if (ownDir) await rm(dataDir, { recursive: true, force: true })
  }
  try {
    const setUp = async (): Promise<DevnetSummary> => {
      try {
        backups = await serveBackups({
          dataDir: join(dataDir, 'backup'),
          host: '127.0.0.1',
          port: flags.backupPort,
          onInternalError: (error) => log.error('backup server: internal error (answered 500)', { error }),
        })
      } catch (e) {
        if (hasCode(e, 'API_PORT_IN_USE')) throw new CliError(`port ${flags.backupPort} is already in use (choose another with --backup-port, or 0)`, 2)
        throw e
      }
      log.info('backup server at {url}; starting anvil', { url: backups.url })
      try {
        anvil = await startAnvil({ port: flags.rpcPort, ...(flags.blockTime ? { blockTime: flags.blockTime } : {}) })
      } catch (e) {
        if (hasCode(e, 'ANVIL_PORT_IN_USE')) throw new CliError(`port ${flags.rpcPort} is already in use (choose another with --rpc-port, or 0)`, 2)
        throw e
      }
      const rpcUrl = anvil.rpcUrl
      log.info('anvil at {rpcUrl}; deploying the contracts', { rpcUrl })
      const deployment = await deployContracts(createDevnetClient({ rpcUrl, privateKey: anvilKeys[0] }), { rpcUrl })
      const path = deploymentPath(join(dataDir, 'deployments'), deployment.chainId)
      await writeDeployment(path, deployment)
      log.info('contracts deployed on chain {chainId}; deployment file {deployment}', { chainId: deployment.chainId, deployment: path })
      log.info('registering the tokens {tokens}; funding {accounts} accounts', { tokens: Object.keys(deployment.tokens), accounts: flags.nodes })

      // The deployer registers the tokens and funds every node, one transaction after the other.
      const deployer = await chain.createChainClient({ rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
      const queue = chain.createTransactionQueue(deployer)
      const registry = deployment.contracts.TokenNetworkRegistry.address
      const tokenNetworks: Record<string, Address> = {}
      for (const [symbol, token] of Object.entries(deployment.tokens))
        tokenNetworks[symbol] = (await chain.registerToken(deployer, queue, { registry, token })).tokenNetwork
      const keys = anvilKeys.slice(1, 1 + flags.nodes) as Hex[]
      const { privateKeyToAddress } = await import('viem/accounts')
      await chain.mintTokens(deployer, queue, { token: deployment.serviceToken, amount: SERVICE_DEPOSIT * BigInt(keys.length) })
      for (const key of keys) {
        const to = privateKeyToAddress(key)
        for (const token of Object.values(deployment.tokens)) await chain.mintTokens(deployer, queue, { token, amount: TOKENS_PER_NODE, to })
        await chain.depositToUserDeposit(deployer, queue, {
          userDeposit: deployment.contracts.UserDeposit.address,
          totalDeposit: SERVICE_DEPOSIT,
          beneficiary: to,
        })
      }
      log.info('tokens registered; {accounts} accounts funded', { accounts: keys.length, tokenNetworks })

      const channelName = `sluice-devnet-${process.pid}-${Date.now()}`
      let libp2p:
        | {
            relays: string[]
            create: typeof import('../transport/libp2p/libp2pTransport.ts').createLibp2pTransport
            transports: import('../transport/libp2p/libp2pTransport.ts').Libp2pTransport[]
          }
        | undefined
      if (flags.transport === 'libp2p') {
        // relay.ts loads the Node 20 polyfills (nodePolyfills.ts) before libp2p.
        const { startRelay } = await import('../transport/libp2p/relay.ts')
        const { createLibp2pTransport } = await import('../transport/libp2p/libp2pTransport.ts')
        log.info('starting a libp2p relay')
        relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
        libp2p = { relays: relay.multiaddrs, create: createLibp2pTransport, transports: [] }
        log.info('libp2p relay at {relay}', { relay: relay.multiaddrs })
      }
      log.info('starting {nodes} nodes ({storage} storage, {transport})', { nodes: keys.length, storage: flags.storage, transport: flags.transport })
      await mkdir(join(dataDir, 'nodes'), { recursive: true })
      await (await import('./nativeSecp256k1.ts')).useNativeSecp256k1()
      for (const [i, key] of keys.entries()) {
        const node = await createNode({
          rpc: rpcUrl,
          deployment,
          key,
          version,
          storage: (identity) => (flags.storage === 'memory' ? openMemoryStorage(identity) : openLevelStorage(identity, { dataDir: join(dataDir, 'nodes') })),
          transport: ({ address }) => {
            if (!libp2p) return createBroadcastChannelTransport({ address, channelName })
            const transport = libp2p.create({ privateKey: key, relays: libp2p.relays, announceIntervalMs: 5_000 })
            libp2p.transports.push(transport)
            return transport
          },
          confirmations: 0,
          pollingInterval: 100,
          defaultRevealTimeout: 10,
          defaultSettleTimeout: 40,
          backoff: { initialMs: 200, maxMs: 2_000 },
        })
        served.push(await serveNode({ node, version, host: '127.0.0.1', port: flags.portBase === 0 ? 0 : flags.portBase + i, environment: 'development' }))
      }
      for (const [i, s] of served.entries()) log.info('node {index} {address}: REST API {url}', { index: i, address: s.node.address, url: s.apiUrl })
      log.info('waiting for the nodes to sync with the chain')
      await Promise.all(served.map((s) => s.run()))
      const failed = served.find((s) => s.node.status.status !== 'ready')
      if (failed) throw new CliError(`node ${failed.node.address} did not start`, 1)
      log.info('nodes ready: synced to block {syncedBlock}', { syncedBlock: served[0]!.node.status.syncedBlock })
      if (libp2p) {
        // Presence takes a gossipsub heartbeat or two: wait until every node knows every other, so that the first
        // payment goes out at once (if one is slow, its messages still go out when it is seen: delivery retries).
        const others = libp2p.transports.length - 1
        if (others > 0) log.info('waiting for the nodes to see each other through the relay')
        const deadline = Date.now() + PRESENCE_WAIT_MS
        while (libp2p.transports.some((t) => t.stats().knownPeers < others) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
        const known = Math.min(...libp2p.transports.map((t) => t.stats().knownPeers))
        if (known < others)
          log.warn('libp2p: not every node has seen every other yet (after {seconds} s); messages go out once they have', { seconds: PRESENCE_WAIT_MS / 1000 })
      }

      if (flags.channels) {
        log.info('opening the channels {line} (TTT)', { line: served.map((_, i) => i).join('-') })
        const token = deployment.tokens.TTT!
        for (let i = 0; i + 1 < served.length; i++) {
          const [a, b] = [served[i]!.node.client, served[i + 1]!.node.client]
          const { channel } = await openChannel(a, { token, partner: b.address, totalDeposit: CHANNEL_DEPOSIT })
          await b.waitForBlock(channel.openedBlock)
          await openChannel(b, { token, partner: a.address, totalDeposit: CHANNEL_DEPOSIT })
        }
        const head = await deployer.publicClient.getBlockNumber()
        await Promise.all(served.map((s) => s.node.client.waitForBlock(head)))
        log.info('channels open: {line} (TTT, {deposit} on each side)', { line: served.map((_, i) => i).join('-'), deposit: CHANNEL_DEPOSIT })
      }
      if (monitoring) {
        const [{ createMonitoringService }, { serveMonitorApi }] = monitoring
        log.info('starting the monitoring service: funding it, registering it, its first sync')
        // A key of its own, the same every run: anvil's dev keys are the nodes'.
        const key = keccak256(toHex('sluice devnet monitoring service'))
        const address = privateKeyToAddress(key)
        await queue.send({ to: address, data: '0x', value: MONITOR_ETH, description: `fund the monitoring service ${address}` })
        const { price } = await chain.readRegistrationPrice(deployer, { serviceRegistry: deployment.contracts.ServiceRegistry.address })
        await chain.mintTokens(deployer, queue, { token: deployment.serviceToken, amount: price, to: address })
        const transport = libp2p?.create({ privateKey: key, relays: libp2p.relays, announceIntervalMs: 5_000 })
        const service = await createMonitoringService({
          rpc: rpcUrl,
          deployment,
          key,
          dataDir: join(dataDir, 'monitor'),
          transport: () => transport ?? createBroadcastChannelTransport({ address, channelName }),
          confirmations: 0,
          pollingInterval: 100,
          log: (line, level) => log[level](`monitor: ${line}`),
        })
        monitor = { service }
        monitor.api = await serveMonitorApi({
          service,
          host: '127.0.0.1',
          port: flags.portBase === 0 ? 0 : flags.portBase + keys.length,
          peerId: transport?.peerId,
        })
        await service.start({ url: monitor.api.server.url })
        log.info('monitoring service {address}, registered; REST API {url}', { address, url: monitor.api.apiUrl })
      }
      return {
        rpcUrl,
        deployment: path,
        tokens: deployment.tokens,
        nodes: served.map((s) => ({ address: s.node.address, api: s.apiUrl })),
        ...(relay ? { relay: relay.multiaddrs[0]! } : {}),
        backup: { api: backups.url },
        ...(monitor?.api ? { monitor: { address: monitor.service.address, api: monitor.api.apiUrl } } : {}),
      }
    }

    const settingUp = setUp()
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
      console.log(`Deployment file: ${ready.deployment}`)
      console.log('')
      console.log('Press Ctrl-C to stop.')
    }

    // One node's POST /shutdown stops that node only; a bug (internal error) or anvil's end stops everything.
    const problems = new Promise<string>((resolveProblem) => {
      for (const s of served) {
        void s.stopRequested.then(async (request) => {
          if (request.reason === 'shutdown') {
            log.info('node {address}: POST /shutdown, stopping it', { address: s.node.address })
            await s.stop()
            return
          }
          resolveProblem(`node ${s.node.address}: ${request.reason}: ${describeError(request.error)}`)
        })
      }
      anvil!.process.once('exit', (code, sig) => resolveProblem(`anvil exited (${sig ?? `exit code ${code}`})`))
      void monitor?.service.failed.then((error) => resolveProblem(`the monitoring service failed: ${describeError(error)}`))
      void monitor?.api?.internalError.then((error) => resolveProblem(`the monitoring service's API: internal error: ${describeError(error)}`))
    })
    const end = await Promise.race([signal.received.then((s) => ({ signal: s })), problems.then((problem) => ({ problem }))])
    if ('signal' in end) {
      log.info('{signal}: stopping', { signal: end.signal })
      return 0
    }
    log.error('{problem}; stopping everything', { problem: end.problem })
    return 1
  } finally {
    await stopAll()
    signal.dispose()
  }
}

export const devnetCommand: Command = { name: 'devnet', usage, run }
