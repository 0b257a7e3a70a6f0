import type pg from 'pg'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { LeaseLostError } from '../storage.ts'
import { migrate } from './migrations.ts'

// Node only. The lease of docs/decisions/0075: one holder at a time, its time kept by the database's clock.

const MIGRATIONS = [
  {
    version: 1,
    sql: `CREATE TABLE sluice_leases (
      name text PRIMARY KEY,
      holder text NOT NULL,
      epoch bigint NOT NULL,
      expires_at timestamptz NOT NULL,
      taken_at timestamptz NOT NULL DEFAULT now())`,
  },
]

export type LeaseOptions = {
  /** What the lease is for: one name per thing that must have one holder (`monitor:<chain>:<contract>:<address>`). */
  name: string
  /** How long a renewal keeps the lease: a dead holder's lease is taken this long after its last renewal at most. */
  durationMs: number
  /** This instance's id (unique among the instances): `host/pid/random` unless told. */
  holder?: string
  /** Told when a renewal fails (the database is unreachable): the lease stays believed held until it runs out. */
  onError?(error: Error): void
}

export type LeaseRecord = { holder: string; epoch: bigint; expiresAt: Date }

/**
 * A lease in the table `sluice_leases`, as Eclair keeps one on PostgreSQL: the instance that holds it renews it every
 * third of its duration; another takes it once it has run out by the database's clock. Writes that only the holder
 * may make call `check` in their own transaction: it locks the lease's row (FOR SHARE), so a takeover waits until
 * that transaction ends, and it fails unless this instance holds the lease in the tenure the caller began in. Two
 * writers therefore never interleave, whatever the processes' clocks say.
 *
 * Locally, `held` is believed from the moment a renewal was sent until one duration later (by the process's
 * monotonic clock), never longer: the database set the expiry a duration after it received that renewal, so an
 * instance stops believing it holds the lease no later than the database stops saying so.
 */
export class Lease {
  readonly name: string
  readonly holder: string
  private readonly durationMs: number
  private heldUntil = 0
  private tenure: bigint | undefined
  private renewTimer: ReturnType<typeof setTimeout> | undefined
  private expiryTimer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private wasHeld = false
  private readonly listeners = new Set<(held: boolean) => void>()
  private attempt: Promise<void> | undefined
  private expiring = false

