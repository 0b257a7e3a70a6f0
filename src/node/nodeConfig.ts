import type { Address, EIP1193Provider, Hex } from 'viem'
import type { Deployment } from '../chain/deployment.ts'
import type { RpcEndpointsParameters } from '../chain/rpcEndpoints.ts'
import { MAX_IMBALANCE_FEE_PPM, MAX_PROPORTIONAL_FEE_PPM, type MediationFees, type TokenFees } from '../protocol/fees/schedule.ts'
import { jsSecp256k1, type Secp256k1Engine } from '../protocol/secp256k1.ts'
import type { TransitionContext } from '../protocol/state/access.ts'
import type { Storage, StorageDump, StorageIdentity } from '../storage/storage.ts'
import { defaultBackoff, type Backoff } from '../transport/backoff.ts'
import type { Transport } from '../transport/transport.ts'

/** The notifications' settings (services/notifications.ts). */
export type NotificationsOptions = {
  /** The node software's version, compared with the release feed. */
  version: string
  /**
   * A URL answering JSON `{"latest": "0.2.0", "security": ["0.1.0"]}`: the latest release and the versions with
   * a known security problem. Without it neither version notification is ever raised.
   */
  releaseFeedUrl?: string
  /** Service tokens (smallest unit) the UDC must hold for services; 5.5e18 by default (Raiden's MIN_REI_THRESHOLD). */
  minServiceTokenBalance?: bigint
  /** Blocks between two checks (there is also one as soon as the node is ready); 10 by default. */
  checkEveryBlocks?: bigint
  /** Milliseconds to wait for the release feed; 5000 by default. */
  feedTimeoutMs?: number
}

/** The backup's tunables (services/backup/backupService.ts); the server is `backupUrl`. */
export type BackupTunables = {
  /** At least this long between the starts of two pushes (ms, 200 by default): changes in between go in the next copy. */
  minIntervalMs?: number
  /** How long one push, or the fetch of a restore, may take (ms, 15,000 by default). */
  timeoutMs?: number
  /** The first retry after a failed push (ms, 1,000 by default), doubling up to 60 s. */
  retryMs?: number
  /** How long a stop may wait for the last push (ms, 3,000 by default). */
  stopTimeoutMs?: number
}

/** Opens the node's store: one per chain, registry and address (IndexedDB, LevelDB or memory). */
export type StorageOpener = (identity: StorageIdentity) => Promise<Storage>

/** Makes the node's transport once its address is known (BroadcastChannel, libp2p, ...). */
export type TransportFactory = (node: { address: Address; key: Hex }) => Transport | Promise<Transport>

/** A block count: a number (as a flag or a page gives it) or a bigint. */
export type Blocks = number | bigint

/**
 * Everything a node is built from (createNode). The names are those of the `sluice serve` flags in camelCase
 * and of the `startNode()` options of the page; storage and transport are the host's adapters.
 */
