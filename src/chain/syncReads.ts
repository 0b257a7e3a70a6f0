import { hasCode, withCode } from '../errors.ts'
import { sleep, withTimeout } from '../waits.ts'
import { ChainRpcError } from './errors.ts'

export type SyncReadsParameters = {
  /** The longest wait for one answer (ms): a call that takes longer counts as failed, and is asked again. 5,000 by default. */
  callTimeoutMs?: number
  /** How long one read is asked again in place after it failed before its step gives up (ms). 3,000 by default. */
  retryForMs?: number
  /** The first pause between two tries (ms), doubled each time up to 1 s. 100 by default. */
  backoffMs?: number
  /** Aborted: a read under way gives up at once (the node stops). */
  signal?: AbortSignal
  now?: () => number
}

/** What the sync's last reads say of the endpoint. */
export type EndpointHealth = {
  /** When the endpoint last answered (unix ms). */
  lastAnswerAt?: number
  /** When it began failing: the first failed call after the last answer (unix ms); absent while the last call was answered. */
  failingSince?: number
  /** The last failure, while it is failing. */
  lastError?: ChainRpcError
  /** A read gave up (every try of its retry budget failed) and nothing was answered since: the chain is out of reach. */
  unreachable: boolean
}

/**
 * The sync's reads of the endpoint (the block watcher's and the logs'): each call is bounded in time, and a failed
 * one is asked again in place with a short backoff for a few seconds, so one failed call costs a pause rather than
 * the step, and a hung one cannot stall the sync. The transport may retry too; this does not count on it. Reads are
 * idempotent, so asking again is always safe. Every outcome is recorded: the node's status tells from it whether the
 * chain is reachable, and since when it is not.
 */
export class SyncReads {
  readonly callTimeoutMs: number
  readonly retryForMs: number
  private readonly backoffMs: number
  private readonly signal: AbortSignal | undefined
  readonly now: () => number
  private state: EndpointHealth = { unreachable: false }

  constructor({ callTimeoutMs = 5_000, retryForMs = 3_000, backoffMs = 100, signal, now = Date.now }: SyncReadsParameters = {}) {
    this.callTimeoutMs = callTimeoutMs
    this.retryForMs = retryForMs
    this.backoffMs = backoffMs
    this.signal = signal
    this.now = now
  }

  get health(): EndpointHealth {
    return this.state
  }

  /**
   * `call` until it is answered, asked again after a failure while the retry budget lasts; ChainRpcError (with the
   * last failure) once it is spent. An error `isAnswer` accepts (a block that does not exist) is the endpoint's answer:
   * thrown as it is, never asked again.
   */
  async read<T>(method: string, call: () => Promise<T>, isAnswer?: (error: unknown) => boolean): Promise<T> {
    const started = this.now()
    for (let tries = 0; ; tries++) {
      try {
        return await this.attempt(method, call, isAnswer)
      } catch (error) {
        if (!hasCode(error, 'CHAIN_RPC') || !(await this.pauseBeforeRetry(started, tries))) throw this.gaveUp(error)
      }
    }
  }

  /** One try of `call`, bounded in time, its outcome recorded: ChainRpcError when it fails or takes too long. */
  async attempt<T>(method: string, call: () => Promise<T>, isAnswer?: (error: unknown) => boolean): Promise<T> {
    if (this.signal?.aborted) throw new ChainRpcError(method, new Error('the sync is stopping'))
    try {
      const answer = await withTimeout(
        call(),
        this.callTimeoutMs,
        () => new ReadTimeoutError(this.callTimeoutMs),
        this.signal,
        () => new Error('the sync is stopping'),
      )
      this.answered()
      return answer
    } catch (error) {
      if (isAnswer?.(error)) {
        this.answered()
        throw error
      }
      const failure = withCode<ChainRpcError>(error, 'CHAIN_RPC') ?? new ChainRpcError(method, error)
      // Stopping is no failure of the endpoint's.
      if (!this.signal?.aborted) this.state = { ...this.state, failingSince: this.state.failingSince ?? this.now(), lastError: failure }
      throw failure
    }
  }

  /**
   * After the `tries`-th failure of a read begun at `started`: waits the backoff and says true when there is budget
   * for another try; false when the budget is spent or the sync stops.
   */
  async pauseBeforeRetry(started: number, tries: number): Promise<boolean> {
    const pause = Math.min(this.backoffMs * 2 ** tries, 1_000)
    if (this.signal?.aborted || this.now() + pause - started > this.retryForMs) return false
    await sleep(pause, this.signal)
    return !this.signal?.aborted
  }

  /** A read gave up: unless it was answered meanwhile (another caller's read), the chain is out of reach. */
  gaveUp<E>(error: E): E {
    if (this.state.failingSince !== undefined && !this.signal?.aborted) this.state = { ...this.state, unreachable: true }
    return error
  }

  private answered(): void {
    this.state = { lastAnswerAt: this.now(), unreachable: false }
  }
}

/** A read that took longer than a read may: its call goes on, unheard. */
export class ReadTimeoutError extends Error {
  override name = 'ReadTimeoutError'
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`)
  }
}
