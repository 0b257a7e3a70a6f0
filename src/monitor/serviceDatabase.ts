import type pg from 'pg'
import { SluiceError } from '../errors.ts'
import type { Lease } from '../storage/postgres/lease.ts'
import { errorLine, type ServiceLog } from './serviceAccount.ts'

// What the two service processes (the monitoring service, the pathfinding service) do alike on PostgreSQL
// (docs/decisions/0077): several instances share one database; all answer the API, one at a time (the lease
// holder) does what must happen once.

/** `--database`: the services' store on PostgreSQL instead of LevelDB, shared by every instance of the service. */
export type ServiceDatabaseConfig = {
  /** postgres://... */
  url: string
  /** How long the lease lasts after its last renewal (default 10 s): a dead leader's work is taken over within that. */
  leaseMs?: number
  /** Milliseconds between looks for the other instances' writes when no notification came (default 1000). */
  pollMs?: number
}

export const DEFAULT_LEASE_MS = 10_000

/** The database of a service: its pool and its lease (started: this instance may hold it already). */
export type ServiceDatabase = { pool: pg.Pool; lease: Lease; close(): Promise<void> }

/** Opens the pool and starts the lease `leaseName` (one per service account: `monitor:<chain>:<contract>:<address>`). */
export async function openServiceDatabase(config: ServiceDatabaseConfig, p: { name: string; leaseName: string; log: ServiceLog }): Promise<ServiceDatabase> {
  const [{ openPool, checkReachable }, { Lease }] = await Promise.all([import('../storage/postgres/pool.ts'), import('../storage/postgres/lease.ts')])
  const pool = openPool(config.url, { name: p.name, onIdleError: (error) => p.log(`database: ${errorLine(error)}`, 'warn') })
  try {
    await checkReachable(pool, config.url)
    const lease = await Lease.start(pool, {
      name: p.leaseName,
      durationMs: config.leaseMs ?? DEFAULT_LEASE_MS,
      onError: (error) => p.log(`lease: ${errorLine(error)}`, 'warn'),
    })
    return {
      pool,
      lease,
      close: async () => {
        await lease.stop()
        await pool.end().catch(() => {})
      },
    }
  } catch (e) {
    await pool.end().catch(() => {})
    throw e
  }
}

/** The instance lost the lease while leading: another took the service's work over, this one stops (its supervisor starts it again as a standby). */
export class LeadershipLostError extends SluiceError {
  override name = 'LeadershipLostError' as const
  override readonly code = 'LEADERSHIP_LOST' as const
}

/**
 * Leads when the lease is held: `lead` runs at once when this instance holds it, or once it takes it over (after
 * the holder stopped or died); `start` resolves as soon as it is known which (a standby answers the API meanwhile).
 * Losing the lease while leading calls `failed`: the service stops rather than go on beside the new leader, as
 * Eclair does. Without a lease (LevelDB), `lead` simply runs.
 */
export class Leadership {
  private leading = false
  private stopped = false
  private readonly abort = new AbortController()
  private offChange: (() => void) | undefined

  constructor(
    private readonly p: {
      lease: Lease | undefined
      kind: string
      lead(): Promise<void>
      failed(error: Error): void
      log: ServiceLog
    },
  ) {}

  /** Whether this instance does the service's work (always, without a lease). */
  get isLeading(): boolean {
    return this.leading
  }

  /** The instance's role as the API shows it; undefined without a lease. */
  role(): { leading: boolean; instance: string } | undefined {
    const lease = this.p.lease
    return lease && { leading: this.leading, instance: lease.holder }
  }

  async start(): Promise<void> {
    const { lease } = this.p
    if (!lease) return this.become()
    this.offChange = lease.onChange((held) => {
      if (!held && this.leading && !this.stopped)
        this.p.failed(new LeadershipLostError(`this instance (${lease.holder}) lost the ${this.p.kind}'s lease: another instance leads now`))
    })
    if (lease.held) return this.become()
    this.p.log(`standby: another instance holds the ${this.p.kind}'s lease; this one (${lease.holder}) answers the API and takes over when it runs out`, 'info')
    void lease
      .waitUntilHeld(this.abort.signal)
      .then(async () => {
        if (this.stopped) return
        this.p.log(`took over the ${this.p.kind}'s lease: this instance (${lease.holder}) leads now`, 'info')
        await this.become()
      })
      .catch((error: unknown) => {
        if (!this.stopped) this.p.failed(error as Error)
      })
  }

  stop(): void {
    this.stopped = true
    this.abort.abort()
    this.offChange?.()
  }

  private async become(): Promise<void> {
    this.leading = true
    await this.p.lead()
  }
}

/** What a service's store offers to be opened on either engine. */
export type ServiceStoreOpeners<S> = {
  /** LevelDB in `dataDir` (the default). */
  open(dataDir: string): Promise<S>
  /** PostgreSQL: the store shared by the service's instances, its batches checking `lease`. */
  openPostgres(pool: pg.Pool, options: { lease: Lease; pollMs?: number; onError(error: Error): void }): Promise<S>
}

/**
 * Opens a service's store where its configuration says: in the database (`database`, with the lease `leaseName`)
 * or in `dataDir`. On failure, what it opened is closed again and the error thrown.
 */
export async function openServiceStorage<S>(
  config: { database?: ServiceDatabaseConfig | undefined; dataDir?: string | undefined },
  p: { name: string; leaseName: string; log: ServiceLog; store: ServiceStoreOpeners<S> },
): Promise<{ store: S; database: ServiceDatabase | undefined }> {
  let database: ServiceDatabase | undefined
  try {
    if (config.database) {
      database = await openServiceDatabase(config.database, { name: p.name, leaseName: p.leaseName, log: p.log })
      const store = await p.store.openPostgres(database.pool, {
        lease: database.lease,
        ...(config.database.pollMs !== undefined ? { pollMs: config.database.pollMs } : {}),
        onError: (error) => p.log(`database: ${errorLine(error)}`, 'warn'),
      })
      return { store, database }
    }
    if (config.dataDir === undefined) throw new Error(`${p.name} needs a dataDir or a database`)
    return { store: await p.store.open(config.dataDir), database }
  } catch (e) {
    await database?.close()
    throw e
  }
}
