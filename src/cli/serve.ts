import type { Lease } from '../storage/postgres/lease.ts'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Hex } from 'viem'
import { answerAsked, formatFlags, integerFlag, InvalidFlagValueError, parseFlags, stringFlag, switchFlag, type FlagSpec, maxFeePerGasFlag } from './args.ts'
import { parseHostRule, parseOriginPattern, type HostRule, type OriginPattern } from '../api/hostsAndOrigins.ts'
import { hasCode } from '../errors.ts'
import { nextSignal } from './processSignals.ts'
import { CliError, UsageError } from './cliError.ts'
import { checkApiExposure } from './apiExposure.ts'
import { findKeystore, parseAddress } from './keystoreDirectory.ts'
import type { ServeAccess } from './servedNode.ts'
import type { PgNodeStore } from '../storage/pgStorage.ts'
import type { Command } from './command.ts'
import { DEFAULT_MONITORING_REWARD } from '../node/nodeConfig.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { metricsFlags, startMetrics } from './metricsFlags.ts'
import { parseHostPort } from './hostPort.ts'
import { feeFlags, feeSettingsOf } from './feeFlags.ts'
import { routingFlags, routingSettingsOf } from './routingFlags.ts'
import { chooseTransport, transports, type DirectSettings } from '../headless/transport.ts'
import { isRpcUrl } from '../chain/rpcUrls.ts'
import { checkDirectAddresses, p2pAnnounceExpected, p2pListenExpected } from './directFlags.ts'

function flagOf<T>(description: string, valueName: string, expected: string, parse: (raw: string) => T | undefined): FlagSpec<T, false> {
  return { description, valueName, expected, parse, default: undefined }
}

/**
 * --database URL and --lease-seconds, as every command with a store on PostgreSQL takes them (`serve`: a hub and its
 * standby, docs/decisions/0076; `monitor`, `pathfinding`, `backup-server`: several instances, 0077).
 */
export function databaseFlags(text: { database: string; lease: string; defaultSeconds: number }) {
  return {
    database: flagOf(
      text.database,
      'URL',
      'a postgres:// or postgresql:// URL',
      // As src/storage/postgres/pool.ts's parseDatabaseUrl, without loading the PostgreSQL client for every --help.
      (raw) => parseUrl(raw, ['postgres:', 'postgresql:']),
    ),
    leaseSeconds: {
      description: text.lease,
      valueName: 'SECONDS',
      expected: 'a number of seconds from 0.3 to 3600',
      parse: (raw: string) => {
        if (!/^(\d+\.?\d*|\.\d+)$/.test(raw)) return undefined
        const n = Number(raw)
        return n >= 0.3 && n <= 3600 ? n : undefined
      },
      default: text.defaultSeconds,
    } as FlagSpec<number, true>,
  }
}

/** Raiden's names for our flags, accepted beside ours so that a Raiden node's command line carries over. */
export const raidenNames = {
  rpc: ['--eth-rpc-endpoint'],
  dataDir: ['--datadir'],
  api: ['--api-address'],
  environment: ['--environment-type'],
} as const satisfies Record<string, FlagSpec['aliases']>

export function parseUrl(raw: string, protocols: readonly string[]): string | undefined {
  try {
    const url = new URL(raw)
    return protocols.includes(url.protocol) && url.hostname ? raw : undefined
  } catch {
    return undefined
  }
}

const choice =
  <const T extends string>(values: readonly T[]) =>
  (raw: string) =>
    (values as readonly string[]).includes(raw) ? (raw as T) : undefined

export { libp2pLog, transports, type TransportName } from '../headless/transport.ts'
// Where it lives now (src/cli/hostPort.ts: --metrics reads it too, without loading this module), for its importers.
export { parseHostPort, type HostPort } from './hostPort.ts'

const relayExpected = 'a WebSockets multiaddr ending in /p2p/<relay peer id>, as `sluice relay` prints it'

/** Multiaddrs, the flag repeated or comma-separated (checked fully later: `checkRelays`, `checkDirectAddresses`). */
function parseMultiaddrs(raw: string): string[] | undefined {
  const values = raw.split(',').map((r) => r.trim())
  return values.every((r) => r.startsWith('/')) ? values : undefined
}

