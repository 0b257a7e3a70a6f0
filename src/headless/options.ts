/**
 * @sluice/node's `startNode` options: `sluice serve`'s flags in camelCase, checked by the flags' own parsers (the
 * same rules, ranges and defaults), then read (key, deployment, state dump) into what launchNode takes. Everything
 * wrong with them is found here, before anything is opened: INVALID_OPTIONS, or the coded error of the file read
 * (DEPLOYMENT_NOT_FOUND, INVALID_DEPLOYMENT, INVALID_KEYSTORE, WRONG_PASSWORD, API_EXPOSED).
 */
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Hex } from 'viem'
import { parseHostRule, parseOriginPattern, type HostRule, type OriginPattern } from '../api/hostsAndOrigins.ts'
import { parseDeployment, type Deployment } from '../chain/deployment.ts'
import type { Keystore } from '../chain/keystore.ts'
import type { InvalidFlagValueError, FlagSpec } from '../cli/args.ts'
import { checkApiExposure } from '../cli/apiExposure.ts'
import { apiTokenProblem, checkDirectFlags, checkRelays, parseHostPort, parseRpcUrl, serveFlags } from '../cli/serve.ts'
import { readDeployment } from '../devnet/deploymentFile.ts'
import { SluiceError, hasCode, withCode } from '../errors.ts'
import { createLogger, isLogThreshold, LOG_THRESHOLDS, type Logger, type LogThreshold } from '../log/logger.ts'
import { jsonParse } from '../storage/json.ts'
import type { StorageDump } from '../storage/storage.ts'
import type { LaunchParameters } from './launch.ts'
import { chooseTransport, type TransportName } from './transport.ts'

export class InvalidOptionsError extends SluiceError {
  override name = 'InvalidOptionsError' as const
  override readonly code = 'INVALID_OPTIONS' as const
}

