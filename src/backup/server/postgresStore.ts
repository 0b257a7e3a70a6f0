// Node only: the backup server's store on PostgreSQL (docs/decisions/0077), shared by several backup servers.
import type pg from 'pg'
import type { Address, Hex } from 'viem'
import { migrate } from '../../storage/postgres/migrations.ts'
import { inTransaction, openPool, redactDatabaseUrl } from '../../storage/postgres/pool.ts'
import { BackupStoreError, type BackupStore, type CopyRecord } from './store.ts'

const MIGRATIONS = [
  {
    version: 1,
    // version: a uint256 as the envelope has it; copy: the JSON byte for byte as served.
    sql: `CREATE TABLE backup_copies (owner text PRIMARY KEY, version numeric(78) NOT NULL, bytes integer NOT NULL, hash text NOT NULL, copy text NOT NULL)`,
  },
]

type Row = { version: string; bytes: number; hash: Hex }

/** How often the totals (copies, bytes) are read again for the status: the other servers write too. */
const TOTALS_MS = 1_000

/**
 * The newest copy of each address in the table `backup_copies`: a push is one transaction that takes the store's
 * advisory lock, reads the copy held and the bytes of all copies, lets the server decide (version above, size limits),
 * and writes with `WHERE version < new`, so two servers can never both accept a copy, nor an older one after a newer.
 */
export async function openPostgresBackupStore(url: string): Promise<BackupStore> {
  const pool = openPool(url, { name: 'sluice backup-server' })
  const location = redactDatabaseUrl(url)
  const failed = (what: string) => (e: unknown) => {
    throw new BackupStoreError(`${what} failed: ${(e as Error).message}`, { cause: e })
  }
  let copies = 0
  let bytes = 0
  const readTotals = async (client: pg.ClientBase | pg.Pool = pool) => {
    const { rows } = await client.query<{ copies: string; bytes: string }>('SELECT count(*) AS copies, coalesce(sum(bytes), 0) AS bytes FROM backup_copies')
    copies = Number(rows[0]!.copies)
    bytes = Number(rows[0]!.bytes)
    return bytes
  }
  try {
    await migrate(pool, 'backup', MIGRATIONS)
    await readTotals()
  } catch (e) {
    await pool.end().catch(() => {})
    throw new BackupStoreError(`cannot open the backup store in ${location}: ${(e as Error).message}`, { cause: e })
  }
  const timer = setInterval(() => void readTotals().catch(() => {}), TOTALS_MS)
  timer.unref?.()
  const recordOf = (row: Row | undefined): CopyRecord | undefined => row && { version: BigInt(row.version), bytes: row.bytes, hash: row.hash }
  const upsert = (client: pg.ClientBase, address: Address, record: CopyRecord, json: string) =>
    client.query(
      `INSERT INTO backup_copies (owner, version, bytes, hash, copy) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (owner) DO UPDATE SET version = EXCLUDED.version, bytes = EXCLUDED.bytes, hash = EXCLUDED.hash, copy = EXCLUDED.copy
       WHERE backup_copies.version < EXCLUDED.version`,
      [address, record.version.toString(), record.bytes, record.hash, json],
    )
  const store: BackupStore = {
    location,
    get copies() {
      return copies
    },
    get bytes() {
      return bytes
    },
    async record(address) {
      const { rows } = await pool
        .query<Row>('SELECT version, bytes, hash FROM backup_copies WHERE owner = $1', [address])
        .catch(failed('reading a copy record'))
      return recordOf(rows[0])
    },
    async read(address) {
      const { rows } = await pool.query<{ copy: string }>('SELECT copy FROM backup_copies WHERE owner = $1', [address]).catch(failed('reading a copy'))
      return rows[0]?.copy
    },
    async write(address, record, json) {
      await store.writeChecked!(address, record, json, () => true)
    },
    async writeChecked(address, record, json, decide) {
      let decided: unknown
      const written = await inTransaction(pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('backup_copies'))")
        const { rows } = await client.query<Row>('SELECT version, bytes, hash FROM backup_copies WHERE owner = $1', [address])
        const total = await readTotals(client)
        try {
          if (!decide(recordOf(rows[0]), total)) return false
        } catch (e) {
          // The server's refusal (409, 507): the transaction ends without a write, and the error goes back as it is.
          decided = e
          return false
        }
        const result = await upsert(client, address, record, json)
        return result.rowCount === 1
      }).catch(failed('writing a copy'))
      if (decided) throw decided
      if (written) await readTotals().catch(() => {})
      return written
    },
    close: async () => {
      clearInterval(timer)
      await pool.end().catch(() => {})
    },
  }
  return store
}
