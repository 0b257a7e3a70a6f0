/**
 * The types of the page's API (sluice/browser, sluice/react, sluice/client) that the node's own would spell with
 * viem's: the same shapes without them, so that the package's declarations name no other package and a dApp
 * type-checks with `sluice` alone (docs/decisions/0048-self-contained-declarations.md). The types imported here name
 * no package either (the declarations' bundler takes them alone from their files). publicTypes.check.ts ties each
 * type to the node's, so that the two cannot drift apart.
 */
import type { Environment } from '../src/api/context.ts'
import type { contractsVersion, DeployedContractName } from '../src/chain/deployment.ts'
import type { LogThreshold } from '../src/log/logger.ts'
import type { BackupTunables, Blocks } from '../src/node/nodeConfig.ts'

/** A 20-byte address, `0x`-prefixed: viem's `Address`. */
export type Address = `0x${string}`

/** Bytes as `0x`-prefixed hex: viem's `Hex`. */
export type Hex = `0x${string}`

/**
 * An EIP-1193 provider, as far as the node uses one: a wallet's `window.ethereum`, viem's `EIP1193Provider`, or
 * what wagmi's connectors give (`await connector.getProvider()`).
 */
export type Eip1193Provider = { request(args: { method: string; params?: unknown }): Promise<unknown> }

/** The deployment file `sluice chain` writes: which contracts of a chain the node uses. */
export type Deployment = {
  chainId: number
  contracts_version: typeof contractsVersion
  /** Each contract's address and the block it was created in. */
  contracts: Record<DeployedContractName, { address: Address; blockNumber: number }>
  /** Test tokens by symbol. */
  tokens: Record<string, Address>
  /** The token of UserDeposit, ServiceRegistry and MonitoringService. */
  serviceToken: Address
  rpcUrl: string
}

/**
 * A node's whole store (`exportState()`, GET /api/v1/_state/export), integers as bigints: what `importState()` takes
 * back. Keep it whole: only what says whose it is and how recent is spelled out, the rest is the node's own records.
 */
export type StorageDump = {
  format: 'sluice-dump'
  meta: {
    chainId: bigint
    registry: Address
    address: Address
    schemaVersion: number
    syncedBlock: bigint
    /** Hashes of the last synced blocks, checked at the next start for a reorg meanwhile. */
    recentBlocks?: { number: bigint; hash: Hex; timestamp?: bigint }[]
    createdAt: number
  }
  [records: string]: unknown
}

/** The node's options as a page gives them: the `sluice serve` flags in camelCase. */
export type NodeOptions = {
  /**
   * The chain's JSON-RPC endpoint (http, https, ws or wss), or several (a list, or separated by commas) used in this
   * order: the next while one fails, the first again once it answers. Without it, the page's EIP-1193 provider.
   */
  rpc?: string | readonly string[]
  /** The node's key; without it, the one kept in IndexedDB (generated on the first start). */
  key?: Hex
  /** Protects the kept key at rest (docs/decisions/0027); without it the key is kept wrapped by a non-extractable WebCrypto key. */
  passphrase?: string
  /** libp2p relays (`sluice relay` prints them); without any, the node reaches nodes of this origin only. */
  relay?: string[]
  /**
   * Dial the direct addresses that headless peers announce (`sluice serve --p2p-listen`) on loopback and private
   * networks too: a devnet, a LAN of one's own. Off by default: an announcement must not aim the page at hosts of its
   * user's network; a peer's public direct address is dialled either way, first, with the relays as the fallback
   * (docs/transport.md, docs/decisions/0066). Only with `relay`.
   */
  p2pAllowPrivate?: boolean
  /** `production` (default) or `development`, which serves the testing endpoints (`mint`). */
  environment?: Environment
  /** The request channel's name (tests use their own). */
  apiChannel?: string
  /**
   * What the node writes to the page's console: `debug`, `info` (its start, sync, channels and payments), `warn`
   * (default: what it retries, a failed payment), `error` (what needs a person) or `silent`.
   */
  logLevel?: LogThreshold
  /** Blocks on top of a block before its events count (5 by default; 0 suits a local dev chain). */
  confirmations?: Blocks
  /**
   * The most the node offers per gas for its transactions, in wei as viem's `maxFeePerGas` (`parseGwei('50')`): never
   * exceeded; a transaction with a deadline that needs more raises the notification `transaction_at_risk` in time. No cap
   * by default.
   */
  maxFeePerGas?: bigint
  /** Milliseconds between looks at the chain (1000 by default). */
  pollingInterval?: number
  /** Reveal timeout of new channels, in blocks (50 by default). */
  defaultRevealTimeout?: Blocks
  /** Settle timeout of channels this node opens, in blocks (500 by default). */
  defaultSettleTimeout?: Blocks
  /** Where to ask for the secret of a payment started with only its hash (docs/rest-api.md, secret resolver). */
  resolverEndpoint?: string
  /** A URL answering `{"latest": "0.2.0", "security": ["0.1.0"]}` behind the version notifications. */
  releaseFeedUrl?: string
  /** Put each payment's secret, encrypted to the target, in its LockedTransfer's metadata (on by default). */
  encryptSecret?: boolean
  /** Ask the monitoring services to guard the node's channels while it is away (off by default). */
  enableMonitoring?: boolean
  /** What each monitoring request offers, in the service token's smallest unit (5 * 10^18 by default). */
  monitoringReward?: bigint
  /**
   * What the node charges for mediating a payment, by token address (`--flat-fee TOKEN AMOUNT`): a flat fee in the
   * token's smallest unit, half of it on each of the payment's two channels. None by default.
   */
  flatFee?: Readonly<Record<Address, bigint>>
  /** The fee of one mediation in parts per million of the amount, by token, 0n to 1_000_000n (`--proportional-fee`). */
  proportionalFee?: Readonly<Record<Address, bigint>>
  /** The imbalance penalty at its worst, in ppm of a channel's capacity, by token, 0n to 50_000n (`--proportional-imbalance-fee`). */
  proportionalImbalanceFee?: Readonly<Record<Address, bigint>>
  /** A mediation fee is never negative (true by default; `--no-cap-mediation-fees` is false). */
  capMediationFees?: boolean
  /**
   * The most a payment may cost beyond its amount in mediation fees, the estimated fee with its margin, in its token's
   * smallest unit (`--pathfinding-max-fee`): a route that would cost more is not taken. 5n * 10n ** 16n by default.
   */
  pathfindingMaxFee?: bigint
  /**
   * How the node finds routes for a mediated payment (`--routing-mode`, docs/decisions/0073): `local` (the default)
   * over the channels it follows, by deposits, announcing its channels to `pathfindingServiceAddress` if given; `pfs`
   * asks the pathfinding service (paid from the UserDeposit) and routes locally while it does not answer; `private`
   * announces nothing and routes locally.
   */
  routingMode?: 'pfs' | 'private' | 'local'
  /** The pathfinding service's URL, or `auto` for one of the ServiceRegistry's (the default with `routingMode: 'pfs'`). */
  pathfindingServiceAddress?: string
  /** How many routes to ask the pathfinding service for, 1 to 25 (3 by default). */
  pathfindingMaxPaths?: number
  /** Blocks until a new IOU session with the pathfinding service expires (200000 by default). */
  pathfindingIouTimeout?: Blocks
  /** A backup server (`sluice backup-server`, docs/decisions/0034); a restore after the storage is wiped needs `key` too. */
  backupUrl?: string
  backup?: BackupTunables
}
