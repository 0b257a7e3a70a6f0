import { resolve } from 'node:path'
import { hasCode } from '../errors.ts'
import { answerAsked, formatFlags, parseFlags, stringFlag, type FlagSpec } from './args.ts'
import type { Command } from './command.ts'
import { loggerFromFlags } from './logFlags.ts'
import { startMetrics } from './metricsFlags.ts'
import { nextSignal } from './processSignals.ts'
import { serviceAccountFlags, serviceChainFlags, serviceStoreOf, serviceUrlFlag } from './serviceFlags.ts'
import { checkRelays, libp2pLog, loadPrivateKey, MissingFlagError, parseHostPort, serveFlags, startupStep } from './serve.ts'

const amount = (raw: string) => (/^(0|[1-9]\d*)$/.test(raw) && BigInt(raw) < 2n ** 256n ? BigInt(raw) : undefined)
const decimalAboveZero = (raw: string) => (/^(\d+)(\.\d+)?$/.test(raw) && /[1-9]/.test(raw) && raw.length <= 40 ? raw : undefined)

export const pathfindingFlags = {
  ...serviceAccountFlags,
  relay: {
    ...serveFlags.relay,
    description:
      'a libp2p relay (`sluice relay` prints its multiaddrs) where nodes send the service their capacity and fee updates, and where it sees who is online; repeat or separate with commas. At least one',
  } as FlagSpec<string[], false>,
  api: {
    ...serveFlags.api,
    description: 'where the REST API listens: a public API (any address, any web page may call it)',
    default: '127.0.0.1:6000',
  } as FlagSpec<string, true>,
  url: serviceUrlFlag('the URL published in the ServiceRegistry, where nodes find the API (default: the REST API URL)'),
  serviceFee: {
    description: "what a routes request costs, in service tokens (smallest unit), paid by IOU from the sender's UserDeposit; 0: free, no IOU asked",
    valueName: 'AMOUNT',
    expected: 'a decimal integer',
    parse: amount,
    default: 0n,
  } as FlagSpec<bigint, true>,
  serviceTokenPrice: {
    description: "the service token's price in ETH per whole token, to weigh a claim's gas against what it pays (Raiden's default)",
    valueName: 'ETH',
    expected: 'a decimal above 0, such as 0.0025',
    parse: decimalAboveZero,
    default: '0.0025',
  } as FlagSpec<string, true>,
  operator: stringFlag({ description: 'who runs the service, for GET /api/v1/info', valueName: 'NAME' }),
  infoMessage: stringFlag({ description: "a message to the service's users, for GET /api/v1/info", valueName: 'TEXT' }),
  ...serviceChainFlags,
}

