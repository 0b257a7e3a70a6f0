import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { BackupLimits } from '../backup/server/app.ts'
import type { BackupStore } from '../backup/server/store.ts'
import { answerAsked, formatFlags, integerFlag, parseFlags, stringFlag, type FlagSpec } from './args.ts'
import type { Command } from './command.ts'
import { listen } from './httpServer.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { metricsFlags, startMetrics } from './metricsFlags.ts'
import { nextSignal } from './processSignals.ts'
import { ApiPortInUseError } from './servedNode.ts'
import { MissingFlagError, parseHostPort, parseUrl, StartupError } from './serve.ts'
import { hasCode } from '../errors.ts'

const MIB = 1024 * 1024

export const backupServerFlags = {
  dataDir: stringFlag({ description: 'where the copies are kept (LevelDB, created if missing)', valueName: 'DIR' }),
  database: {
    description:
      'keep the copies on PostgreSQL instead of --data-dir (the table backup_copies): several backup servers on one database answer alike (a password is better in PGPASSWORD or ~/.pgpass than in the URL)',
    valueName: 'URL',
    expected: 'a postgres:// URL',
    parse: (raw: string) => parseUrl(raw, ['postgres:', 'postgresql:']),
    default: undefined,
  } as FlagSpec<string, false>,
  api: {
    description: 'where the backup API listens (http://HOST:PORT/backup/v1)',
    valueName: 'HOST:PORT',
    expected: 'HOST:PORT (port 0 picks a free one)',
    parse: (raw: string) => (parseHostPort(raw) ? raw : undefined),
    default: '127.0.0.1:5300',
  } as FlagSpec<string, true>,
  maxCopyBytes: integerFlag({
    description: 'the largest copy, in bytes of ciphertext (413 beyond)',
    valueName: 'BYTES',
    min: 1024,
    max: 256 * MIB,
    default: MIB,
  }),
  maxTotalBytes: integerFlag({
    description: 'what all copies together may take; beyond it a push that grows the store is 507',
    valueName: 'BYTES',
    min: MIB,
    max: Number.MAX_SAFE_INTEGER,
    default: 1024 * MIB,
  }),
  pushesPerMinute: integerFlag({ description: 'pushes a minute per owner address (429 beyond)', valueName: 'N', min: 1, max: 1_000_000, default: 60 }),
  requestsPerMinute: integerFlag({ description: 'requests a minute per client IP address (429 beyond)', valueName: 'N', min: 1, max: 1_000_000, default: 600 }),
  ...metricsFlags,
  ...logFlags,
}

const usage = `Usage: sluice backup-server (--data-dir DIR | --database URL) [flags]

Keeps the newest sealed copy of each node's state, off the browser (docs/decisions/0032-off-browser-backup.md).
A copy is encrypted by its owner and signed with the node's key: the server checks the signature and keeps the copy
if its version is above the one it holds (409 otherwise), on disk (fsync) before it answers. Only the owner may
fetch it back (a signed, timestamped request). Any web page may call it (CORS for every origin): the owner's
signature decides, not the origin. It has no TLS: put a TLS proxy in front of it beyond loopback.

  PUT /backup/v1/copies/<address>   a copy (JSON)       GET /backup/v1/copies/<address>   the newest, to its owner
  GET /backup/v1/status             what it holds and its limits

With --database (PostgreSQL) several backup servers share the copies (docs/decisions/0077): each push is decided in
the transaction that writes it, so two servers never both accept a copy, nor an older one after a newer.

Runs until Ctrl-C or SIGTERM.

Flags:
${formatFlags(backupServerFlags)}`

export type ServedBackups = {
  /** The API's base URL: http://host:port/backup/v1. */
  url: string
  store: BackupStore
  limits: BackupLimits
  /** Stops accepting requests (open ones get `graceMs`), then closes the store. */
  close(graceMs?: number): Promise<void>
}