export type NodeConfig = {
  /**
   * The chain's JSON-RPC endpoints (http, https, ws or wss): one, or several used in this order, the next when one
   * fails and the first again once it answers (src/chain/rpcEndpoints.ts, docs/decisions/0052).
   */
  rpc?: string | readonly string[]
  /** An EIP-1193 provider (the page's wallet) instead of `rpc`, with the same retries and bounds. */
  provider?: EIP1193Provider
  /** Told each failure of an endpoint, classified (a headless host's metrics count them: docs/decisions/0078). */
  onRpcFailure?: RpcEndpointsParameters['onFailure']
  /** The contracts of the chain (as `sluice chain` writes them), as data. */
  deployment: Deployment
  /** The node's private key: it signs messages and pays for transactions. */
  key: Hex
  storage: StorageOpener
  transport: TransportFactory
  /** Blocks on top of a block before its events count (5 by default; 0 suits a local dev chain). */
  confirmations?: Blocks
  /**
   * The most the node offers per gas, in wei as viem's `maxFeePerGas` (`--max-fee-per-gas` takes gwei): maxFeePerGas,
   * or the gas price on a chain without a base fee. Never exceeded; a transaction with a deadline that needs more raises
   * the critical notification `transaction_at_risk` while there is time to raise it (docs/decisions/0054). No cap by
   * default.
   */
  maxFeePerGas?: bigint
  /** Milliseconds between looks at the chain (1000 by default). */
  pollingInterval?: number
  /**
   * How long an action (a channel opened, a token registered...) waits for its transaction to be mined and confirmed
   * before it answers CONFIRMATION_TIMEOUT, in ms: 60 s and 30 s per confirmation by default (3.5 minutes with 5: a
   * 12-second chain needs about a minute and a half). The transaction goes on either way.
   */
  confirmationTimeoutMs?: number
  /** Reveal timeout of new channels, in blocks (50 by default). */
  defaultRevealTimeout?: Blocks
  /** Settle timeout of channels this node opens, in blocks (500 by default). */
  defaultSettleTimeout?: Blocks
  /** Where to ask for the secret of a payment started with only its hash (docs/rest-api.md, secret resolver). */
  resolverEndpoint?: string
  /** A URL answering `{"latest": "0.2.0", "security": ["0.1.0"]}` behind the version notifications. */
  releaseFeedUrl?: string
  /** Service tokens the UserDeposit must hold before low_service_token goes away (5.5e18 by default). */
  minServiceTokenBalance?: bigint
  /** The software's version, compared with the release feed. */
  version?: string
  /**
   * Put each payment's secret in its LockedTransfer's metadata, encrypted to the target, when the target's public
   * key is known (docs/decisions/0003). On by default; `false` for peers that mishandle the extra field.
   */
  encryptSecret?: boolean
  /**
   * The curve engine the host chose (the native one in Node: src/cli/nativeSecp256k1.ts): every signature the node
   * makes and every signer it recovers goes through it. Absent, createNode loads libsecp256k1's WASM as
   * `secp256k1Wasm` says (src/crypto/curveEngines.ts), the pure-JS engine where it does not load.
   */
  secp256k1?: Secp256k1Engine
  /**
   * Without `secp256k1`, when libsecp256k1's WASM (about 1.2 MB, most of it tables that do not compress) is loaded:
   * before the node starts (`await`, the default), or while it runs (`background`: the page's node starts on the
   * pure-JS engine, about 4 times slower to sign, and switches once the WASM is there).
   */
  secp256k1Wasm?: 'await' | 'background'
  /**
   * A backup server (`sluice backup-server`, `http(s)://host:port/backup/v1`, docs/decisions/0034): the node pushes a
   * sealed copy of what it needs to recover its funds after each change that matters, and a node whose store is empty
   * restores the newest copy there before it starts.
   */
  backupUrl?: string
  backup?: BackupTunables
  /** A state dump (GET /_state/export) restored into the store before the node starts; refused if older. */
  import?: StorageDump
  /**
   * When to resend what the last run left unacknowledged (at the start by default). The page's worker waits until
   * its first requests are answered, as it does to load libp2p (docs/decisions/0024).
   */
  resendWhen?: () => Promise<unknown>
  /**
   * When to start the background services once the node is ready (at once by default). Their first checks read the
   * chain; the page's worker starts them once its first requests are answered, as it does the resends.
   */
  servicesWhen?: () => Promise<unknown>
  /** Delivery retry backoff. */
  backoff?: Partial<Backoff>
  /** Take a snapshot of the state after this many changes (500 by default), or one per channel it holds if more. */
  snapshotEvery?: number
  /** And once no change has come for this long, in ms (1,000 by default): a restart then replays nothing. */
  snapshotWhenIdle?: number
  /** The state machine's tunables (its curve engine is `secp256k1`). */
  context?: Partial<Omit<TransitionContext, 'curve'>>
  /** How often the notifications are checked, and how long the release feed may take. */
  notifications?: Pick<NotificationsOptions, 'checkEveryBlocks' | 'feedTimeoutMs'>
  /** The fetch the secret resolver and the release feed use (the global one by default). */
  fetch?: typeof fetch
  /**
   * Ask the monitoring services registered in the ServiceRegistry to guard the node's channels while it is away
   * (services/monitoring.ts, docs/decisions/0035): for each new balance proof a partner sends, a RequestMonitoring,
   * when the UserDeposit covers the reward. Off by default, as Raiden's `--enable-monitoring`.
   */
  enableMonitoring?: boolean
  /**
   * What each request offers the service whose proof is on-chain at settlement, paid from the UserDeposit, in the
   * service token's smallest unit: 5 * 10^18 by default (Raiden's MONITORING_REWARD).
   */
  monitoringReward?: bigint
  /**
   * The flat fee this node charges for mediating a payment of a token (`--flat-fee TOKEN AMOUNT`), in the token's
   * smallest unit, by token address; half of it on each of the two channels (docs/decisions/0069). None by default.
   */
  flatFee?: Readonly<Record<string, bigint>>
  /** The fee of one mediation in parts per million of the amount (`--proportional-fee TOKEN PPM`, 0 to 1,000,000), by token. */
  proportionalFee?: Readonly<Record<string, bigint>>
  /**
   * The imbalance penalty at its worst, in parts per million of a channel's capacity (`--proportional-imbalance-fee
   * TOKEN PPM`, 0 to 50,000), by token: a mediation that unbalances a channel pays more, one that balances it less.
   */
  proportionalImbalanceFee?: Readonly<Record<string, bigint>>
  /** A mediation's fee is never negative (`--cap-mediation-fees`, the default; `--no-cap-mediation-fees` lets the penalty pay). */
  capMediationFees?: boolean
  /**
   * The most a payment of this node may cost beyond its amount in mediation fees, the route's estimated fee with its
   * margin, in the token's smallest unit (`--pathfinding-max-fee`): a route that would cost more is not taken.
   * 5 * 10^16 by default (Raiden's DEFAULT_PATHFINDING_MAX_FEE).
   */
  pathfindingMaxFee?: bigint
  /**
   * How the node finds routes for a mediated payment (`--routing-mode`, Raiden's names; docs/decisions/0073):
   * `local` (the default) routes over the channel graph it follows, by what its partners pass on of the channels'
   * announcements, else by deposits (docs/decisions/0074), and announces its channels to its partners, and to the
   * pathfinding service when one is given; `pfs` asks the pathfinding service for routes, pays it, reports each route's
   * outcome, and routes locally, saying so, while the service cannot answer; `private` announces nothing and routes
   * locally. A direct channel that can carry the payment is used without asking anyone, as Raiden does.
   */
  routingMode?: RoutingMode
  /**
   * The pathfinding service (`--pathfinding-service-address`): its URL, or `auto` for one of those registered in the
   * ServiceRegistry whose price is within `pathfindingMaxFee`. `auto` by default in `pfs` mode; none otherwise.
   */
  pathfindingServiceAddress?: string
  /** How many routes to ask the pathfinding service for (`--pathfinding-max-paths`, 1 to 25): 3 by default, as Raiden. */
  pathfindingMaxPaths?: number
  /**
   * Blocks until a new IOU session with the pathfinding service expires (`--pathfinding-iou-timeout`): 200,000 by
   * default, as Raiden; a service takes no session that ends within 40,320 blocks (a week).
   */
  pathfindingIouTimeout?: Blocks
  /** The pathfinding client's tunables: how long one request to the service may take, how long a failed one is not asked again. */
  pathfinding?: PathfindingTunables
}

