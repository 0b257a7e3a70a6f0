import { resolve } from 'node:path'
import type { ServiceDatabaseConfig } from '../monitor/serviceDatabase.ts'
import { integerFlag, stringFlag, type FlagSpec } from './args.ts'
import { logFlags } from './logFlags.ts'
import { metricsFlags } from './metricsFlags.ts'
import { databaseFlags, MissingFlagError, parseUrl, raidenNames, serveFlags } from './serve.ts'

// The flags `sluice monitor` and `sluice pathfinding` share, in the order their --help lists them.

/** Its chain and its key (as `sluice serve` takes them), and where its store lives. */
export const serviceAccountFlags = {
  rpc: serveFlags.rpc,
  deployment: serveFlags.deployment,
  key: serveFlags.key,
  keystore: serveFlags.keystore,
  keystorePath: serveFlags.keystorePath,
  address: serveFlags.address,
  passwordFile: serveFlags.passwordFile,
  dataDir: stringFlag({ description: "where the service's LevelDB store lives (created if missing)", valueName: 'DIR', aliases: raidenNames.dataDir }),
  ...serviceDatabaseFlags(),
}

/** --database and --lease-seconds: the store on PostgreSQL, shared by several instances (docs/decisions/0077). */
export function serviceDatabaseFlags() {
  return databaseFlags({
    database:
      "the service's store on PostgreSQL instead of --data-dir: several instances on one database share it, all answer the API, the one holding the lease does the service's work and another takes over when it stops (a password is better in PGPASSWORD or ~/.pgpass than in the URL)",
    lease: "with --database: how long the lease lasts after its last renewal (renewed every third of it); a stopped leader's work is taken over within that",
    defaultSeconds: 10,
  })
}

/**
 * Where a service's store is, from --data-dir or --database (which wins): what the service is given, and how its log
 * and its errors name the place (a database URL without its password). MissingFlagError when neither is given.
 */
export async function serviceStoreOf(flags: {
  dataDir?: string | undefined
  database?: string | undefined
  leaseSeconds: number
}): Promise<{ store: { dataDir: string } | { database: ServiceDatabaseConfig }; place: string }> {
  if (flags.database) {
    const { redactDatabaseUrl } = await import('../storage/postgres/pool.ts')
    return { store: { database: { url: flags.database, leaseMs: flags.leaseSeconds * 1000 } }, place: redactDatabaseUrl(flags.database) }
  }
  if (!flags.dataDir) throw new MissingFlagError('--data-dir')
  const dataDir = resolve(flags.dataDir)
  return { store: { dataDir }, place: dataDir }
}

/** --url: what it publishes in the ServiceRegistry; `description` says so for the service. */
export const serviceUrlFlag = (description: string) =>
  ({
    description,
    valueName: 'URL',
    expected: 'an http(s) URL',
    parse: (raw: string) => parseUrl(raw, ['http:', 'https:']),
    default: undefined,
  }) as FlagSpec<string, false>

/** How it follows the chain and pays for its transactions, its metrics and its log. */
export const serviceChainFlags = {
  confirmations: serveFlags.confirmations,
  maxFeePerGas: serveFlags.maxFeePerGas,
  pollingInterval: integerFlag({ description: 'milliseconds between looks at the chain', valueName: 'MS', min: 10, max: 600_000, default: 1_000 }),
  ...metricsFlags,
  ...logFlags,
}