export type StartNodeOptions = {
  /**
   * The chain's JSON-RPC endpoint (http, https, ws or wss), or several, used in this order (the next while one fails,
   * the first again once it answers): `--rpc`.
   */
  rpc: string | readonly string[]
  /** The contracts: the path of the file `sluice chain` writes, or its parsed JSON: `--deployment`. */
  deployment: string | Deployment
  /** The private key, 32 bytes of hex; or `keystore` with `password`. */
  key?: string
  /** A v3 keystore holding the key: its path, or its parsed JSON. */
  keystore?: string | Keystore
  password?: string
  /** Where the LevelDB store lives (created if missing): `--data-dir`. Needed unless `storage: 'memory'`. */
  dataDir?: string
  /** `memory` keeps the state in this process only, lost when the node stops (tests, bots that need no history). */
  storage?: 'level' | 'memory'
  /** libp2p relays (`sluice relay` prints them); with them the transport is libp2p. */
  relay?: readonly string[]
  /** libp2p (needs `relay`) or broadcast (nodes of this process only); default libp2p with relays, else broadcast. */
  transport?: TransportName
  /** Where the node listens for direct connections from other nodes, dialled first (`--p2p-listen`): `/ip4/0.0.0.0/tcp/4001/ws`. */
  p2pListen?: readonly string[]
  /** The addresses other nodes reach `p2pListen` at, announced in its place (`--p2p-announce`): a NAT's forwarded port, a TLS proxy. */
  p2pAnnounce?: readonly string[]
  /** Dial other nodes' direct addresses on private networks and loopback too (`--p2p-allow-private`; default false). */
  p2pAllowPrivate?: boolean
  /** The certificate file (PEM, its chain after it) `p2pListen`'s `/wss` addresses serve (`--p2p-tls-cert`); with `p2pTlsKey`. */
  p2pTlsCert?: string
  /** Its private key's file, PEM, unencrypted (`--p2p-tls-key`). */
  p2pTlsKey?: string
  confirmations?: number
  /** The cap per gas, in wei as viem's `maxFeePerGas` (`parseGwei('50')`); `--max-fee-per-gas` takes gwei. No cap by default. */
  maxFeePerGas?: bigint
  pollingInterval?: number
  defaultRevealTimeout?: number
  defaultSettleTimeout?: number
  resolverEndpoint?: string
  releaseFeedUrl?: string
  backupUrl?: string
  minServiceTokenBalance?: bigint
  /** How routes are found (`--routing-mode`): 'local' (default), 'pfs' or 'private' (docs/decisions/0073). */
  routingMode?: 'pfs' | 'private' | 'local'
  /** The pathfinding service's URL, or 'auto' (`--pathfinding-service-address`; auto by default with routingMode 'pfs'). */
  pathfindingServiceAddress?: string
  /** How many routes to ask the pathfinding service for, 1 to 25 (`--pathfinding-max-paths`, 3 by default). */
  pathfindingMaxPaths?: number
  /** Blocks until a new IOU session with the pathfinding service expires (`--pathfinding-iou-timeout`, 200000 by default). */
  pathfindingIouTimeout?: number
  /** `production` (default) disables token registration and minting (501), as `sluice serve`. */
  environment?: 'development' | 'production'
  enableMonitoring?: boolean
  monitoringReward?: bigint
  /** The flat fee of one mediation, by token address, in the token's smallest unit (`--flat-fee TOKEN AMOUNT`). */
  flatFee?: Readonly<Record<string, bigint>>
  /** The fee of one mediation in parts per million, by token address, 0n to 1_000_000n (`--proportional-fee TOKEN PPM`). */
  proportionalFee?: Readonly<Record<string, bigint>>
  /** The imbalance penalty at its worst in ppm of a channel's capacity, by token, 0n to 50_000n (`--proportional-imbalance-fee`). */
  proportionalImbalanceFee?: Readonly<Record<string, bigint>>
  /** A mediation fee is never negative (default true; `--no-cap-mediation-fees` is false). */
  capMediationFees?: boolean
  /** The most a payment may cost beyond its amount in mediation fees (`--pathfinding-max-fee`; 5n * 10n ** 16n by default). */
  pathfindingMaxFee?: bigint
  /** A state dump (GET /_state/export), or its file's path, restored into the store before the node starts. */
  import?: string | StorageDump
  /** Also serve the REST API over HTTP at `HOST:PORT` (port 0 picks a free one), as `sluice serve --api`. */
  api?: string
  /** The bearer token every HTTP request must carry (16+ characters); needed to listen beyond loopback. */
  apiToken?: string
  /** More names the HTTP API answers to as Host (`--api-host`). */
  apiHosts?: readonly string[]
  /** Origins whose web pages may call the HTTP API, with CORS (`--rpccorsdomain`). */
  corsOrigins?: readonly string[]
  /** Resolve once the node has synced with the chain (default true); false: as soon as it is created. */
  waitForSync?: boolean
  /** What the node logs: `debug`, `info`, `warn` (default), `error` or `silent`; warn and error go to stderr. */
  logLevel?: LogThreshold
  /** Log lines as JSON objects (`--log-json`). */
  logJson?: boolean
  /** Your logger instead (logLevel and logJson are then not used). */
  logger?: Logger
}

const OPTION_NAMES: readonly (keyof StartNodeOptions)[] = [
  'rpc',
  'deployment',
  'key',
  'keystore',
  'password',
  'dataDir',
  'storage',
  'relay',
  'transport',
  'p2pListen',
  'p2pAnnounce',
  'p2pAllowPrivate',
  'p2pTlsCert',
  'p2pTlsKey',
  'confirmations',
  'maxFeePerGas',
  'pollingInterval',
  'defaultRevealTimeout',
  'defaultSettleTimeout',
  'resolverEndpoint',
  'releaseFeedUrl',
  'backupUrl',
  'minServiceTokenBalance',
  'routingMode',
  'pathfindingServiceAddress',
  'pathfindingMaxPaths',
  'pathfindingIouTimeout',
  'environment',
  'enableMonitoring',
  'monitoringReward',
  'flatFee',
  'proportionalFee',
  'proportionalImbalanceFee',
  'capMediationFees',
  'pathfindingMaxFee',
  'import',
  'api',
  'apiToken',
  'apiHosts',
  'corsOrigins',
  'waitForSync',
  'logLevel',
  'logJson',
  'logger',
]