  private constructor(
    private readonly pool: pg.Pool,
    private readonly options: LeaseOptions,
  ) {
    if (!(options.durationMs >= 300)) throw new Error(`a lease lasts 300 ms at least (${options.durationMs})`)
    this.name = options.name
    this.durationMs = options.durationMs
    this.holder = options.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`
  }

  /** Creates the table if needed, tries once to take the lease, then keeps trying (or renewing) in the background. */
  static async start(pool: pg.Pool, options: LeaseOptions): Promise<Lease> {
    await migrate(pool, 'lease', MIGRATIONS)
    const lease = new Lease(pool, options)
    await lease.tryTake()
    lease.schedule()
    return lease
  }

  /** Who holds the lease `name` by the database (possibly run out: compare `expiresAt` with the database's clock). */
  static async current(pool: pg.Pool, name: string): Promise<LeaseRecord | undefined> {
    await migrate(pool, 'lease', MIGRATIONS)
    const { rows } = await pool.query<{ holder: string; epoch: string; expires_at: Date }>(
      'SELECT holder, epoch, expires_at FROM sluice_leases WHERE name = $1',
      [name],
    )
    const row = rows[0]
    return row && { holder: row.holder, epoch: BigInt(row.epoch), expiresAt: row.expires_at }
  }

  /** Whether this instance holds the lease, as far as it can know without asking. */
  get held(): boolean {
    return !this.stopped && this.tenure !== undefined && performance.now() < this.heldUntil
  }

  /** The tenure (the lease's epoch when this instance took it), while held: a fencing token. */
  get epoch(): bigint | undefined {
    return this.held ? this.tenure : undefined
  }

  /** Calls `listener` with true when the lease is taken, false when it is lost (or stopped while held). */
  onChange(listener: (held: boolean) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Resolves once this instance holds the lease; rejects when `signal` aborts or the lease is stopped. */
  waitUntilHeld(signal?: AbortSignal): Promise<void> {
    if (this.held) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const done = () => {
        off()
        signal?.removeEventListener('abort', aborted)
      }
      const off = this.onChange((held) => {
        if (held) {
          done()
          resolve()
        } else if (this.stopped) {
          done()
          reject(new LeaseLostError(`the lease ${this.name} was stopped`))
        }
      })
      const aborted = () => {
        done()
        reject(signal?.reason ?? new Error('aborted'))
      }
      signal?.addEventListener('abort', aborted, { once: true })
    })
  }

  /**
   * Inside a transaction on `client`: fails with LeaseLostError unless this instance holds the lease in tenure
   * `epoch` (the current one unless told), and keeps anyone from taking it until the transaction ends.
   */
  async check(client: pg.ClientBase, epoch: bigint | undefined = this.tenure): Promise<void> {
    if (epoch === undefined || this.stopped) throw new LeaseLostError(`this instance does not hold the lease ${this.name}`)
    const { rows } = await client.query('SELECT 1 FROM sluice_leases WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > now() FOR SHARE', [
      this.name,
      this.holder,
      epoch.toString(),
    ])
    if (rows.length === 0) {
      this.lose()
      throw new LeaseLostError(`the lease ${this.name} is no longer held by this instance (${this.holder})`)
    }
  }

  /** Stops renewing and gives the lease up if held, so a standby takes it at its next try. */
  async stop(): Promise<void> {
    if (this.stopped) return
    const wasHeld = this.tenure !== undefined
    this.stopped = true
    clearTimeout(this.renewTimer)
    clearTimeout(this.expiryTimer)
    await this.attempt?.catch(() => {})
    if (wasHeld)
      await this.pool
        .query('UPDATE sluice_leases SET expires_at = now() WHERE name = $1 AND holder = $2 AND epoch = $3', [this.name, this.holder, this.tenure!.toString()])
        .catch(() => {})
    this.tenure = undefined
    this.notify()
  }

  private schedule(): void {
    if (this.stopped) return
    this.renewTimer = setTimeout(() => {
      this.attempt = this.tryTake().finally(() => this.schedule())
    }, this.durationMs / 3)
    this.renewTimer.unref?.()
  }

  /** One renewal, or one try to take the lease: an upsert that only succeeds for its holder or once it ran out. */
  private async tryTake(): Promise<void> {
    const sentAt = performance.now()
    let epoch: bigint | undefined
    try {
      const { rows } = await this.pool.query<{ epoch: string }>(
        `INSERT INTO sluice_leases AS l (name, holder, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
           epoch = l.epoch + CASE WHEN l.holder = EXCLUDED.holder THEN 0 ELSE 1 END,
           taken_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.taken_at ELSE now() END
         WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
         RETURNING epoch`,
        [this.name, this.holder, this.durationMs],
      )
      epoch = rows[0] ? BigInt(rows[0].epoch) : undefined
    } catch (e) {
      // Unreachable database: keep the belief until it runs out by the local clock (the expiry timer), no longer.
      this.options.onError?.(e as Error)
      return
    }
    if (this.stopped) return
    if (epoch === undefined) {
      if (this.tenure !== undefined) this.lose()
      return
    }
    if (this.tenure !== undefined && this.tenure !== epoch) this.lose()
    this.tenure = epoch
    this.heldUntil = sentAt + this.durationMs
    this.armExpiry()
    this.notify()
  }

  /** The belief's end, looked at when it comes (a timer may fire a little early: libuv counts whole milliseconds). */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer)
    this.expiryTimer = setTimeout(() => this.expire(), Math.max(0, this.heldUntil - performance.now()) + 1)
    this.expiryTimer.unref?.()
  }

  /**
   * The belief ran out. Often the process stalled (a long synchronous task, a loaded machine) with a renewal's answer
   * unread or a renewal not sent: one more renewal decides, within one duration. Its epoch back unchanged means nobody
   * else held the lease meanwhile (a change of holder bumps it), and the belief starts again from its send; anything
   * else (another holder, no answer) is a loss. Meanwhile `held` says false, and writes are checked by the database.
   */
  private expire(): void {
    if (this.stopped || this.tenure === undefined || this.expiring) return
    this.expiring = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.durationMs)
      timer.unref?.()
    })
    void Promise.race([this.tryTake(), deadline]).then(() => {
      clearTimeout(timer)
      this.expiring = false
      if (performance.now() >= this.heldUntil) this.lose()
      else if (this.tenure !== undefined) this.armExpiry()
    })
  }

  private lose(): void {
    if (this.tenure === undefined) return
    this.tenure = undefined
    this.heldUntil = 0
    clearTimeout(this.expiryTimer)
    this.notify()
  }

  private notify(): void {
    const held = this.held
    if (held === this.wasHeld) return
    this.wasHeld = held
    for (const listener of this.listeners) listener(held)
  }
}
