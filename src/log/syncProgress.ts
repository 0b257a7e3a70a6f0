/**
 * What a long first sync tells the operator while it goes on: blocks to go, blocks a second, time left, at most once
 * an interval. Pure but for the clock (given), so a test drives it sample by sample; `followSync` samples a node or
 * a service on a timer.
 */
import type { Logger } from './logger.ts'

export type SyncSample = { syncedBlock: bigint; blocksToSync: bigint }

export type SyncProgressOptions = {
  logger: Logger
  /** Milliseconds since the epoch; default Date.now. */
  now?: () => number
  /** At most one line this often (default 1 s). */
  intervalMs?: number
  /** The speed is measured over about this much of the recent past (default 10 s), so a stall shows soon. */
  windowMs?: number
}

export type SyncProgress = {
  /** Where the sync is now: logs a line if there are blocks to go and the last line is `intervalMs` old. */
  sample(progress: SyncSample): void
}

export function createSyncProgress({ logger, now = Date.now, intervalMs = 1_000, windowMs = 10_000 }: SyncProgressOptions): SyncProgress {
  const seen: { time: number; syncedBlock: bigint }[] = []
  let loggedAt: number | undefined
  return {
    sample({ syncedBlock, blocksToSync }) {
      const time = now()
      seen.push({ time, syncedBlock })
      // The oldest sample kept is the last one at least a window old: the speed covers the whole window.
      while (seen.length > 2 && seen[1]!.time <= time - windowMs) seen.shift()
      if (blocksToSync <= 0n) return
      if (loggedAt !== undefined && time - loggedAt < intervalMs) return
      loggedAt = time
      const first = seen[0]!
      const seconds = (time - first.time) / 1000
      if (seconds <= 0 || syncedBlock < first.syncedBlock) {
        logger.info('Syncing: {blocksToSync} blocks to go', { blocksToSync, syncedBlock })
        return
      }
      const perSecond = Number(syncedBlock - first.syncedBlock) / seconds
      const blocksPerSecond = Math.round(perSecond * 10) / 10
      if (perSecond === 0) {
        logger.info('Syncing: {blocksToSync} blocks to go, {blocksPerSecond} blocks/s', { blocksToSync, blocksPerSecond, syncedBlock })
        return
      }
      const timeLeft = duration(Number(blocksToSync) / perSecond)
      logger.info('Syncing: {blocksToSync} blocks to go, {blocksPerSecond} blocks/s, about {timeLeft} left', {
        blocksToSync,
        blocksPerSecond,
        timeLeft,
        syncedBlock,
      })
    },
  }
}

/** `42 s`, `3 min 5 s`, `2 h 10 min`: as precise as a guess deserves. */
export function duration(seconds: number): string {
  const s = Math.max(1, Math.round(seconds))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  const minutes = Math.round(s / 60)
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}

/**
 * Samples `read` four times an interval (so a line comes about every interval, not every other one) until the
 * returned function is called; `read` returns undefined once there is nothing to follow (the sync is over).
 */
export function followSync(read: () => SyncSample | undefined, options: SyncProgressOptions): () => void {
  const progress = createSyncProgress(options)
  const timer = setInterval(
    () => {
      const sample = read()
      if (sample) progress.sample(sample)
    },
    (options.intervalMs ?? 1_000) / 4,
  )
  // A timer that alone would keep a process alive (Node): the host's own work decides when it ends.
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}