export type ResolvedOptions = { launch: LaunchParameters; waitForSync: boolean; apiToken: string | undefined }

const show = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : typeof value === 'bigint' ? `${value}n` : String(value))

/**
 * An option read by its serve flag's parser, from the JS type the option takes; undefined when not given. A
 * `secret` value (the key) is never repeated in the message: an error may well be logged.
 */
function byFlag<T>(name: string, value: unknown, spec: FlagSpec<T>, type: 'string' | 'number' | 'bigint', secret = false): T | undefined {
  if (value === undefined) return undefined
  const parsed = typeof value === type ? spec.parse(String(value)) : undefined
  if (parsed === undefined)
    throw new InvalidOptionsError(`${name} must be ${type === 'bigint' ? 'a bigint, ' : ''}${spec.expected}${secret ? '' : `, not ${show(value)}`}`)
  return parsed
}

/** The cap in wei, as viem takes it (the flag's gwei is for a person typing it). */
function maxFeePerGasOf(value: unknown): { maxFeePerGas?: bigint } {
  if (value === undefined) return {}
  if (typeof value !== 'bigint' || value <= 0n || value >= 2n ** 256n)
    throw new InvalidOptionsError(`maxFeePerGas must be a bigint of wei above 0n (parseGwei('50') for 50 gwei), not ${show(value)}`)
  return { maxFeePerGas: value }
}

/** A fee option by token address (`{ [token]: 5n }`), read entry by entry by its flag's parser (`--flat-fee TOKEN AMOUNT`). */
function perTokenOf(name: string, value: unknown, spec: FlagSpec<Record<string, bigint>>): Record<string, bigint> | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidOptionsError(`${name} must be an object of bigints by token address, not ${show(value)}`)
  const entries = Object.entries(value)
  const wrong = entries.find(([token, amount]) => typeof amount !== 'bigint' || spec.parse(`${token} ${amount}`) === undefined)
  if (wrong)
    throw new InvalidOptionsError(
      `${name} must be an object of bigints by token address, each ${spec.expected.replace(/:.*$/, '')}; not ${wrong[0]}: ${show(wrong[1])}`,
    )
  if (!entries.length) return {}
  const parsed = spec.parse(entries.map(([token, amount]) => `${token} ${amount}`).join(','))
  if (!parsed) throw new InvalidOptionsError(`${name} names a token twice (addresses are compared in lower case)`)
  return parsed
}

/** A string or boolean option; a wrong one is told by its type, never its value (it may be the password). */
function optional<T>(name: string, value: unknown, type: 'string' | 'boolean'): T | undefined {
  if (value !== undefined && typeof value !== type) throw new InvalidOptionsError(`${name} must be a ${type}, not ${value === null ? 'null' : typeof value}`)
  return value as T | undefined
}

/** A flag as the option of the same name: `--p2p-listen` is `p2pListen`. */
const optionOf = (flag: string) => flag.replace(/^--/, '').replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/** A serve check's message in the options' words: flags become options. */
const optionWords = (message: string) => message.replace('--transport libp2p', "transport 'libp2p'").replace(/--[a-z0-9-]+/g, optionOf)

