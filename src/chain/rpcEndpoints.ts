import { sleep } from '../waits.ts'
import { createTransport, custom, hexToNumber, http, isHex, keccak256, TimeoutError, type Hex, type Transport } from 'viem'
import { ChainIdMismatchError, ChainRpcError } from './errors.ts'
import { classifyRpcFailure, LogRangeTimeoutError, RpcUnavailableError, saysAlreadyKnown, type RpcFailure } from './rpcFailure.ts'
import { endpointLabel, isRpcUrl } from './rpcUrls.ts'

/**
 * The node's way to the chain (docs/decisions/0052-rpc-endpoints.md): the operator's endpoints, used in their order,
 * or the page's wallet. Browser-safe.
 *
 * - A call goes to the first endpoint that is up. One that fails as an endpoint fails (no answer in time, refused,
 *   reset, an HTTP error, a rate limit, an overload answer) is marked down at once, and the call moves on to the next;
 *   later calls skip it, so a black-holed endpoint costs its timeout once, not on every call. Calls already waiting on
 *   it move on as soon as one of them times out there.
 * - A down endpoint is probed in the background (eth_chainId, its chain checked) at most every `probeIntervalMs`,
 *   on the node's own traffic (no timer to stop); once it answers it is up again, and the first is used again.
 * - When no endpoint is up, every one is tried in order; between rounds the call waits (backoff, or the rest a 429's
 *   Retry-After asked for, capped), up to `retries` times and within `callTimeoutMs`. Every attempt has its timeout.
 * - An answer is never retried nor taken elsewhere: a revert, "nonce too low", "already known", bad params
 *   (classifyRpcFailure). The same raw transaction sent again to another endpoint is the same transaction (same
 *   hash); one that the next endpoint says it already knows was broadcast, and its hash is the answer.
 * - An endpoint serves the chain the deployment names or is never used: each is checked at start and before its
 *   first use, and a wallet again every `providerChainCheckMs` (its user may switch networks).
 * Changes of an endpoint's state are told once each to `onChange`; `health()` is the snapshot.
 */
export type RpcEndpointsParameters = {
  /** The operator's endpoints, in the order they are to be used: http, https, ws or wss URLs. */
  urls?: readonly string[]
  /** An EIP-1193 provider (the page's wallet) instead of URLs. */
  provider?: RequestProvider
  /** How long one attempt on one endpoint may take (ms, 10,000 by default, as viem's). */
  attemptTimeoutMs?: number
  /** How long one call may take, its retries and moves included (ms, 30,000 by default). */
  callTimeoutMs?: number
  /** Rounds over the endpoints after the first (3 by default). */
  retries?: number
  /** The first wait between two rounds (ms, 250 by default), doubling. */
  retryDelayMs?: number
  /** The longest Retry-After honoured (ms, 30,000 by default): a longer one fails the call rather than hold it. */
  maxRetryAfterMs?: number
  /** How often a down endpoint is probed (ms, 3,000 by default). */
  probeIntervalMs?: number
  /** How long a wallet's chain check holds (ms, 5,000 by default). */
  providerChainCheckMs?: number
  /** JSON-RPC batches over http (several calls in one request: the monitoring service's reads). */
  batch?: boolean
  /** Told when an endpoint goes down, comes back, or serves another chain: once each time. */
  onChange?: (change: RpcEndpointChange) => void
  /**
   * Told each failure of an endpoint (refused, timed out, 429, 5xx, an overloaded node: what passes the call on), as
   * classified: the process's metrics count them by kind (rpcFailureKind). An answer (a revert) is no failure of it.
   */
  onFailure?: (failure: { endpoint: string; failure: RpcFailure }) => void
}

/** What the node needs of an EIP-1193 provider: `request` (a wallet's `window.ethereum`, viem's EIP1193Provider). */
export type RequestProvider = { request(args: { method: string; params?: unknown }): Promise<unknown> }

export type RpcEndpointState = 'up' | 'down' | 'wrong chain'

export type RpcEndpointChange = {
  /** The endpoint as shown in logs: scheme and host, `#n` when there are several; never its path or query (API keys). */
  endpoint: string
  state: RpcEndpointState
  /** Why it is down or refused. */
  reason?: string
  /** Back up: how long it was down (ms). */
  downForMs?: number
}

export type RpcEndpointHealth = {
  endpoint: string
  state: RpcEndpointState
  /** When it last answered (ms since the epoch). */
  lastSuccessAt?: number
  lastFailure?: { at: number; reason: string }
}

/** Which endpoint a call would use now (undefined when none is up), and each one's state. */
export type RpcHealth = { inUse: string | undefined; endpoints: RpcEndpointHealth[] }