const usage = `Usage: sluice pathfinding --rpc URL --deployment FILE (--key HEX | (--keystore FILE | --keystore-path DIR [--address ADDRESS]) [--password-file FILE]) (--data-dir DIR | --database URL) --relay MULTIADDR [--relay MULTIADDR ...] [--api HOST:PORT] [--service-fee AMOUNT] [flags]

Runs a pathfinding service (docs/decisions/0072): it answers Raiden's PFS API, so that Sluice nodes, Raiden nodes and
light clients ask it for routes:

  POST /api/v1/<token network>/paths       from, to, value, max_paths, iou, diversity_penalty, fee_penalty:
                                           up to max_paths routes with their estimated fee and address_metadata,
                                           and a feedback_token
  GET  /api/v1/info                        its price, chain, contracts, address
  GET  /api/v1/<token network>/payment/iou the sender's last IOU (sender, receiver, timestamp, signature)
  POST /api/v1/<token network>/feedback    whether a route it gave worked (token, success, path)
  GET  /api/v1/address/<address>/metadata  how to reach a node that is online
  GET  /api/v1/status                      what it holds, refused and claimed (ours)

Errors answer with raiden-services' error codes ({"errors", "error_code", "error_details"}).

It keeps each token network's channels from the chain's events (--confirmations deep), and what each node announces
of its channels, signed (PFSCapacityUpdate, PFSFeeUpdate), sent to the service's address over libp2p through the
--relay (its Ethereum key is its libp2p identity); it acknowledges each update it holds. A node is online while a relay
keeps its presence record. With --service-fee, each request carries an IOU from the sender's UserDeposit, and the
service claims the IOUs through OneToN near their end (or at once when the sender plans to withdraw) when the claim
is worth its gas at --service-token-price. It registers itself in the ServiceRegistry at start with --url (its
account needs ETH and the registry's price in service tokens).

Everything it holds is in --data-dir (LevelDB): a restart, after kill -9 too, keeps the updates and the IOUs.

With --database (PostgreSQL) instead of --data-dir, several instances share one store (docs/decisions/0077): each
answers the API (routes from the channels and updates in the database, IOUs checked and stored one at a time across
instances, feedback, and who is online as the leader last wrote it); the one holding the lease registers, follows the
chain, takes updates over the relay and claims the IOUs; when it stops or dies, another takes over within
--lease-seconds. A leader that loses the lease stops (exit code 1): run each instance under a supervisor.
Ctrl-C or SIGTERM stop it (exit 0); a failed store stops it with exit code 1.

Raiden's names work too: --eth-rpc-endpoint, --datadir, --api-address, and --keystore-path with --address, --log-json,
and --log-config's root level.

Flags:
${formatFlags(pathfindingFlags)}`

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, pathfindingFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  const log = loggerFromFlags(flags)
  if (!flags.rpc) throw new MissingFlagError('--rpc')
  if (!flags.deployment) throw new MissingFlagError('--deployment')
  const { store, place } = await serviceStoreOf(flags)
  if (!flags.relay || flags.relay.length === 0) throw new MissingFlagError('--relay')
  const rpc = flags.rpc
  const relays = flags.relay
  await checkRelays(relays)
  const api = parseHostPort(flags.api)!
  const privateKey = await loadPrivateKey(flags)

  await import('../transport/libp2p/nodePolyfills.ts')
  const [
    { readDeployment },
    { createPathfindingService },
    { servePathfindingApi },
    { loadNativeSecp256k1 },
    { explainServiceStart, runService },
    { createLibp2pTransport },
    { parseDecimal },
    { serviceMediationFee },
  ] = await Promise.all([
    import('../devnet/deploymentFile.ts'),
    import('../pathfinding/service/service.ts'),
    import('./servedPathfinding.ts'),
    import('./nativeSecp256k1.ts'),
    import('./serviceRun.ts'),
    import('../transport/libp2p/libp2pTransport.ts'),
    import('../pathfinding/claims.ts'),
    import('../pathfinding/mediationFee.ts'),
  ])
  const deployment = await startupStep(
    () => readDeployment(resolve(flags.deployment!)),
    (e) => (hasCode(e, 'DEPLOYMENT_NOT_FOUND', 'DEPLOYMENT_SYNTAX', 'INVALID_DEPLOYMENT') ? e.message : undefined),
  )

  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const metrics = await startMetrics(flags.metrics, 'pathfinding', log)
  try {
    const observe = metrics && (await import('../metrics/pathfindingMetrics.ts'))
    const chainMetrics = metrics && (await import('../metrics/chainMetrics.ts'))
    // Every request or update recovers its signers: libsecp256k1 does it several times faster than JS.
    const secp256k1 = await loadNativeSecp256k1()
    const libp2p = createLibp2pTransport({ privateKey, relays, log: libp2pLog(log) })
    const service = await startupStep(
      () =>
        createPathfindingService({
          rpc,
          deployment: { ...deployment, rpcUrl: rpc[0]! },
          key: privateKey,
          secp256k1,
          ...store,
          transport: () => libp2p,
          mediationFee: serviceMediationFee,
          serviceFee: flags.serviceFee,
          tokenPrice: parseDecimal(flags.serviceTokenPrice)!,
          confirmations: flags.confirmations,
          ...(flags.maxFeePerGas !== undefined ? { maxFeePerGas: flags.maxFeePerGas } : {}),
          pollingInterval: flags.pollingInterval,
          ...(flags.operator !== undefined ? { operator: flags.operator } : {}),
          ...(flags.infoMessage !== undefined ? { message: flags.infoMessage } : {}),
          log: (line, level) => log[level](line),
          ...(metrics && chainMetrics ? { onRpcFailure: chainMetrics.countRpcFailures(metrics.metrics) } : {}),
        }),
      explainServiceStart('pathfinding service', { rpc, dataDir: place }),
    )
    if (metrics && chainMetrics && observe) {
      chainMetrics.observeServiceChain(metrics.metrics, service, flags.confirmations)
      observe.observePathfinding(metrics.metrics, service)
    }
    return await runService({
      kind: 'pathfinding service',
      service,
      serveApi: () => servePathfindingApi({ service, host: api.host, port: api.port, transportInfo: { peerId: libp2p.peerId, relays } }),
      api: { flag: flags.api, ...api },
      flags: { url: flags.url, confirmations: flags.confirmations, dataDir: place },
      chainId: deployment.chainId,
      signal,
      log,
      sayReady: () => {
        log.info('Transport: libp2p, peer id {peerId}, relay {relays}', { peerId: libp2p.peerId, relays })
        log.info('Service fee {fee}', { fee: flags.serviceFee })
      },
    })
  } finally {
    await metrics?.server.close()
    signal.dispose()
  }
}

export const pathfindingCommand: Command = { name: 'pathfinding', usage, run }