function list<T>(name: string, value: unknown, parse: (raw: string) => T | undefined, expected: string): T[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw new InvalidOptionsError(`${name} must be an array of strings, not ${show(value)}`)
  return value.map((item: unknown) => {
    const parsed = typeof item === 'string' ? parse(item) : undefined
    if (parsed === undefined) throw new InvalidOptionsError(`each of ${name} must be ${expected}, not ${show(item)}`)
    return parsed
  })
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (e) {
    throw new InvalidOptionsError(`cannot read the ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

async function privateKeyOf(options: StartNodeOptions): Promise<Hex> {
  if (options.key !== undefined && options.keystore !== undefined) throw new InvalidOptionsError('give either key or keystore, not both')
  if (options.key !== undefined) return byFlag('key', options.key, serveFlags.key, 'string', true)!
  if (options.keystore === undefined) throw new InvalidOptionsError('key or keystore (with password) is required')
  const password = optional<string>('password', options.password, 'string')
  if (password === undefined) throw new InvalidOptionsError('keystore needs password')
  const keystore = options.keystore
  if (typeof keystore !== 'string' && (typeof keystore !== 'object' || keystore === null))
    throw new InvalidOptionsError(`keystore must be a file's path or a keystore's JSON, not ${show(keystore)}`)
  const { decryptKeystore } = await import('../chain/keystore.ts')
  return decryptKeystore(typeof keystore === 'string' ? await readText(keystore, 'keystore') : keystore, password)
}

async function deploymentOf(deployment: unknown): Promise<Deployment> {
  if (typeof deployment === 'string') return readDeployment(resolve(deployment))
  if (typeof deployment === 'object' && deployment !== null) return parseDeployment(deployment)
  throw new InvalidOptionsError(`deployment must be a file's path or the deployment's JSON, not ${show(deployment)}`)
}

async function dumpOf(dump: unknown): Promise<LaunchParameters['import']> {
  if (dump === undefined) return undefined
  if (typeof dump === 'object' && dump !== null) return { dump: dump as StorageDump, from: 'the dump given' }
  if (typeof dump !== 'string') throw new InvalidOptionsError(`import must be a state dump or its file's path, not ${show(dump)}`)
  const text = await readText(dump, 'state dump')
  try {
    return { dump: jsonParse(text) as StorageDump, from: dump }
  } catch (e) {
    throw new InvalidOptionsError(`the state dump ${dump} is not JSON: ${(e as Error).message}`)
  }
}

function loggerOf(options: StartNodeOptions): Logger {
  if (options.logger !== undefined) {
    const logger = options.logger as Partial<Logger> | null
    if (
      typeof logger !== 'object' ||
      logger === null ||
      (['debug', 'info', 'warn', 'error', 'enabled', 'child'] as const).some((m) => typeof logger[m] !== 'function')
    )
      throw new InvalidOptionsError('logger must have debug, info, warn, error, enabled and child (a Logger)')
    return options.logger
  }
  const level = options.logLevel ?? 'warn'
  if (!isLogThreshold(level)) throw new InvalidOptionsError(`logLevel must be one of ${LOG_THRESHOLDS.join(', ')}, not ${show(level)}`)
  return createLogger({ level, format: optional<boolean>('logJson', options.logJson, 'boolean') ? 'json' : 'pretty' })
}

/** Checks every option and reads what they point at; nothing is opened or started. */
export async function resolveOptions(options: StartNodeOptions): Promise<ResolvedOptions> {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionsError('startNode() takes an object of options')
  const unknown = Object.keys(options).filter((name) => !(OPTION_NAMES as readonly string[]).includes(name))
  if (unknown.length > 0) throw new InvalidOptionsError(`unknown option${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`)
  const log = loggerOf(options)
  const rpc = Array.isArray(options.rpc) ? list('rpc', options.rpc, parseRpcUrl, serveFlags.rpc.expected) : byFlag('rpc', options.rpc, serveFlags.rpc, 'string')
  if (rpc === undefined) throw new InvalidOptionsError("rpc is required (the chain's JSON-RPC URL, or a list of them)")
  if (rpc.length === 0) throw new InvalidOptionsError('rpc must hold at least one URL')
  if (options.deployment === undefined) throw new InvalidOptionsError("deployment is required (its file's path or its JSON)")

  const storageKind = options.storage ?? 'level'
  if (storageKind !== 'level' && storageKind !== 'memory') throw new InvalidOptionsError(`storage must be level or memory, not ${show(storageKind)}`)
  const dataDir = optional<string>('dataDir', options.dataDir, 'string')
  if (storageKind === 'level' && !dataDir) throw new InvalidOptionsError("dataDir is required (or storage: 'memory')")
  if (storageKind === 'memory' && dataDir !== undefined) throw new InvalidOptionsError("dataDir goes with storage 'level', not 'memory'")

  const relays = list('relay', options.relay, (raw) => (raw.startsWith('/') ? raw : undefined), 'a multiaddr')
  const transport = chooseTransport(byFlag('transport', options.transport, serveFlags.transport, 'string'), relays)
  if (transport === 'libp2p without relay') throw new InvalidOptionsError("transport 'libp2p' needs relay (what `sluice relay` prints)")
  if (transport === 'relay without libp2p') throw new InvalidOptionsError("relay goes with transport 'libp2p'")
  if (relays.length > 0)
    await checkRelays(relays).catch((e: unknown) => {
      const invalid = withCode<InvalidFlagValueError>(e, 'INVALID_FLAG_VALUE')
      throw invalid ? new InvalidOptionsError(`each relay must be ${invalid.expected}, not ${show(invalid.value)}`) : e
    })

  const p2pListen = list('p2pListen', options.p2pListen, (raw) => (raw.startsWith('/') ? raw : undefined), 'a multiaddr')
  const p2pAnnounce = list('p2pAnnounce', options.p2pAnnounce, (raw) => (raw.startsWith('/') ? raw : undefined), 'a multiaddr')
  const p2pAllowPrivate = optional<boolean>('p2pAllowPrivate', options.p2pAllowPrivate, 'boolean') ?? false
  const p2pTlsCert = optional<string>('p2pTlsCert', options.p2pTlsCert, 'string')
  const p2pTlsKey = optional<string>('p2pTlsKey', options.p2pTlsKey, 'string')
  const direct = await checkDirectFlags({ p2pListen, p2pAnnounce, p2pAllowPrivate, p2pTlsCert, p2pTlsKey }, transport).catch((e: unknown) => {
    const invalid = withCode<InvalidFlagValueError>(e, 'INVALID_FLAG_VALUE')
    if (invalid) throw new InvalidOptionsError(`each ${optionOf(invalid.flag)} must be ${optionWords(invalid.expected)}, not ${show(invalid.value)}`)
    if (hasCode(e, 'USAGE', 'TLS_FILES')) throw new InvalidOptionsError(optionWords((e as Error).message))
    throw e
  })

  const api = optional<string>('api', options.api, 'string')
  const apiToken = optional<string>('apiToken', options.apiToken, 'string')
  const hosts: HostRule[] = list('apiHosts', options.apiHosts, parseHostRule, serveFlags.apiHost.expected)
  const corsOrigins: OriginPattern[] = list('corsOrigins', options.corsOrigins, parseOriginPattern, serveFlags.rpccorsdomain.expected)
  let served: LaunchParameters['api']
  if (api !== undefined) {
    const hostPort = parseHostPort(api)
    if (!hostPort) throw new InvalidOptionsError(`api must be ${serveFlags.api.expected}, not ${show(api)}`)
    const problem = apiToken === undefined ? undefined : apiTokenProblem(apiToken)
    if (problem) throw new InvalidOptionsError(`apiToken ${problem}`)
    const access = { hosts, corsOrigins, token: apiToken }
    checkApiExposure({ host: hostPort.host, ...access })
    served = { ...hostPort, access }
  } else if (apiToken !== undefined || hosts.length > 0 || corsOrigins.length > 0)
    throw new InvalidOptionsError('apiToken, apiHosts and corsOrigins go with api (the address the REST API is served at)')

  const settings = {
    confirmations: byFlag('confirmations', options.confirmations, serveFlags.confirmations, 'number') ?? serveFlags.confirmations.default,
    ...maxFeePerGasOf(options.maxFeePerGas),
    pollingInterval: byFlag('pollingInterval', options.pollingInterval, serveFlags.pollingInterval, 'number') ?? serveFlags.pollingInterval.default,
    defaultRevealTimeout:
      byFlag('defaultRevealTimeout', options.defaultRevealTimeout, serveFlags.defaultRevealTimeout, 'number') ?? serveFlags.defaultRevealTimeout.default,
    defaultSettleTimeout:
      byFlag('defaultSettleTimeout', options.defaultSettleTimeout, serveFlags.defaultSettleTimeout, 'number') ?? serveFlags.defaultSettleTimeout.default,
    resolverEndpoint: byFlag('resolverEndpoint', options.resolverEndpoint, serveFlags.resolverEndpoint, 'string'),
    releaseFeedUrl: byFlag('releaseFeedUrl', options.releaseFeedUrl, serveFlags.releaseFeedUrl, 'string'),
    backupUrl: byFlag('backupUrl', options.backupUrl, serveFlags.backupUrl, 'string'),
    minServiceTokenBalance: byFlag('minServiceTokenBalance', options.minServiceTokenBalance, serveFlags.minServiceTokenBalance, 'bigint'),
    enableMonitoring: optional<boolean>('enableMonitoring', options.enableMonitoring, 'boolean') ?? false,
    monitoringReward: byFlag('monitoringReward', options.monitoringReward, serveFlags.monitoringReward, 'bigint') ?? serveFlags.monitoringReward.default,
    flatFee: perTokenOf('flatFee', options.flatFee, serveFlags.flatFee),
    proportionalFee: perTokenOf('proportionalFee', options.proportionalFee, serveFlags.proportionalFee),
    proportionalImbalanceFee: perTokenOf('proportionalImbalanceFee', options.proportionalImbalanceFee, serveFlags.proportionalImbalanceFee),
    capMediationFees: optional<boolean>('capMediationFees', options.capMediationFees, 'boolean') ?? true,
    pathfindingMaxFee: byFlag('pathfindingMaxFee', options.pathfindingMaxFee, serveFlags.pathfindingMaxFee, 'bigint') ?? serveFlags.pathfindingMaxFee.default,
    routingMode: byFlag('routingMode', options.routingMode, serveFlags.routingMode, 'string') ?? serveFlags.routingMode.default,
    pathfindingServiceAddress: byFlag('pathfindingServiceAddress', options.pathfindingServiceAddress, serveFlags.pathfindingServiceAddress, 'string'),
    pathfindingMaxPaths:
      byFlag('pathfindingMaxPaths', options.pathfindingMaxPaths, serveFlags.pathfindingMaxPaths, 'number') ?? serveFlags.pathfindingMaxPaths.default,
    pathfindingIouTimeout:
      byFlag('pathfindingIouTimeout', options.pathfindingIouTimeout, serveFlags.pathfindingIouTimeout, 'number') ?? serveFlags.pathfindingIouTimeout.default,
  }
  const environment = byFlag('environment', options.environment, serveFlags.environment, 'string') ?? serveFlags.environment.default
  const waitForSync = optional<boolean>('waitForSync', options.waitForSync, 'boolean') ?? true

  // Last, the files: a wrong option above is told without reading any.
  const privateKey = await privateKeyOf(options)
  const deployment = await deploymentOf(options.deployment)
  const imported = await dumpOf(options.import)
  return {
    launch: {
      rpc,
      deployment,
      privateKey,
      storage: storageKind === 'memory' ? 'memory' : { dataDir: resolve(dataDir!) },
      transport,
      relays,
      direct,
      settings,
      import: imported,
      api: served,
      environment,
      log,
    },
    waitForSync,
    apiToken,
  }
}