type Attempt = ((method: string, params: unknown, signal: AbortSignal | undefined) => Promise<unknown>) & {
  /** Closes what the attempts keep open (a WebSocket, its keep-alive timer); the next attempt opens it again. */
  close(): Promise<void>
}

type Endpoint = {
  label: string
  attempt: Attempt
  isProvider: boolean
  state: RpcEndpointState
  /** The state last told to onChange ('up' until told otherwise). */
  told: RpcEndpointState
  chainCheckedAt: number | undefined
  downSince: number | undefined
  /** Not to be called before this (a 429's Retry-After). */
  restUntil: number
  nextProbeAt: number
  probing: boolean
  lastSuccessAt: number | undefined
  lastFailure: { at: number; reason: string } | undefined
  /** Attempts waiting on it, told to move on when it stops answering (a timeout) or turns out to serve another chain. */
  waiting: Set<() => void>
}

const DEFAULTS = {
  attemptTimeoutMs: 10_000,
  callTimeoutMs: 30_000,
  retries: 3,
  retryDelayMs: 250,
  maxRetryAfterMs: 30_000,
  probeIntervalMs: 3_000,
  providerChainCheckMs: 5_000,
}

/** How long the start waits for the other endpoints' chain ids once one has answered (ms). */
const START_GRACE_MS = 1_000

class EndpointWentDown extends Error {}

export class RpcEndpoints {
  /** The viem transport over the endpoints: give it to createPublicClient / createWalletClient. */
  readonly transport: Transport<'sluiceEndpoints'>
  private readonly endpoints: Endpoint[]
  private readonly settings: typeof DEFAULTS
  private readonly onChange: (change: RpcEndpointChange) => void
  private readonly onFailure: NonNullable<RpcEndpointsParameters['onFailure']>
  private expectedChainId: number | undefined
  private starting = true

