import { fetchBackup, pushBackup } from '../../../backup/client.ts'
import type { Envelope } from '../../../backup/format.ts'
import { backupKey, type BackupKey } from '../../../backup/key.ts'
import { open, seal } from '../../../backup/seal.ts'
import { jsonStringify } from '../../../storage/json.ts'
import type { NodeState } from '../../../protocol/state/types.ts'
import type { NodeClient } from '../../actions/client.ts'
import type { BackupTunables } from '../../nodeConfig.ts'
import type { Service } from '../service.ts'
import { buildPayload, readPayload, type RecoveryPoint } from './payload.ts'
import type { Restored } from './restore.ts'

/** The backup service's settings: the server (`backupUrl`) and the tunables of NodeConfig.backup. */
export type BackupOptions = BackupTunables & {
  /** The backup server, `http(s)://host:port/backup/v1`. */
  url: string
}

/** What GET /api/v1/settings (`backup`) and the page show of the backup. */
export type BackupStatus = {
  url: string
  /** The last copy the server acknowledged. */
  lastPush?: { version: string; at: number; bytes: number; ms: number }
  /** Copies acknowledged since the start, and their bytes (sealed payloads). */
  pushes: number
  bytesPushed: number
  /** The state has changed since the last copy acknowledged: a push is under way or due. */
  behind: boolean
  /** The last failure, until a push succeeds again; `failures` in a row. */
  lastError?: { code: string; message: string; at: number }
  failures: number
  /** The copy this start restored, if it restored one. */
  restored?: { version: string; at: number; bytes: number }
}

/**
 * Pushes a sealed copy of what the node needs to recover its funds to a backup server (docs/decisions/0034,
 * 0032), after each commit that changed it (channels, nonces, locks, secrets, payments under way), batched: at most
 * one push in flight and the latest state next, never before `minIntervalMs` after the last one started. It never
 * blocks a payment: it reads the state and the store and seals off the loop, and nothing waits for it. Failures are
 * reported (the first of a run, and each new kind) and retried with a doubling delay; a stop pushes the last copy if
 * it can within `stopTimeoutMs`. The copy's version is the seq of the state it holds, which only grows.
 */
export class BackupService implements Service {
  private readonly opts: Required<BackupOptions>
  private key: Promise<BackupKey> | undefined
  private readonly state: BackupStatus
  private started = false
  private stopped = false
  private off: (() => void) | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private inFlight: Promise<void> | undefined
  private lastStart = 0
  /** The seq of the last commit (told by each commit: the recovery point itself is taken only to push). */
  private latestSeq = -1
  /** The seq and the parts of the state of the last copy acknowledged: a commit that changed none of them needs no copy. */
  private pushedSeq = -1
  private pushedParts: unknown[] | undefined
  /** A sealed copy whose push got no answer: the same bytes go again for its version (another seal would conflict). */
  private unanswered: { version: bigint; envelope: Envelope } | undefined
  private readonly abort = new AbortController()

  constructor(
    private readonly client: NodeClient,
    options: BackupOptions,
    restored?: Restored,
  ) {
    this.opts = { minIntervalMs: 200, timeoutMs: 15_000, retryMs: 1_000, stopTimeoutMs: 3_000, ...options }
    this.state = {
      url: options.url,
      pushes: 0,
      bytesPushed: 0,
      behind: false,
      failures: 0,
      ...(restored ? { restored: { version: String(restored.version), at: restored.at, bytes: restored.bytes } } : {}),
    }
    if (restored) this.pushedSeq = Number(restored.version)
  }

  status(): BackupStatus {
    return structuredClone(this.state)
  }