/** `--routing-mode`: Raiden's `pfs` and `private`, and `local`, our own routing by what the node heard (docs/decisions/0073, 0074). */
export type RoutingMode = 'pfs' | 'private' | 'local'
export const ROUTING_MODES: readonly RoutingMode[] = ['pfs', 'private', 'local']

export type PathfindingTunables = {
  /** One request to the pathfinding service, answer included (ms): 10,000 by default (Raiden's DEFAULT_HTTP_REQUEST_TIMEOUT). */
  timeoutMs?: number
  /** After the service failed to answer, payments route locally without asking it for this long (ms): 30,000 by default. */
  retryAfterMs?: number
}

/** The node's settings that are `sluice serve` flags (camelCase), which every host passes through to createNode as given. */
export type FlagSettings = Pick<
  NodeConfig,
  | 'confirmations'
  | 'maxFeePerGas'
  | 'pollingInterval'
  | 'defaultRevealTimeout'
  | 'defaultSettleTimeout'
  | 'resolverEndpoint'
  | 'releaseFeedUrl'
  | 'backupUrl'
  | 'enableMonitoring'
  | 'monitoringReward'
  | 'flatFee'
  | 'proportionalFee'
  | 'proportionalImbalanceFee'
  | 'capMediationFees'
  | 'pathfindingMaxFee'
  | 'routingMode'
  | 'pathfindingServiceAddress'
  | 'pathfindingMaxPaths'
  | 'pathfindingIouTimeout'
>

/** Raiden's MONITORING_REWARD: 5 service tokens of 18 decimals. */
export const DEFAULT_MONITORING_REWARD = 5n * 10n ** 18n

const maxUint256 = 2n ** 256n - 1n

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

/** Raiden's DEFAULT_PATHFINDING_MAX_FEE: 0.05 of a token of 18 decimals. */
export const DEFAULT_PATHFINDING_MAX_FEE = 5n * 10n ** 16n
/** Raiden's DEFAULT_PATHFINDING_MAX_PATHS; a service answers 25 at most (raiden-services MAX_PATHS_PER_REQUEST). */
export const DEFAULT_PATHFINDING_MAX_PATHS = 3
export const MAX_PATHFINDING_MAX_PATHS = 25
/** Raiden's DEFAULT_PATHFINDING_IOU_TIMEOUT, in blocks. */
export const DEFAULT_PATHFINDING_IOU_TIMEOUT = 200_000n