  constructor(parameters: RpcEndpointsParameters) {
    const { urls = [], provider, batch = false, onChange = () => {}, onFailure = () => {} } = parameters
    this.settings = { ...DEFAULTS }
    for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) if (parameters[key] !== undefined) this.settings[key] = parameters[key]
    this.onChange = onChange
    this.onFailure = onFailure
    if (urls.length === 0 && !provider) throw new TypeError('RpcEndpoints needs urls or a provider')
    if (urls.length > 0 && provider) throw new TypeError('RpcEndpoints takes urls or a provider, not both')
    for (const url of urls) if (!isRpcUrl(url)) throw new TypeError(`not an http(s) or ws(s) URL: ${JSON.stringify(endpointLabel(url))}`)
    const timeout = this.settings.attemptTimeoutMs
    const attempts: { label: string; attempt: Attempt; isProvider: boolean }[] = provider
      ? [{ label: 'the wallet (EIP-1193 provider)', attempt: viemAttempt(custom(provider, { retryCount: 0 })), isProvider: true }]
      : urls.map((url, i) => ({
          label: `${urls.length > 1 ? `#${i + 1} ` : ''}${endpointLabel(url)}`,
          // viem's own timeout cleans the request up; ours (in `call`) decides.
          attempt: /^wss?:/i.test(url) ? webSocketAttempt(url, timeout + 1_000) : viemAttempt(http(url, { retryCount: 0, timeout: timeout + 1_000, batch })),
          isProvider: false,
        }))
    // Down until its chain is checked (start, or before its first use).
    this.endpoints = attempts.map(({ label, attempt, isProvider }) => ({
      label,
      attempt,
      isProvider,
      state: 'down',
      told: 'up',
      chainCheckedAt: undefined,
      downSince: Date.now(),
      restUntil: 0,
      nextProbeAt: 0,
      probing: false,
      lastSuccessAt: undefined,
      lastFailure: undefined,
      waiting: new Set(),
    }))
    this.transport = () =>
      createTransport({
        key: 'sluiceEndpoints',
        name: 'Sluice RPC endpoints',
        type: 'sluiceEndpoints',
        // The retries are ours (`call`): viem's would go round every endpoint again, dead ones included.
        retryCount: 0,
        request: ({ method, params }, options) => this.call(method, params, options?.signal) as never,
      })
  }

  /**
   * Asks every endpoint for its chain id and resolves with the chain's: `chainId` when given, else the first
   * endpoint's (in order) that answers. Throws ChainIdMismatchError when one serves another chain, ChainRpcError
   * when none answers. One that has not answered a second after another did is checked in the background, and
   * before any use.
   */
  async start(chainId?: number): Promise<number> {
    this.expectedChainId = chainId
    const answers: (number | undefined)[] = this.endpoints.map(() => undefined)
    let lastError: unknown
    const checks = this.endpoints.map(async (endpoint, i) => {
      try {
        const id = await this.chainIdOf(endpoint, this.settings.attemptTimeoutMs)
        // An answer after the start is applied as any check's: a wrong chain refused, and told.
        if (this.starting) answers[i] = id
        else this.chainChecked(endpoint, id)
      } catch (e) {
        lastError = e
        this.failed(endpoint, classifyRpcFailure(e))
      }
    })
    let firstAnswer: () => void = () => {}
    const answered = new Promise<void>((resolve) => (firstAnswer = resolve))
    for (const check of checks) void check.then(() => answers.some((a) => a !== undefined) && firstAnswer())
    let grace: ReturnType<typeof setTimeout> | undefined
    const graceOver = answered.then(() => new Promise<void>((resolve) => (grace = setTimeout(resolve, START_GRACE_MS))))
    await Promise.race([Promise.all(checks), graceOver])
    clearTimeout(grace)

    const first = answers.find((a) => a !== undefined)
    if (first === undefined) throw new ChainRpcError('eth_chainId', lastError)
    this.expectedChainId ??= first
    const expected = this.expectedChainId
    const wrong = answers.findIndex((a) => a !== undefined && a !== expected)
    if (wrong >= 0) throw new ChainIdMismatchError(expected, answers[wrong]!, this.endpoints[wrong]!.label)
    this.starting = false
    for (const [i, endpoint] of this.endpoints.entries()) {
      if (answers[i] !== undefined) this.chainChecked(endpoint, answers[i]!)
      // One that failed its check is told down now; one still being checked, once its check ends.
      else if (endpoint.lastFailure) this.tell(endpoint, endpoint.lastFailure.reason)
    }
    return expected
  }

  /** Closes the WebSockets the endpoints opened, so that nothing keeps a stopped node's process alive. */
  async close(): Promise<void> {
    await Promise.all(this.endpoints.map((e) => e.attempt.close().catch(() => {})))
  }

  health(): RpcHealth {
    const up = this.endpoints.find((e) => e.state === 'up')
    return {
      inUse: up?.label,
      endpoints: this.endpoints.map((e) => ({
        endpoint: e.label,
        state: e.state,
        ...(e.lastSuccessAt !== undefined ? { lastSuccessAt: e.lastSuccessAt } : {}),
        ...(e.lastFailure ? { lastFailure: { ...e.lastFailure } } : {}),
      })),
    }
  }

  /** One JSON-RPC call over the endpoints, with the rules above. */
  async call(method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    const deadline = Date.now() + this.settings.callTimeoutMs
    this.probeDownEndpoints()
    const reasons: string[] = []
    let lastError: Error | undefined
    let failedTransiently = false
    for (let round = 0; round <= this.settings.retries; round++) {
      const candidates = this.candidates()
      if (candidates.length === 0) {
        for (const e of this.endpoints) reasons.push(`${e.label}: ${e.lastFailure?.reason ?? e.state}`)
        // None serves the chain: no wait changes that (a probe may, for a later call).
        if (this.endpoints.every((e) => e.state === 'wrong chain')) break
      }
      for (const endpoint of candidates) {
        const left = deadline - Date.now()
        if (left <= 0) break
        signal?.throwIfAborted()
        if (!this.chainStillChecked(endpoint)) {
          const ok = await this.checkChain(endpoint, Math.min(left, this.settings.attemptTimeoutMs))
          if (!ok) {
            reasons.push(`${endpoint.label}: ${endpoint.lastFailure?.reason ?? endpoint.state}`)
            continue
          }
        }
        const timeoutMs = Math.min(left, this.settings.attemptTimeoutMs)
        try {
          const result = await this.bounded(endpoint, method, params, timeoutMs, signal)
          this.succeeded(endpoint)
          return result
        } catch (e) {
          if (signal?.aborted) throw e
          if (e instanceof EndpointWentDown) {
            reasons.push(`${endpoint.label}: went down`)
            failedTransiently = true
            continue
          }
          let failure = classifyRpcFailure(e)
          // A range that only times out, on an endpoint that answers otherwise, is too heavy for it: getLogsChunk halves it.
          if (failure.timeout && method === 'eth_getLogs' && (await this.answersAtOnce(endpoint))) throw new LogRangeTimeoutError(endpoint.label, timeoutMs)
          if (failure.kind === 'answer') {
            this.succeeded(endpoint)
            if (method === 'eth_sendRawTransaction' && failedTransiently && saysAlreadyKnown(failure.reason)) return rawTransactionHash(params)
            throw e
          }
          if (failure.retryAfterMs !== undefined && failure.retryAfterMs > this.settings.maxRetryAfterMs)
            failure = { ...failure, reason: `${failure.reason} (asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s)` }
          this.failed(endpoint, failure)
          reasons.push(`${endpoint.label}: ${failure.reason}`)
          lastError = e as Error
          failedTransiently = true
        }
      }
      if (round === this.settings.retries) break
      const wait = this.waitBeforeRound(round)
      if (Date.now() + wait >= deadline) break
      await sleep(wait, signal)
      signal?.throwIfAborted()
    }
    throw new RpcUnavailableError(method, unique(reasons), lastError)
  }

  /** The endpoints a round tries, in the operator's order: those up; else those down and not resting. */
  private candidates(): Endpoint[] {
    const up = this.endpoints.filter((e) => e.state === 'up' && e.restUntil <= Date.now())
    if (up.length > 0) return up
    return this.endpoints.filter((e) => e.state === 'down' && e.restUntil <= Date.now())
  }

  /** Backoff, or until the first endpoint's rest ends when every one asked for rest (capped). */
  private waitBeforeRound(round: number): number {
    const now = Date.now()
    const usable = this.endpoints.filter((e) => e.state !== 'wrong chain')
    const backoff = this.settings.retryDelayMs * 2 ** round
    if (usable.length === 0 || usable.some((e) => e.restUntil <= now)) return backoff
    return Math.min(Math.max(backoff, Math.min(...usable.map((e) => e.restUntil)) - now), this.settings.maxRetryAfterMs)
  }

  /** One attempt, bounded by `timeoutMs`; gives up at once (EndpointWentDown) if another call marks the endpoint down. */
  private async bounded(endpoint: Endpoint, method: string, params: unknown, timeoutMs: number, signal: AbortSignal | undefined): Promise<unknown> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError({ body: { method, params }, url: endpoint.label })), timeoutMs)
    })
    let moveOn: (() => void) | undefined
    const wentDown = new Promise<never>((_, reject) => {
      if (endpoint.state !== 'up' || this.endpoints.length === 1) return
      moveOn = () => reject(new EndpointWentDown())
      endpoint.waiting.add(moveOn)
    })
    try {
      return await Promise.race([endpoint.attempt(method, params, signal), timedOut, wentDown])
    } finally {
      clearTimeout(timer)
      if (moveOn) endpoint.waiting.delete(moveOn)
    }
  }

  private async chainIdOf(endpoint: Endpoint, timeoutMs: number): Promise<number> {
    const id = await this.bounded(endpoint, 'eth_chainId', [], timeoutMs, undefined)
    if (typeof id !== 'string' || !isHex(id) || id.length > 18) throw new Error(`eth_chainId answered ${JSON.stringify(id)?.slice(0, 80)}`)
    return hexToNumber(id as Hex)
  }

  /** Checks the endpoint's chain; true when it serves the expected one (it is then up). */
  private async checkChain(endpoint: Endpoint, timeoutMs: number): Promise<boolean> {
    let id: number
    try {
      id = await this.chainIdOf(endpoint, timeoutMs)
    } catch (e) {
      this.failed(endpoint, classifyRpcFailure(e))
      return false
    }
    return this.chainChecked(endpoint, id)
  }

  private chainChecked(endpoint: Endpoint, id: number): boolean {
    const expected = this.expectedChainId
    if (expected !== undefined && id !== expected) {
      endpoint.chainCheckedAt = undefined
      this.setState(endpoint, 'wrong chain', `serves chain ${id}, not chain ${expected}`)
      endpoint.lastFailure = { at: Date.now(), reason: `serves chain ${id}, not chain ${expected}` }
      endpoint.nextProbeAt = Date.now() + this.settings.probeIntervalMs
      return false
    }
    endpoint.chainCheckedAt = Date.now()
    this.succeeded(endpoint)
    return true
  }

  private chainStillChecked(endpoint: Endpoint): boolean {
    if (endpoint.chainCheckedAt === undefined) return false
    return !endpoint.isProvider || Date.now() - endpoint.chainCheckedAt < this.settings.providerChainCheckMs
  }

  /** Starts a probe of each endpoint not up whose time has come; nothing waits for them. */
  private probeDownEndpoints(): void {
    if (this.starting) return
    const now = Date.now()
    for (const endpoint of this.endpoints) {
      if (endpoint.state === 'up' || endpoint.probing || endpoint.nextProbeAt > now || endpoint.restUntil > now) continue
      endpoint.probing = true
      endpoint.nextProbeAt = now + this.settings.probeIntervalMs
      void this.checkChain(endpoint, Math.min(this.settings.attemptTimeoutMs, this.settings.probeIntervalMs)).finally(() => {
        endpoint.probing = false
      })
    }
  }

  /** Whether the endpoint answers eth_chainId within a second (after one of its calls timed out). */
  private async answersAtOnce(endpoint: Endpoint): Promise<boolean> {
    try {
      await this.chainIdOf(endpoint, Math.min(1_000, this.settings.attemptTimeoutMs))
      return true
    } catch {
      return false
    }
  }

  private succeeded(endpoint: Endpoint): void {
    endpoint.lastSuccessAt = Date.now()
    endpoint.restUntil = 0
    if (endpoint.state !== 'up' && endpoint.chainCheckedAt !== undefined) this.setState(endpoint, 'up')
  }

  /**
   * Marks the endpoint down. After a timeout (a black hole, maybe) the calls waiting on it move on at once; after a
   * quick failure they are left to get their own answer (a single 500 among many calls is no reason to send them all
   * again elsewhere).
   */
  private failed(endpoint: Endpoint, failure: RpcFailure): void {
    const { reason, retryAfterMs, timeout: timedOut = false } = failure
    try {
      this.onFailure({ endpoint: endpoint.label, failure })
    } catch {
      // A listener's failure is its own.
    }
    const now = Date.now()
    endpoint.lastFailure = { at: now, reason }
    if (retryAfterMs !== undefined) endpoint.restUntil = now + Math.min(retryAfterMs, this.settings.maxRetryAfterMs)
    endpoint.nextProbeAt = Math.max(now + this.settings.probeIntervalMs, endpoint.restUntil)
    if (timedOut) this.releaseWaiting(endpoint)
    if (endpoint.state !== 'wrong chain') this.setState(endpoint, 'down', reason)
  }

  private releaseWaiting(endpoint: Endpoint): void {
    for (const moveOn of [...endpoint.waiting]) moveOn()
    endpoint.waiting.clear()
  }

  private setState(endpoint: Endpoint, state: RpcEndpointState, reason?: string): void {
    if (endpoint.state !== state) {
      if (endpoint.state === 'up') endpoint.downSince = Date.now()
      // What it answers now is another chain's.
      if (state === 'wrong chain') this.releaseWaiting(endpoint)
      endpoint.state = state
    }
    this.tell(endpoint, reason)
  }

  /** Tells onChange the endpoint's state if it was not told yet: once each change. During the start, its result says it. */
  private tell(endpoint: Endpoint, reason: string | undefined): void {
    const { state } = endpoint
    if (this.starting || endpoint.told === state) return
    endpoint.told = state
    this.onChange({
      endpoint: endpoint.label,
      state,
      ...(reason && state !== 'up' ? { reason } : {}),
      ...(state === 'up' && endpoint.downSince !== undefined ? { downForMs: Date.now() - endpoint.downSince } : {}),
    })
  }
}

