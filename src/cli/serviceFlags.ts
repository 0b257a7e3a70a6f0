import { integerFlag, stringFlag, type FlagSpec } from './args.ts'
import { logFlags } from './logFlags.ts'
import { parseUrl, raidenNames, serveFlags } from './serve.ts'

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

/** --database and --lease-duration: the store on PostgreSQL, shared by several instances (docs/decisions/0077). */
export function serviceDatabaseFlags() {
  return {
    database: {
      description:
        "the service's store on PostgreSQL instead of --data-dir: several instances on one database share it, all answer the API, the one holding the lease does the service's work and another takes over when it stops (a password is better in PGPASSWORD or ~/.pgpass than in the URL)",
      valueName: 'URL',
      expected: 'a postgres:// URL',
      // As src/storage/postgres/pool.ts's parseDatabaseUrl, without loading the PostgreSQL client for every --help.
      parse: (raw: string) => parseUrl(raw, ['postgres:', 'postgresql:']),
      default: undefined,
    } as FlagSpec<string, false>,
    leaseDuration: integerFlag({
      description: "with --database: how long the lease lasts after its last renewal; a stopped leader's work is taken over within that",
      valueName: 'MS',
      min: 300,
      max: 3_600_000,
      default: 10_000,
    }),
  }
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

/** How it follows the chain and pays for its transactions, and its log. */
export const serviceChainFlags = {
  confirmations: serveFlags.confirmations,
  maxFeePerGas: serveFlags.maxFeePerGas,
  pollingInterval: integerFlag({ description: 'milliseconds between looks at the chain', valueName: 'MS', min: 10, max: 600_000, default: 1_000 }),
  ...logFlags,
}