/**
 * Each relay must be what createLibp2pTransport can use: a multiaddr over WebSockets (the only transport a node
 * dials a relay with) ending in the relay's peer id. Loads the multiaddr parser only now, so --help stays fast.
 */
export async function checkRelays(relays: readonly string[]): Promise<void> {
  const [{ multiaddr }, { peerIdFromString }] = await Promise.all([import('@multiformats/multiaddr'), import('@libp2p/peer-id')])
  for (const relay of relays) {
    try {
      const components = multiaddr(relay).getComponents()
      const last = components.at(-1)
      if (!components.some((c) => c.name === 'ws' || c.name === 'wss') || last?.name !== 'p2p' || !last.value) throw new Error('not a relay address')
      peerIdFromString(last.value)
    } catch {
      throw new InvalidFlagValueError('--relay', relay, relayExpected)
    }
  }
}

/** Values of a flag given repeated or comma-separated, each read by `parse`; one bad value refuses them all. */
function listOf<T>(parse: (raw: string) => T | undefined): (raw: string) => T[] | undefined {
  return (raw) => {
    const values = raw.split(',').map((v) => parse(v.trim()))
    return values.every((v) => v !== undefined) ? (values as T[]) : undefined
  }
}

/** An endpoint of the chain: http, https, ws or wss. */
export const parseRpcUrl = (raw: string): string | undefined => (isRpcUrl(raw) ? raw : undefined)