/**
 * Over a WebSocket: viem's transport and its socket client load only when a ws endpoint is given (about 3 kB gzipped
 * that the page's node worker would otherwise load before it answers).
 */
function webSocketAttempt(url: string, timeoutMs: number): Attempt {
  let loading: Promise<Attempt> | undefined
  const load = () => (loading ??= import('./webSocketTransport.ts').then(({ webSocketTransport }) => viemAttempt(webSocketTransport(url, timeoutMs))))
  const attempt = async (method: string, params: unknown, signal: AbortSignal | undefined) => (await load())(method, params, signal)
  return Object.assign(attempt, {
    close: async () => {
      if (loading) await (await loading).close()
    },
  })
}

function viemAttempt(transport: Transport): Attempt {
  const { request, value } = transport({ retryCount: 0 })
  let used = false
  const attempt = (method: string, params: unknown, signal: AbortSignal | undefined) => {
    used = true
    return request({ method, params } as never, signal ? { signal } : undefined)
  }
  // Only webSocket's has a client to close (viem keeps one per URL; a closed one is opened again when asked for).
  const rpcClient = (value as { getRpcClient?: () => Promise<{ close(): void }> } | undefined)?.getRpcClient
  return Object.assign(attempt, {
    close: async () => {
      if (rpcClient && used) (await rpcClient()).close()
      used = false
    },
  })
}

function rawTransactionHash(params: unknown): Hex {
  const raw = Array.isArray(params) ? params[0] : undefined
  if (typeof raw !== 'string' || !isHex(raw)) throw new TypeError('eth_sendRawTransaction without a raw transaction')
  return keccak256(raw)
}

function unique(reasons: string[]): string[] {
  return [...new Set(reasons)]
}