  start(): void {
    this.started = true
    this.latestSeq = this.client.recoveryPoint().seq
    this.off = this.client.onCommitted((seq) => {
      this.latestSeq = seq
      this.changed()
    })
    this.changed()
  }

  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.off?.()
    clearTimeout(this.timer)
    if (!this.started) return
    // The last copy, within a short bound: what is in flight, then the latest state if it is newer.
    const deadline = AbortSignal.timeout(this.opts.stopTimeoutMs)
    const bounded = (p: Promise<void>) => Promise.race([p, new Promise<void>((resolve) => deadline.addEventListener('abort', () => resolve(), { once: true }))])
    await bounded(this.inFlight ?? Promise.resolve())
    if (!deadline.aborted && this.matters()) await bounded(this.push(deadline))
    this.abort.abort()
  }

  private parts(state: NodeState): unknown[] {
    return [state.channels, state.initiators, state.mediators, state.targets, state.registeredSecrets]
  }

  /** Whether the state moved since the last copy in a way a restore needs (the state is never mutated: identity tells). */
  private matters(): boolean {
    if (this.latestSeq <= this.pushedSeq) return false
    const parts = this.parts(this.client.state)
    return !this.pushedParts || parts.some((p, i) => p !== this.pushedParts![i])
  }

  private changed(): void {
    if (this.stopped || !this.matters()) return
    this.state.behind = true
    this.schedule(Math.max(0, this.lastStart + this.opts.minIntervalMs - Date.now()))
  }

  private schedule(delayMs: number): void {
    if (this.inFlight || this.timer !== undefined || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.inFlight = this.push(this.abort.signal).finally(() => {
        this.inFlight = undefined
        if (this.stopped) return
        if (this.state.failures > 0) this.schedule(Math.min(60_000, this.opts.retryMs * 2 ** (this.state.failures - 1)))
        else if (this.matters()) this.changed()
        else this.state.behind = false
      })
    }, delayMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  /** Whether the server's copy holds the state of `point` (same seq, same state): fetched and opened with our key. */
  private async serverHolds(key: BackupKey, point: RecoveryPoint, signal: AbortSignal): Promise<boolean> {
    const held = await fetchBackup(this.opts.url, key, { timeoutMs: this.opts.timeoutMs, signal })
    if (!held || held.version !== BigInt(point.seq)) return false
    const { dump } = await readPayload((await open(key, held)).payload)
    return jsonStringify(dump.snapshot?.state) === jsonStringify(point.state)
  }

  private async push(signal: AbortSignal): Promise<void> {
    this.lastStart = Date.now()
    const point = this.client.recoveryPoint()
    const version = BigInt(point.seq)
    const parts = this.parts(point.state)
    try {
      this.key ??= backupKey(this.client.config.secp256k1, this.client.config.key)
      const key = await this.key
      let envelope = this.unanswered?.version === version ? this.unanswered.envelope : undefined
      if (!envelope) {
        // The meta and the transactions under way (a small read): the rest of the copy is the point itself.
        const stored = await this.client.store.exportDump({ recovery: true })
        envelope = await seal(key, { version, payload: await buildPayload(point, stored) })
      }
      this.unanswered = { version, envelope }
      await pushBackup(this.opts.url, envelope, { timeoutMs: this.opts.timeoutMs, signal }).catch(async (error: unknown) => {
        // Another copy under this version: ours from before a restart (sealed again, so other bytes) holds this very
        // state and is as good; another instance's that went elsewhere from the same seq is a conflict to report.
        if ((error as { code?: unknown }).code !== 'BACKUP_CONFLICT' || !(await this.serverHolds(key, point, signal))) throw error
      })
      this.unanswered = undefined
      this.pushedSeq = point.seq
      this.pushedParts = parts
      const bytes = envelope.ciphertext.length
      this.state.lastPush = { version: String(version), at: Date.now(), bytes, ms: Date.now() - this.lastStart }
      this.state.pushes++
      this.state.bytesPushed += bytes
      this.state.failures = 0
      delete this.state.lastError
    } catch (error) {
      if (signal.aborted && this.stopped) return
      const e = error instanceof Error ? error : new Error(String(error))
      const code = (e as { code?: string }).code ?? 'BACKUP_FAILED'
      // The first failure of a run and each new kind are reported; the retries of the same are not.
      if (this.state.failures === 0 || this.state.lastError?.code !== code) this.client.report('backup', e)
      this.state.failures++
      this.state.lastError = { code, message: e.message, at: Date.now() }
    }
  }
}