export const serveFlags = {
  rpc: {
    ...flagOf(
      'JSON-RPC endpoint of the chain (http, https, ws or wss); repeat or separate with commas for several, used in that order: the next while one fails, the first again once it answers',
      'URL',
      'an http(s) or ws(s) URL',
      listOf(parseRpcUrl),
    ),
    repeatable: true,
    aliases: raidenNames.rpc,
  } as FlagSpec<string[], false>,
  deployment: stringFlag({ description: 'the deployment file (sluice chain writes deployments/<chainId>.json)', valueName: 'FILE' }),
  key: flagOf('the private key, 32 bytes of hex (or use --keystore)', 'HEX', '32 bytes of hex (64 hex digits, 0x optional)', (raw) =>
    /^(0x)?[0-9a-fA-F]{64}$/.test(raw) ? (`0x${raw.replace(/^0x/, '').toLowerCase()}` as Hex) : undefined,
  ),
  keystore: stringFlag({ description: 'an Ethereum JSON keystore (v3, scrypt or pbkdf2) holding the key', valueName: 'FILE' }),
  keystorePath: stringFlag({
    description: "a directory of keystores, as Raiden's and geth's: the one whose address is --address is used (without --address, its only one)",
    valueName: 'DIR',
  }),
  address: flagOf('the account whose keystore --keystore-path holds', 'ADDRESS', 'an address, 0x and 40 hex digits', parseAddress),
  passwordFile: stringFlag({ description: "a file whose first line is the keystore's password (else it is asked on the terminal)", valueName: 'FILE' }),
  api: {
    ...flagOf('where the REST API listens', 'HOST:PORT', 'HOST:PORT (port 0 picks a free one)', (raw) => (parseHostPort(raw) ? raw : undefined)),
    default: '127.0.0.1:5001',
    aliases: raidenNames.api,
  } as FlagSpec<string, true>,
  apiHost: {
    ...flagOf(
      "another name the API answers to as Host, with the API's port unless one is given; * answers any (needs --api-token-file). Repeat or separate with commas",
      'NAME',
      'a host name, an IP address ([::1] for IPv6), either with :PORT, or *',
      listOf(parseHostRule),
    ),
    repeatable: true,
  } as FlagSpec<HostRule[], false>,
  rpccorsdomain: {
    ...flagOf(
      'origins whose web pages may call the API (CORS), * as a wildcard (http://localhost:*); separate with commas. Default: none',
      'ORIGINS',
      'origins such as https://app.example or http://localhost:*, null, or *',
      listOf(parseOriginPattern),
    ),
    repeatable: true,
  } as FlagSpec<OriginPattern[], false>,
  apiTokenFile: stringFlag({
    description:
      'a file whose first line is a token (16+ characters) every request must carry as Authorization: Bearer <token>; needed to listen beyond loopback',
    valueName: 'FILE',
  }),
  dataDir: stringFlag({ description: "where the node's LevelDB store lives (created if missing)", valueName: 'DIR', aliases: raidenNames.dataDir }),
  ...databaseFlags({
    database:
      "keep the node's store in this PostgreSQL database instead of --data-dir; a second `sluice serve` with the same key and database stands by and takes over when this one dies (docs/decisions/0076)",
    lease:
      "with --database: how long the store's lease lasts without a renewal (renewed every third of it): a standby takes over at most this long after the active node died",
    defaultSeconds: 5,
  }),
  resolverEndpoint: flagOf('http(s) URL asked for the secret of a payment started with only its hash', 'URL', 'an http(s) URL', (raw) =>
    parseUrl(raw, ['http:', 'https:']),
  ),
  backupUrl: flagOf(
    'a backup server (sluice backup-server), http(s)://host:port/backup/v1: sealed copies go there after each change, and an empty --data-dir restores the newest',
    'URL',
    'an http(s) URL',
    (raw) => parseUrl(raw, ['http:', 'https:']),
  ),
  releaseFeedUrl: flagOf('http(s) URL of the release feed {"latest", "security": [...]} behind the version notifications', 'URL', 'an http(s) URL', (raw) =>
    parseUrl(raw, ['http:', 'https:']),
  ),
  minServiceTokenBalance: flagOf(
    'service tokens (smallest unit) the UserDeposit must hold, else the low_service_token notification',
    'AMOUNT',
    'a decimal integer',
    (raw) => (/^(0|[1-9]\d*)$/.test(raw) && BigInt(raw) < 2n ** 256n ? BigInt(raw) : undefined),
  ),
  environment: {
    ...flagOf('production disables token registration and minting (501)', 'NAME', 'development or production', choice(['development', 'production'] as const)),
    default: 'production',
    aliases: raidenNames.environment,
  } as FlagSpec<'development' | 'production', true>,
  confirmations: integerFlag({ description: 'blocks on top of a block before its events count', valueName: 'N', min: 0, max: 1000, default: 5 }),
  maxFeePerGas: maxFeePerGasFlag,
  pollingInterval: integerFlag({ description: 'milliseconds between looks at the chain', valueName: 'MS', min: 10, max: 600_000, default: 1_000 }),
  defaultRevealTimeout: integerFlag({ description: 'reveal timeout of new channels, in blocks', valueName: 'BLOCKS', min: 1, max: 1_000_000, default: 50 }),
  defaultSettleTimeout: integerFlag({
    description: 'settle timeout of channels this node opens, in blocks',
    valueName: 'BLOCKS',
    min: 1,
    max: 10_000_000,
    default: 500,
  }),
  transport: flagOf(
    'how messages reach other nodes: libp2p through --relay, or broadcast to nodes in this process only (default: libp2p with --relay, else broadcast)',
    'NAME',
    transports.join(' or '),
    choice(transports),
  ),
  relay: {
    ...flagOf(
      'a libp2p relay (`sluice relay` prints its multiaddrs); repeat the flag or separate with commas for several',
      'MULTIADDR',
      relayExpected,
      parseMultiaddrs,
    ),
    repeatable: true,
  } as FlagSpec<string[], false>,
  p2pListen: {
    ...flagOf(
      'where the node listens for direct connections from other nodes (WebSockets: /ip4/0.0.0.0/tcp/4001/ws); announced beside its relay addresses, and other nodes dial it first, the relay being the fallback; repeat or separate with commas',
      'MULTIADDR',
      p2pListenExpected,
      parseMultiaddrs,
    ),
    repeatable: true,
  } as FlagSpec<string[], false>,
  p2pAnnounce: {
    ...flagOf(
      'the address other nodes reach --p2p-listen at, announced in its place: a forwarded port of a NAT, or a TLS proxy (/dns4/node.example.com/tcp/443/wss, which pages can dial); repeat or separate with commas',
      'MULTIADDR',
      p2pAnnounceExpected,
      parseMultiaddrs,
    ),
    repeatable: true,
  } as FlagSpec<string[], false>,
  p2pTlsCert: stringFlag({
    description:
      "the certificate --p2p-listen serves WebSockets Secure with (a /wss address: pages served over HTTPS can dial only those), in PEM, the chain after it (certbot's fullchain.pem); with --p2p-tls-key",
    valueName: 'FILE',
  }),
  p2pTlsKey: stringFlag({ description: "the certificate's private key, in PEM, unencrypted (certbot's privkey.pem)", valueName: 'FILE' }),
  p2pAllowPrivate: switchFlag({
    description:
      "dial other nodes' direct addresses on private networks and loopback too (a devnet, a LAN of one's own); refused by default, since any node may announce any address",
  }),
  import: stringFlag({ description: 'restore a state dump (GET /_state/export) into the store before starting', valueName: 'FILE' }),
  enableMonitoring: switchFlag({
    description:
      'ask the monitoring services of the ServiceRegistry to guard the channels while the node is away: a RequestMonitoring for each new balance proof a partner sends, once the UserDeposit covers --monitoring-reward',
  }),
  monitoringReward: {
    ...flagOf(
      'what each monitoring request offers the service that submits it, paid from the UserDeposit, in the smallest unit of the service token',
      'AMOUNT',
      'a decimal integer',
      (raw) => (/^(0|[1-9]\d*)$/.test(raw) && BigInt(raw) < 2n ** 256n ? BigInt(raw) : undefined),
    ),
    default: DEFAULT_MONITORING_REWARD,
  } as FlagSpec<bigint, true>,
  ...feeFlags,
  ...routingFlags,
  ...metricsFlags,
  ...logFlags,
}