/**
 * The per-token fee settings as the core holds them (MediationFees): one entry per token named in any of them, keyed
 * by its lower-case address. Throws RangeError for a token that is no address or a fee out of Raiden's ranges.
 */
export function mediationFeesOf(config: Pick<NodeConfig, 'flatFee' | 'proportionalFee' | 'proportionalImbalanceFee' | 'capMediationFees'>): MediationFees {
  const tokens: Record<string, TokenFees> = {}
  const take = (name: string, values: Readonly<Record<string, bigint>> | undefined, field: keyof TokenFees, max: bigint) => {
    for (const [token, value] of Object.entries(values ?? {})) {
      if (!/^0x[0-9a-fA-F]{40}$/.test(token)) throw new RangeError(`${name} is keyed by token address, not ${JSON.stringify(token)}`)
      if (typeof value !== 'bigint' || value < 0n || value > max)
        throw new RangeError(`${name} of ${token} must be a bigint from 0n to ${max === maxUint256 ? '2^256-1' : `${max}n`}, not ${String(value)}`)
      const key = token.toLowerCase()
      tokens[key] = { ...(tokens[key] ?? { flat: 0n, proportional: 0n, imbalance: 0n }), [field]: value }
    }
  }
  take('flatFee', config.flatFee, 'flat', maxUint256)
  take('proportionalFee', config.proportionalFee, 'proportional', MAX_PROPORTIONAL_FEE_PPM)
  take('proportionalImbalanceFee', config.proportionalImbalanceFee, 'imbalance', MAX_IMBALANCE_FEE_PPM)
  return { capFees: config.capMediationFees ?? true, tokens }
}

/** The config with every default applied. */
export type ResolvedNodeConfig = Omit<
  NodeConfig,
  | 'confirmations'
  | 'defaultRevealTimeout'
  | 'defaultSettleTimeout'
  | 'backoff'
  | 'notifications'
  | 'import'
  | 'enableMonitoring'
  | 'monitoringReward'
  | 'flatFee'
  | 'proportionalFee'
  | 'proportionalImbalanceFee'
  | 'capMediationFees'
  | 'pathfindingMaxFee'
  | 'routingMode'
  | 'pathfindingServiceAddress'
  | 'pathfindingMaxPaths'
  | 'pathfindingIouTimeout'
  | 'pathfinding'
> & {
  /** The node's one curve engine (the host's, or the one createNode loaded; the JS one when resolved without either). */
  secp256k1: Secp256k1Engine
  confirmationTimeoutMs: number
  enableMonitoring: boolean
  monitoringReward: bigint
  pollingInterval: number
  defaultRevealTimeout: bigint
  defaultSettleTimeout: bigint
  encryptSecret: boolean
  backoff: Backoff
  snapshotEvery: number
  snapshotWhenIdle: number
  notifications: NotificationsOptions
  fetch: typeof fetch
  /** What the node charges for mediating (the flags' per-token settings together). */
  mediationFees: MediationFees
  pathfindingMaxFee: bigint
  routingMode: RoutingMode
  /** The service's URL, `auto`, or undefined: none (then `pfs` routes locally). */
  pathfindingServiceAddress: string | undefined
  pathfindingMaxPaths: number
  pathfindingIouTimeout: bigint
  pathfinding: Required<PathfindingTunables>
}

export const nodeDefaults = {
  confirmations: 5n,
  pollingInterval: 1_000,
  defaultRevealTimeout: 50n,
  defaultSettleTimeout: 500n,
  snapshotEvery: 500,
  snapshotWhenIdle: 1_000,
}

