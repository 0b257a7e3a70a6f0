import type { BackupStore } from '../backup/server/store.ts'
import type { Metrics } from './registry.ts'

/** `sluice backup-server`: the copies it holds and their size, read from the store's own totals when scraped. */
export function observeBackupStore(metrics: Metrics, store: Pick<BackupStore, 'copies' | 'bytes'>): void {
  metrics.gauge('backup_copies', 'the sealed copies held (the newest per address)', [], function collect() {
    this.set(store.copies)
  })
  metrics.gauge('backup_bytes', "the copies' size together, in bytes (what --max-total-bytes bounds)", [], function collect() {
    this.set(store.bytes)
  })
}
