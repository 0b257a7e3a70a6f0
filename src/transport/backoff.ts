/** How long to wait between attempts: doubling from `initialMs`, never more than `maxMs` (docs/protocol.md §3.5). */
export type Backoff = { initialMs: number; maxMs: number }

/** Raiden's values are 5 s and 60 s; between local nodes (same origin, same process) a fast first retry is better. */
export const defaultBackoff: Backoff = { initialMs: 300, maxMs: 60_000 }

/** The delay before the next attempt after `attempts` sends (1 after the first send). */
export function retryDelay(backoff: Backoff, attempts: number): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 30)
  return Math.min(backoff.initialMs * 2 ** exponent, backoff.maxMs)
}