export function resolveNodeConfig(config: NodeConfig): { config: ResolvedNodeConfig; confirmations: bigint } {
  if (config.monitoringReward !== undefined && (config.monitoringReward < 0n || config.monitoringReward >= 2n ** 256n))
    throw new RangeError(`monitoringReward must be a uint256, not ${config.monitoringReward}`)
  if (config.maxFeePerGas !== undefined && (config.maxFeePerGas <= 0n || config.maxFeePerGas >= 2n ** 256n))
    throw new RangeError(`maxFeePerGas must be a positive amount of wei, not ${config.maxFeePerGas}`)
  if (
    config.pathfindingMaxFee !== undefined &&
    (typeof config.pathfindingMaxFee !== 'bigint' || config.pathfindingMaxFee < 0n || config.pathfindingMaxFee > maxUint256)
  )
    throw new RangeError(`pathfindingMaxFee must be a uint256, not ${String(config.pathfindingMaxFee)}`)
  const routingMode = config.routingMode ?? 'local'
  if (!ROUTING_MODES.includes(routingMode)) throw new RangeError(`routingMode must be one of ${ROUTING_MODES.join(', ')}, not ${String(routingMode)}`)
  const serviceAddress = config.pathfindingServiceAddress
  if (serviceAddress !== undefined && serviceAddress !== 'auto' && !isHttpUrl(serviceAddress))
    throw new RangeError(`pathfindingServiceAddress must be an http(s) URL or auto, not ${String(serviceAddress)}`)
  const maxPaths = config.pathfindingMaxPaths ?? DEFAULT_PATHFINDING_MAX_PATHS
  if (!Number.isInteger(maxPaths) || maxPaths < 1 || maxPaths > MAX_PATHFINDING_MAX_PATHS)
    throw new RangeError(`pathfindingMaxPaths must be an integer from 1 to ${MAX_PATHFINDING_MAX_PATHS}, not ${String(maxPaths)}`)
  const iouTimeout = BigInt(config.pathfindingIouTimeout ?? DEFAULT_PATHFINDING_IOU_TIMEOUT)
  if (iouTimeout <= 0n) throw new RangeError(`pathfindingIouTimeout must be a positive number of blocks, not ${iouTimeout}`)
  const mediationFees = mediationFeesOf(config)
  const {
    confirmations,
    defaultRevealTimeout,
    defaultSettleTimeout,
    backoff,
    notifications,
    import: _import,
    flatFee: _flat,
    proportionalFee: _proportional,
    proportionalImbalanceFee: _imbalance,
    capMediationFees: _cap,
    pathfindingMaxFee,
    routingMode: _routingMode,
    pathfindingServiceAddress: _serviceAddress,
    pathfindingMaxPaths: _maxPaths,
    pathfindingIouTimeout: _iouTimeout,
    pathfinding,
    ...rest
  } = config
  const blocks = BigInt(confirmations ?? config.context?.confirmationBlocks ?? nodeDefaults.confirmations)
  const resolved: ResolvedNodeConfig = {
    ...rest,
    // createNode always gives one; the JS engine is for a config resolved on its own (tests of the runtime's parts).
    secp256k1: config.secp256k1 ?? jsSecp256k1,
    confirmationTimeoutMs: config.confirmationTimeoutMs ?? 60_000 + Number(blocks) * 30_000,
    pollingInterval: config.pollingInterval ?? nodeDefaults.pollingInterval,
    defaultRevealTimeout: BigInt(defaultRevealTimeout ?? nodeDefaults.defaultRevealTimeout),
    defaultSettleTimeout: BigInt(defaultSettleTimeout ?? nodeDefaults.defaultSettleTimeout),
    encryptSecret: config.encryptSecret ?? true,
    backoff: { ...defaultBackoff, ...backoff },
    snapshotEvery: config.snapshotEvery ?? nodeDefaults.snapshotEvery,
    snapshotWhenIdle: config.snapshotWhenIdle ?? nodeDefaults.snapshotWhenIdle,
    notifications: {
      version: config.version ?? '0.0.0',
      ...(config.releaseFeedUrl ? { releaseFeedUrl: config.releaseFeedUrl } : {}),
      ...(config.minServiceTokenBalance !== undefined ? { minServiceTokenBalance: config.minServiceTokenBalance } : {}),
      ...notifications,
    },
    fetch: config.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    enableMonitoring: config.enableMonitoring ?? false,
    monitoringReward: config.monitoringReward ?? DEFAULT_MONITORING_REWARD,
    mediationFees,
    pathfindingMaxFee: pathfindingMaxFee ?? DEFAULT_PATHFINDING_MAX_FEE,
    routingMode,
    // Raiden's default is `auto`; in `local` mode, a service is only told of our channels when the operator names one.
    pathfindingServiceAddress: serviceAddress?.replace(/\/+$/, '') ?? (routingMode === 'pfs' ? 'auto' : undefined),
    pathfindingMaxPaths: maxPaths,
    pathfindingIouTimeout: iouTimeout,
    pathfinding: { timeoutMs: pathfinding?.timeoutMs ?? 10_000, retryAfterMs: pathfinding?.retryAfterMs ?? 30_000 },
  }
  return { config: resolved, confirmations: blocks }
}