const usage = `Usage: sluice serve --rpc URL --deployment FILE (--key HEX | --keystore FILE | --keystore-path DIR [--address ADDRESS]) (--data-dir DIR | --database URL) [flags]

Runs one node with durable storage and serves its REST API (docs/rest-api.md) at http://HOST:PORT/api/v1. The API
answers /status at once and the rest once the node has caught up with the chain. POST /shutdown, Ctrl-C or
SIGTERM stop it; an internal error stops it with exit code 1.

Who may call: the owner's programs on this machine. Against DNS rebinding the API answers only the Hosts
127.0.0.1, localhost, [::1] and the --api address (--api-host adds names); it refuses what other web sites' pages
send (--rpccorsdomain allows origins, with CORS) and takes bodies only as application/json. With --api-token-file
every request needs the token, and listening beyond loopback needs one.

Transport: libp2p reaches nodes in other processes and on other machines, through one or more relays
(\`sluice relay\`, given with --relay): the node's Ethereum key is its libp2p identity, and nodes find each other
by presence announcements on the relays. With --p2p-listen the node also listens for direct connections, which
other nodes dial first (the relay stays the fallback); behind a NAT or a TLS proxy, --p2p-announce gives the address
they reach it at. broadcast (a BroadcastChannel) reaches nodes in the same process only, so a node started with it
has no peers (\`sluice devnet\` runs several in one process).

Endpoints: several --rpc (or --eth-rpc-endpoint) are used in the order given. A call goes to the first that answers;
one that fails (refused, no answer in time, 429, 5xx) is passed over at once and tried again in the background until
it answers, and the first is used again then. Each must serve the deployment's chain, or the node does not start. A
429's Retry-After is honoured; a revert or "nonce too low" is an answer, never retried.

A hub with a hot standby: with --database the node's store is in PostgreSQL, under a lease. A second \`sluice serve\`
with the same key and --database stands by: its /status says \`"role": "standby"\` (every other route 503) until the
active one stops renewing the lease (--lease-seconds), then it takes the store over and serves, with the same
address, channels and history. A node that loses the lease stops at once and exits with code 1: restarted, it stands by.

Raiden's names work too: --eth-rpc-endpoint, --datadir, --api-address, --environment-type, and --keystore-path
with --address (and those that are the same as ours, such as --password-file and --resolver-endpoint, --log-json), and
--log-config's root level. \`sluice --version\` prints the version.

Logs: one line a record, \`HH:MM:SS.mmm LEVEL message key=value\` (--log-json: a JSON object with time, level, msg
and fields); debug and info on stdout, warn and error on stderr. While the node syncs, a line a second at most says
how many blocks are left, how fast they go and about how long it will take.

Flags:
${formatFlags(serveFlags)}`

export class MissingFlagError extends UsageError {
  override name = 'MissingFlagError' as const
  override readonly code = 'MISSING_FLAG' as const
  constructor(flag: string) {
    super(`${flag} is required`)
  }
}