/** Opens the store in `<dataDir>/copies` (or on PostgreSQL) and serves the backup API over HTTP; `sluice devnet` runs one too. */
export async function serveBackups({
  dataDir,
  database,
  host,
  port,
  limits = {},
  onInternalError,
}: {
  dataDir?: string | undefined
  /** postgres://...: instead of `dataDir`, a store several servers share. */
  database?: string | undefined
  host: string
  port: number
  limits?: Partial<BackupLimits>
  onInternalError?(error: unknown): void
}): Promise<ServedBackups> {
  const [{ createBackupApp, DEFAULT_BACKUP_LIMITS, BACKUP_BASE_PATH }, { openBackupStore }, { loadNativeSecp256k1 }] = await Promise.all([
    import('../backup/server/app.ts'),
    import('../backup/server/store.ts'),
    import('./nativeSecp256k1.ts'),
  ])
  // Every push and fetch recovers a signer: libsecp256k1 does it several times faster than JS.
  const curve = await loadNativeSecp256k1()
  let store: BackupStore
  if (database) store = await (await import('../backup/server/postgresStore.ts')).openPostgresBackupStore(database)
  else if (dataDir) {
    await mkdir(dataDir, { recursive: true })
    store = await openBackupStore(join(dataDir, 'copies'))
  } else throw new Error('serveBackups needs a dataDir or a database')
  const app = createBackupApp({ store, curve, limits, ...(onInternalError ? { onInternalError } : {}) })
  try {
    const server = await listen(app.fetch, { host, port })
    return {
      url: `${server.url}${BACKUP_BASE_PATH}`,
      store,
      limits: { ...DEFAULT_BACKUP_LIMITS, ...limits },
      close: async (graceMs = 5_000) => {
        await server.close(graceMs)
        await store.close()
      },
    }
  } catch (e) {
    await store.close()
    if (hasCode(e, 'ADDRESS_IN_USE')) throw new ApiPortInUseError(host, port)
    throw e
  }
}

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, backupServerFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const { dataDir: dir, database, api, logLevel, logJson, logConfig, metrics: metricsFlag, ...limits } = parsed.values
  const log = loggerFromFlags({ logLevel, logJson, logConfig })
  if (!dir && !database) throw new MissingFlagError('--data-dir')
  const dataDir = dir ? resolve(dir) : undefined
  const { host, port } = parseHostPort(api)!
  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  const metrics = await startMetrics(metricsFlag, 'backup-server', log)
  try {
    let served: ServedBackups
    try {
      served = await serveBackups({
        dataDir,
        database,
        host,
        port,
        limits,
        onInternalError: (error) => log.error('internal error (answered 500)', { error }),
      })
    } catch (e) {
      if ((e as { code?: string }).code === 'BACKUP_STORE') throw new StartupError(`${database ? '--database' : `--data-dir ${dir}`}: ${(e as Error).message}`)
      throw e
    }
    if (metrics) (await import('../metrics/backupMetrics.ts')).observeBackupStore(metrics.metrics, served.store)
    const l = served.limits
    log.info('Backup server: {url}', { url: served.url })
    log.info('Data: {location} ({copies} copies, {bytes} bytes)', { location: served.store.location, copies: served.store.copies, bytes: served.store.bytes })
    log.info(
      'Limits: a copy up to {maxCopyBytes} bytes, {maxTotalBytes} bytes in all; {pushesPerMinute} pushes a minute per address, {requestsPerMinute} requests a minute per client',
      { maxCopyBytes: l.maxCopyBytes, maxTotalBytes: l.maxTotalBytes, pushesPerMinute: l.pushesPerMinute, requestsPerMinute: l.requestsPerMinute },
    )
    log.info('Press Ctrl-C to stop.')
    const received = await signal.received
    log.info('{signal}: stopping', { signal: received })
    await served.close()
    return 0
  } finally {
    await metrics?.server.close()
    signal.dispose()
  }
}

export const backupServerCommand: Command = { name: 'backup-server', usage, run }
