import { resolve } from 'node:path'
import { hasCode } from '../errors.ts'
import { checkApiExposure } from './apiExposure.ts'
import { answerAsked, formatFlags, parseFlags, type FlagSpec } from './args.ts'
import type { Command } from './command.ts'
import { loggerFromFlags } from './logFlags.ts'
import { startMetrics } from './metricsFlags.ts'
import { nextSignal } from './processSignals.ts'
import { serviceAccountFlags, serviceChainFlags, serviceStoreOf, serviceUrlFlag } from './serviceFlags.ts'
import { checkRelays, libp2pLog, loadPrivateKey, MissingFlagError, parseHostPort, readApiToken, serveFlags, startupStep } from './serve.ts'

export const monitorFlags = {
  ...serviceAccountFlags,
  relay: {
    ...serveFlags.relay,
    description:
      'a libp2p relay (`sluice relay` prints its multiaddrs) where nodes reach the service; repeat or separate with commas. Without one the service takes no new requests',
  } as FlagSpec<string[], false>,
  api: { ...serveFlags.api, default: '127.0.0.1:6001' } as FlagSpec<string, true>,
  apiHost: serveFlags.apiHost,
  rpccorsdomain: serveFlags.rpccorsdomain,
  apiTokenFile: serveFlags.apiTokenFile,
  url: serviceUrlFlag('the URL published in the ServiceRegistry (default: the REST API URL)'),
  minReward: {
    ...serveFlags.minServiceTokenBalance,
    description: 'the smallest reward (service tokens, smallest unit) a request may offer; below it is refused',
    default: 0n,
  } as FlagSpec<bigint, true>,
  ...serviceChainFlags,
}

const usage = `Usage: sluice monitor --rpc URL --deployment FILE (--key HEX | (--keystore FILE | --keystore-path DIR [--address ADDRESS]) [--password-file FILE]) (--data-dir DIR | --database URL) [--relay MULTIADDR ...] [flags]

Runs a monitoring service (docs/decisions/0031-the-monitoring-service.md): it takes RequestMonitoring messages from
nodes over libp2p (through --relay; its Ethereum key is its libp2p identity), checks each field by field and keeps
the newest of each channel and side in LevelDB before it acknowledges it (a signed Delivered). When a requester's
partner closes the channel with an older proof, it calls MonitoringService.monitor inside the contract's window,
and claims its reward from the requester's UserDeposit once the settle window is over. It registers itself in the
ServiceRegistry at start (its account needs ETH and the registry's price in service tokens).

Its REST API (GET /api/v1/status, /channels, /monitor_calls) answers who may call the way \`sluice serve\` does: its
own Host names, no other web site's pages (--rpccorsdomain allows origins), a bearer token with --api-token-file
(needed to listen beyond loopback). Ctrl-C or SIGTERM stop it (exit 0); a failed store stops it with exit code 1.

With --database (PostgreSQL) instead of --data-dir, several instances share one store (docs/decisions/0077): each
answers the API; the one holding the lease registers, follows the chain, takes requests over the relay and calls
monitor and claimReward; when it stops or dies, another takes over within --lease-seconds. A leader that loses
the lease stops (exit code 1): run each instance under a supervisor that starts it again.

Several --rpc are used in order, as \`sluice serve\` uses them (see its --help): the next while one fails.

Raiden's names work too: --eth-rpc-endpoint, --datadir, --api-address, and --keystore-path with --address, --log-json,
and --log-config's root level.

Logs: as \`sluice serve\`'s (one line a record, --log-json for JSON lines; info on stdout, warn and error on stderr),
with the sync's progress at most once a second while the service catches up with the chain.

Flags:
${formatFlags(monitorFlags)}`

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, monitorFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  const log = loggerFromFlags(flags)
  if (!flags.rpc) throw new MissingFlagError('--rpc')
  if (!flags.deployment) throw new MissingFlagError('--deployment')
  const { store, place } = await serviceStoreOf(flags)
  const rpc = flags.rpc
  const relays = flags.relay ?? []
  if (relays.length > 0) await checkRelays(relays)
  const api = parseHostPort(flags.api)!
  const access = {
    hosts: flags.apiHost ?? [],
    corsOrigins: flags.rpccorsdomain ?? [],
    token: flags.apiTokenFile ? await readApiToken(flags.apiTokenFile) : undefined,
  }
  checkApiExposure({ host: api.host, ...access })
  const privateKey = await loadPrivateKey(flags)

  if (relays.length > 0) await import('../transport/libp2p/nodePolyfills.ts')
  const [{ readDeployment }, { createMonitoringService }, { serveMonitorApi }, { loadNativeSecp256k1 }, { explainServiceStart, runService }] =
    await Promise.all([
      import('../devnet/deploymentFile.ts'),
      import('../monitor/service.ts'),
      import('./servedMonitor.ts'),
      import('./nativeSecp256k1.ts'),
      import('./serviceRun.ts'),
    ])
  const { createLibp2pTransport } = relays.length > 0 ? await import('../transport/libp2p/libp2pTransport.ts') : { createLibp2pTransport: undefined }
  const deployment = await startupStep(
    () => readDeployment(resolve(flags.deployment!)),
    (e) => (hasCode(e, 'DEPLOYMENT_NOT_FOUND', 'DEPLOYMENT_SYNTAX', 'INVALID_DEPLOYMENT') ? e.message : undefined),
  )

  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const metrics = await startMetrics(flags.metrics, 'monitor', log)
  try {
    const observe = metrics && (await import('../metrics/monitorMetrics.ts'))
    const chainMetrics = metrics && (await import('../metrics/chainMetrics.ts'))
    // Every request or update recovers its signers: libsecp256k1 does it several times faster than JS.
    const secp256k1 = await loadNativeSecp256k1()
    const libp2p = createLibp2pTransport?.({ privateKey, relays, log: libp2pLog(log) })
    const service = await startupStep(
      () =>
        createMonitoringService({
          rpc,
          deployment: { ...deployment, rpcUrl: rpc[0]! },
          key: privateKey,
          secp256k1,
          ...store,
          transport: libp2p ? () => libp2p : undefined,
          confirmations: flags.confirmations,
          ...(flags.maxFeePerGas !== undefined ? { maxFeePerGas: flags.maxFeePerGas } : {}),
          pollingInterval: flags.pollingInterval,
          minReward: flags.minReward,
          log: (line, level) => log[level](line),
          ...(metrics && chainMetrics ? { onRpcFailure: chainMetrics.countRpcFailures(metrics.metrics) } : {}),
        }),
      explainServiceStart('monitoring service', { rpc, dataDir: place }),
    )
    if (metrics && chainMetrics && observe) {
      chainMetrics.observeServiceChain(metrics.metrics, service, flags.confirmations)
      observe.observeMonitor(metrics.metrics, service)
    }
    return await runService({
      kind: 'monitoring service',
      service,
      serveApi: () => serveMonitorApi({ service, host: api.host, port: api.port, access, peerId: libp2p?.peerId }),
      api: { flag: flags.api, ...api },
      flags: { url: flags.url, confirmations: flags.confirmations, dataDir: place },
      chainId: deployment.chainId,
      signal,
      log,
      sayReady: () => {
        if (libp2p) log.info('Transport: libp2p, peer id {peerId}, relay {relays}', { peerId: libp2p.peerId, relays })
        else log.info('Transport: none (no --relay): no new requests are taken')
      },
    })
  } finally {
    await metrics?.server.close()
    signal.dispose()
  }
}

export const monitorCommand: Command = { name: 'monitor', usage, run }