/** A problem with what the flags point at (a file, the chain, the store): one line, exit code 2. */
export class StartupError extends CliError {
  override name = 'StartupError' as const
  override readonly code = 'STARTUP' as const
  constructor(message: string) {
    super(message, 2)
  }
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (e) {
    throw new StartupError(`cannot read the ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

/** RFC 6750's b64token: what may follow `Bearer ` in an Authorization header. */
const B64TOKEN = /^[A-Za-z0-9._~+/-]+=*$/

/** The API token: the first line of `--api-token-file`, trimmed; one too weak to guard funds is refused. */
export async function readApiToken(file: string): Promise<string> {
  const token = (await readText(file, 'API token file')).split(/\r?\n/)[0]!.trim()
  const make = `(make one with: openssl rand -hex 32 > ${file})`
  if (token === '') throw new StartupError(`the API token file ${file} has no token on its first line ${make}`)
  const problem = apiTokenProblem(token)
  if (problem) throw new StartupError(`the API token in ${file} ${problem} ${make}`)
  return token
}

/** Why a token cannot guard the API (too short to guard funds, or not one a bearer header carries), or undefined. */
export function apiTokenProblem(token: string): string | undefined {
  if (token.length < 16) return `has ${token.length} characters, fewer than 16`
  if (!B64TOKEN.test(token)) return 'may hold only letters, digits and - . _ ~ + / (= at its end), as a bearer token'
  return undefined
}

/**
 * The node's key: --key, or a keystore (--keystore FILE, or Raiden's --keystore-path DIR with --address) decrypted
 * with the first line of --password-file, else with a password asked on the terminal.
 */
export async function loadPrivateKey({
  key,
  keystore,
  keystorePath,
  address,
  passwordFile,
}: {
  key?: Hex | undefined
  keystore?: string | undefined
  keystorePath?: string | undefined
  address?: `0x${string}` | undefined
  passwordFile?: string | undefined
}): Promise<Hex> {
  const given = [key && '--key', keystore && '--keystore', keystorePath && '--keystore-path'].filter((f) => typeof f === 'string')
  if (given.length > 1) throw new UsageError(`give either ${given[0]} or ${given[1]}, not both`)
  if (address && !keystorePath) throw new UsageError('--address goes with --keystore-path (the directory its keystore is in)')
  if (passwordFile && !keystore && !keystorePath) throw new UsageError('--password-file goes with --keystore or --keystore-path')
  if (key) return key
  if (!keystore && !keystorePath) throw new UsageError('--key or --keystore is required (or --keystore-path DIR with --address)')
  const { decryptKeystore } = await import('../chain/keystore.ts')
  const file = keystore ?? (await findKeystore(keystorePath!, address))
  const text = await readText(file, 'keystore')
  // The password is the file's first line: editors add a final newline that is no part of it.
  const password = passwordFile
    ? (await readText(passwordFile, 'password file')).split(/\r?\n/)[0]!
    : await askTerminal(keystore ? '--keystore' : '--keystore-path')
  let privateKey: Hex
  try {
    privateKey = await decryptKeystore(text, password)
  } catch (e) {
    if (hasCode(e, 'KEYSTORE', 'INVALID_KEYSTORE', 'WRONG_PASSWORD')) throw new StartupError(`${file}: ${(e as Error).message}`)
    throw e
  }
  // Picked by the address its JSON names: a file whose key is another account's must not pass for it.
  if (address) {
    const { privateKeyToAddress } = await import('viem/accounts')
    const actual = privateKeyToAddress(privateKey)
    if (actual.toLowerCase() !== address.toLowerCase()) throw new StartupError(`${file} names the account ${address} but holds the key of ${actual}`)
  }
  return privateKey
}

/** The keystore's password, asked on the terminal; without one (a service, a pipe) it would echo, so it is refused. */
async function askTerminal(flag: string): Promise<string> {
  if (!process.stdin.isTTY) throw new StartupError(`${flag} needs --password-file when standard input is not a terminal`)
  const { askPassword } = await import('./passwordPrompt.ts')
  return askPassword('Keystore password: ', process.stdin, process.stderr)
}

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, serveFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  const log = loggerFromFlags(flags)
  if (!flags.rpc) throw new MissingFlagError('--rpc')
  if (!flags.deployment) throw new MissingFlagError('--deployment')
  if (flags.dataDir && flags.database) throw new UsageError('give either --data-dir or --database, not both')
  if (!flags.dataDir && !flags.database) throw new UsageError('--data-dir is required (or --database URL, the store in PostgreSQL)')
  const rpc = flags.rpc
  const dataDir = flags.dataDir ? resolve(flags.dataDir) : undefined
  const relays = flags.relay ?? []
  const transport = chooseTransport(flags.transport, relays)
  if (transport === 'libp2p without relay') throw new UsageError('--transport libp2p needs --relay MULTIADDR (what `sluice relay` prints)')
  if (transport === 'relay without libp2p') throw new UsageError('--relay goes with --transport libp2p')
  if (relays.length > 0) await checkRelays(relays)
  const direct = await checkDirectFlags(flags, transport)
  const api = parseHostPort(flags.api)!
  const access: ServeAccess = {
    hosts: flags.apiHost ?? [],
    corsOrigins: flags.rpccorsdomain ?? [],
    token: flags.apiTokenFile ? await readApiToken(flags.apiTokenFile) : undefined,
  }
  checkApiExposure({ host: api.host, ...access })
  const fees = feeSettingsOf(flags)
  const privateKey = await loadPrivateKey(flags)

  const [{ readDeployment }, { launchNode, loadLaunchModules }, { jsonParse }, { describeError }] = await Promise.all([
    import('../devnet/deploymentFile.ts'),
    import('../headless/launch.ts'),
    import('../storage/json.ts'),
    import('./servedNode.ts'),
  ])
  const deployment = await startupStep(
    () => readDeployment(resolve(flags.deployment!)),
    (e) => (hasCode(e, 'DEPLOYMENT_NOT_FOUND', 'DEPLOYMENT_SYNTAX', 'INVALID_DEPLOYMENT') ? e.message : undefined),
  )
  let dump: unknown
  if (flags.import) {
    const text = await readText(flags.import, 'state dump')
    dump = await startupStep(
      async () => jsonParse(text),
      (e) => (e instanceof SyntaxError ? `the state dump ${flags.import} is not JSON: ${e.message}` : undefined),
    )
  }

  // Listen before anything long starts, so a Ctrl-C during the sync (or while standing by) still stops cleanly.
  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const metrics = await startMetrics(flags.metrics, 'serve', log)
  let postgres: Awaited<ReturnType<typeof openNodeDatabase>> | undefined
  try {
    const observe = metrics && (await import('../metrics/nodeMetrics.ts'))
    const chainMetrics = metrics && (await import('../metrics/chainMetrics.ts'))
    if (flags.database) {
      // Before the lease: once held, a short one would not survive the second or so this loading blocks the process.
      await loadLaunchModules(transport, true)
      const standingBy = new AbortController()
      void signal.received.then((s) => standingBy.abort(new Error(`${s} while standing by`)))
      try {
        postgres = await openNodeDatabase({
          url: flags.database,
          privateKey,
          deployment,
          durationMs: flags.leaseSeconds * 1000,
          api: { ...api, access },
          log,
          signal: standingBy.signal,
          // sluice_lease_held: 0 while standing by, 1 once active (an alert counts the holders).
          onLease: (lease) => void metrics?.metrics.leaseHolder(lease.name, () => lease.held),
        })
      } catch (e) {
        if (standingBy.signal.aborted) {
          log.info('{signal}: stopping', { signal: await signal.received })
          return 0
        }
        throw e
      }
    }
    const storage = postgres ? { postgres: postgres.store } : { dataDir: dataDir! }
    const where = flags.database ? `--database ${postgres?.store.where}` : `--data-dir ${flags.dataDir}`
    const served = await startupStep(
      () =>
        launchNode({
          rpc,
          deployment,
          privateKey,
          storage,
          transport,
          relays,
          direct,
          settings: {
            confirmations: flags.confirmations,
            ...(flags.maxFeePerGas !== undefined ? { maxFeePerGas: flags.maxFeePerGas } : {}),
            pollingInterval: flags.pollingInterval,
            defaultRevealTimeout: flags.defaultRevealTimeout,
            defaultSettleTimeout: flags.defaultSettleTimeout,
            resolverEndpoint: flags.resolverEndpoint,
            releaseFeedUrl: flags.releaseFeedUrl,
            backupUrl: flags.backupUrl,
            minServiceTokenBalance: flags.minServiceTokenBalance,
            enableMonitoring: flags.enableMonitoring,
            monitoringReward: flags.monitoringReward,
            ...fees,
            ...routingSettingsOf(flags),
          },
          ...(dump !== undefined ? { import: { dump: dump as never, from: flags.import! } } : {}),
          api: { ...api, access },
          environment: flags.environment,
          log,
          ...(metrics && chainMetrics && observe
            ? { onRpcFailure: chainMetrics.countRpcFailures(metrics.metrics), onNode: (node) => void observe.observeNode(metrics.metrics, node) }
            : {}),
        }),
      (e) => {
        if (hasCode(e, 'CHAIN_RPC', 'CHAIN_ID_MISMATCH')) return `--rpc ${rpc.join(',')}: ${describeError(e)}`
        if (hasCode(e, 'DEPLOYMENT_MISMATCH'))
          return `the chain at ${rpc.join(',')} has no TokenNetworkRegistry at ${deployment.contracts.TokenNetworkRegistry.address} (is the deployment file of this chain?)`
        if (hasCode(e, 'STORAGE_LOCKED')) return `${e.message}: is another node running on ${where}?`
        // The store refuses a dump of another chain, registry or address, or one older than itself.
        if (hasCode(e, 'DUMP_REJECTED') && !flags.import) return `--backup-url ${flags.backupUrl}: the newest copy there cannot be restored: ${e.message}`
        if (hasCode(e, 'DUMP_REJECTED')) return `--import ${flags.import}: ${e.message}`
        // The store was empty and the backup server's copy could not be had or opened (docs/decisions/0034).
        const code = (e as { code?: unknown }).code
        if (typeof code === 'string' && code.startsWith('BACKUP_'))
          return `--backup-url ${flags.backupUrl}: the store in ${where} is empty and the newest copy could not be restored: ${e.message} (${code})`
        if (hasCode(e, 'STORAGE', 'STORAGE_VERSION', 'STORAGE_CLOSED', 'LEASE_LOST')) return `cannot open the store in ${where}: ${e.message}`
        // Never signs again on a state that is older than what it signed (docs/decisions/0029).
        if (hasCode(e, 'STALE_STATE'))
          return `${e.message} (STALE_STATE). Start from a newer backup of this node (--import FILE into a new --data-dir), or close its channels from a node that has its newest state`
        return undefined
      },
    )
    void served.run()
    const end = await Promise.race([signal.received.then((s) => ({ reason: 'signal' as const, signal: s })), served.stopRequested])
    if (end.reason === 'signal') log.info('{signal}: stopping', { signal: end.signal })
    else if (end.reason === 'shutdown') log.info('POST /shutdown: stopping')
    else if (end.reason === 'node failed' && hasCode(end.error, 'LEASE_LOST'))
      log.error('Lost the store to another instance (its lease): stopped signing and sending; stopping. Started again, this node stands by', {
        error: end.error,
      })
    else log.error(`${end.reason === 'internal error' ? 'internal error in the API' : 'the node failed'}; stopping`, { error: end.error })
    await served.stop()
    log.info('stopped')
    return end.reason === 'internal error' || end.reason === 'node failed' ? 1 : 0
  } finally {
    await metrics?.server.close()
    signal.dispose()
    await postgres?.close()
  }
}

/**
 * `--database`: the pool to the database, then the node store's lease, taken at once or after standing by (the
 * standby's API answering on --api meanwhile). `close` ends the pool once the node stopped (the store gave the lease up).
 */
async function openNodeDatabase(parameters: {
  url: string
  privateKey: Hex
  deployment: { chainId: number; contracts: { TokenNetworkRegistry: { address: `0x${string}` } } }
  durationMs: number
  api: { host: string; port: number; access: ServeAccess }
  log: ReturnType<typeof loggerFromFlags>
  signal: AbortSignal
  /** Told of the lease as soon as it exists, held or not yet (the metrics show whether it is held). */
  onLease?(lease: Lease): void
}): Promise<{ store: PgNodeStore; close(): Promise<void> }> {
  const [{ openPool, checkReachable, redactDatabaseUrl }, { takeStore }, { privateKeyToAddress }] = await Promise.all([
    import('../storage/postgres/pool.ts'),
    import('./standby.ts'),
    import('viem/accounts'),
  ])
  const { url, log } = parameters
  const where = redactDatabaseUrl(url)
  const address = privateKeyToAddress(parameters.privateKey)
  const pool = openPool(url, {
    name: `sluice serve ${address}`,
    onIdleError: (error) => log.warn('a connection to the database broke: {error}', { error: error.message }),
  })
  try {
    await startupStep(
      () => checkReachable(pool, url),
      (e) => `--database: ${e.message}`,
    )
    const identity = { chainId: BigInt(parameters.deployment.chainId), registry: parameters.deployment.contracts.TokenNetworkRegistry.address, address }
    const lease = await startupStep(
      () =>
        takeStore({
          pool,
          identity,
          durationMs: parameters.durationMs,
          api: parameters.api,
          log,
          signal: parameters.signal,
          ...(parameters.onLease ? { onLease: parameters.onLease } : {}),
        }),
      (e) => (hasCode(e, 'API_PORT_IN_USE') ? undefined : parameters.signal.aborted ? undefined : `--database ${where}: ${e.message}`),
    )
    return { store: { pool, lease, where }, close: () => pool.end().catch(() => {}) }
  } catch (e) {
    await pool.end().catch(() => {})
    throw e
  }
}

/**
 * `--p2p-listen`, `--p2p-announce` and `--p2p-allow-private`: each goes with the libp2p transport, an announced
 * address stands for a listen one, and each address is one WebSockets can use.
 */
export async function checkDirectFlags(
  flags: {
    p2pListen?: string[] | undefined
    p2pAnnounce?: string[] | undefined
    p2pAllowPrivate: boolean
    p2pTlsCert?: string | undefined
    p2pTlsKey?: string | undefined
  },
  transport: string,
): Promise<DirectSettings> {
  const listen = flags.p2pListen ?? []
  const announce = flags.p2pAnnounce ?? []
  const { p2pTlsCert: certFile, p2pTlsKey: keyFile } = flags
  if (transport !== 'libp2p') {
    const given =
      listen.length > 0
        ? '--p2p-listen'
        : announce.length > 0
          ? '--p2p-announce'
          : flags.p2pAllowPrivate
            ? '--p2p-allow-private'
            : certFile !== undefined
              ? '--p2p-tls-cert'
              : undefined
    if (given) throw new UsageError(`${given} goes with --transport libp2p (and --relay)`)
  }
  if (announce.length > 0 && listen.length === 0) throw new UsageError('--p2p-announce goes with --p2p-listen (the sockets it is the address of)')
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new UsageError(certFile === undefined ? '--p2p-tls-key goes with --p2p-tls-cert FILE' : '--p2p-tls-cert goes with --p2p-tls-key FILE')
  if (certFile !== undefined && listen.length === 0) throw new UsageError('--p2p-tls-cert goes with --p2p-listen (the /wss sockets it serves)')
  await checkDirectAddresses(listen, announce, certFile !== undefined)
  if (certFile === undefined || keyFile === undefined) return { listen, announce, allowPrivate: flags.p2pAllowPrivate }
  const { readTlsFiles, checkCertificateNames } = await import('./tlsFiles.ts')
  const tls = await readTlsFiles(certFile, keyFile, new Date(), { cert: '--p2p-tls-cert', key: '--p2p-tls-key' })
  // The names others dial: the announced ones, which the certificate must be for.
  checkCertificateNames(announce, tls, { announce: '--p2p-announce', cert: '--p2p-tls-cert' }, (await import('@multiformats/multiaddr')).multiaddr)
  return { listen, announce, allowPrivate: flags.p2pAllowPrivate, tls: { cert: tls.cert, key: tls.key } }
}

/** Runs a start-up step; an error `explain` puts in words becomes a StartupError (one line, exit code 2). */
export async function startupStep<T>(step: () => Promise<T>, explain: (error: Error) => string | undefined): Promise<T> {
  try {
    return await step()
  } catch (e) {
    const message = e instanceof Error ? explain(e) : undefined
    if (message !== undefined) throw new StartupError(message)
    throw e
  }
}

export const serveCommand: Command = { name: 'serve', usage, run }
