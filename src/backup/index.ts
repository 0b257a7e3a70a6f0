/**
 * Sealed copies of a node's state on an off-browser backup server (docs/decisions/0032-off-browser-backup.md):
 * the envelope, its crypto and the client calls. Browser-safe; the server is src/backup/server/ and
 * `sluice backup-server`.
 */
export { backupKey, type BackupKey } from './key.ts'
export { seal, open, verifyEnvelope, type SealParameters, type Opened } from './seal.ts'
export { FORMAT, DEFAULT_MAX_COPY_BYTES, MAX_VERSION, envelopeToJson, parseEnvelope, type Envelope, type EnvelopeJson } from './format.ts'
export {
  pushBackup,
  fetchBackup,
  backupServerStatus,
  type BackupRequestOptions,
  type FetchBackupOptions,
  type PushResult,
  type BackupServerStatus,
} from './client.ts'
export * from './errors.ts'
