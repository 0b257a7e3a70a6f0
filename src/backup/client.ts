import type { Hex } from 'viem'
import { signPackedSync } from '../protocol/signature.ts'
import { BackupBadAnswerError, BackupOtherOwnerError, BackupRefusedError, BackupTimeoutError, BackupUnreachableError } from './errors.ts'
import { DEFAULT_MAX_COPY_BYTES, envelopeToJson, parseEnvelope, signedFetchBytes, type Envelope } from './format.ts'
import type { BackupKey } from './key.ts'
import { verifyEnvelope } from './seal.ts'
import { hasCode, withCode } from '../errors.ts'

/**
 * What a node calls to keep its copies on a backup server (`sluice backup-server`) and get them back; browser-safe
 * (fetch, WebCrypto). `url` is the server's base URL, `http(s)://host:port/backup/v1`. Nothing waits for ever:
 * every call ends within `timeoutMs` (the answer's body included) with the server's answer or a coded error.
 */
export type BackupRequestOptions = {
  /** How long the whole call may take, the answer's body included (default 15 s). */
  timeoutMs?: number
  /** Aborts the call; it then rejects with the signal's reason. */
  signal?: AbortSignal
}

export const DEFAULT_TIMEOUT_MS = 15_000

/** The scheme of a fetch request's Authorization header: `SluiceBackup time=<unix seconds>, signature=0x<65 bytes>`. */
export const AUTH_SCHEME = 'SluiceBackup'

/** What a push answers: the version the server now holds, and whether it held this very copy already. */
export type PushResult = { version: bigint; unchanged: boolean }

/** An answer's body is read up to this much beyond the largest copy (its JSON doubles the bytes, plus the fields). */
const ANSWER_SLACK_BYTES = 64 * 1024

const base = (url: string) => url.replace(/\/+$/, '')

/**
 * Sends a sealed copy. Resolves once the server holds it durably (or held this very copy already: a resend after a
 * lost answer is safe); rejects with BackupRefusedError and the server's code when it keeps a newer one
 * (BACKUP_STALE), another copy under this version (BACKUP_CONFLICT), or refuses it for its size or rate.
 */
export async function pushBackup(url: string, envelope: Envelope, options: BackupRequestOptions = {}): Promise<PushResult> {
  const body = JSON.stringify(envelopeToJson(envelope))
  return request(
    `${base(url)}/copies/${envelope.address}`,
    { method: 'PUT', headers: { 'content-type': 'application/json' }, body },
    options,
    async (response) => {
      const answer = await readJson(response, ANSWER_SLACK_BYTES)
      const { version, unchanged } = (answer ?? {}) as { version?: unknown; unchanged?: unknown }
      if (typeof version !== 'string' || !/^\d{1,20}$/.test(version) || typeof unchanged !== 'boolean')
        throw new BackupBadAnswerError(`the backup server's answer to a push is not {version, unchanged}: ${JSON.stringify(answer)?.slice(0, 200)}`)
      return { version: BigInt(version), unchanged }
    },
  )
}

export type FetchBackupOptions = BackupRequestOptions & {
  /** The largest copy accepted from the server, in ciphertext bytes (default DEFAULT_MAX_COPY_BYTES): a bigger answer is refused unread. */
  maxCopyBytes?: number
}

/**
 * The newest copy the server holds of `key`'s owner, checked (its address, its owner's signature), or undefined when
 * it holds none. Only the owner may fetch: the request is signed with the key and timestamped. When the server's
 * clock differs from ours by more than it allows, the call signs again once with the server's time (its Date header).
 * The copy is still sealed: `open(key, copy)` decrypts it.
 */
export async function fetchBackup(url: string, key: BackupKey, options: FetchBackupOptions = {}): Promise<Envelope | undefined> {
  const maxBytes = 2 * (options.maxCopyBytes ?? DEFAULT_MAX_COPY_BYTES) + ANSWER_SLACK_BYTES
  const attempt = (unixSeconds: number) =>
    request(
      `${base(url)}/copies/${key.address}`,
      { method: 'GET', headers: { authorization: fetchAuthorization(key, unixSeconds) } },
      options,
      async (response) => {
        const envelope = parseAnswerEnvelope(await readJson(response, maxBytes))
        if (envelope.address !== key.address)
          throw new BackupOtherOwnerError(`the backup server answered with the copy of ${envelope.address}, not of ${key.address}`)
        verifyEnvelope(key.curve, envelope)
        return envelope
      },
      // No copy: 404 with the code NO_BACKUP (any other 404 is not this protocol's answer).
      (status, code) => (status === 404 && code === 'NO_BACKUP' ? { value: undefined } : undefined),
    )
  try {
    return await attempt(Math.floor(Date.now() / 1000))
  } catch (e) {
    const serverTime = withCode<BackupRefusedError>(e, 'BACKUP_REQUEST_EXPIRED')?.serverDate
    if (serverTime === undefined) throw e
    return attempt(Math.floor(serverTime / 1000))
  }
}

/** The Authorization header of a fetch request of `key`'s owner at `unixSeconds`. */
export function fetchAuthorization(key: BackupKey, unixSeconds: number): string {
  const signature: Hex = signPackedSync(key.curve, key.privateKey, signedFetchBytes(key.address, BigInt(unixSeconds)))
  return `${AUTH_SCHEME} time=${unixSeconds}, signature=${signature}`
}

/** The status of a backup server: its limits and what it holds (GET /status). */
export type BackupServerStatus = {
  service: 'sluice-backup'
  format: string
  version: string
  copies: number
  bytes: number
  limits: { maxCopyBytes: number; maxTotalBytes: number; pushesPerMinute: number; requestsPerMinute: number; fetchWindowSeconds: number }
}

export async function backupServerStatus(url: string, options: BackupRequestOptions = {}): Promise<BackupServerStatus> {
  return request(`${base(url)}/status`, { method: 'GET' }, options, async (response) => {
    const answer = (await readJson(response, ANSWER_SLACK_BYTES)) as Partial<BackupServerStatus> | null
    if (answer?.service !== 'sluice-backup') throw new BackupBadAnswerError('this URL does not answer as a Sluice backup server')
    return answer as BackupServerStatus
  })
}

/**
 * One request with a deadline over the whole exchange. A 2xx answer goes to `onSuccess`; an error answer becomes
 * BackupRefusedError (or what `onRefusal` makes of it); no answer in time is BACKUP_TIMEOUT, none at all
 * BACKUP_UNREACHABLE; the caller's abort rejects with its reason.
 */
async function request<T>(
  url: string,
  init: RequestInit,
  { timeoutMs = DEFAULT_TIMEOUT_MS, signal }: BackupRequestOptions,
  onSuccess: (response: Response) => Promise<T>,
  onRefusal?: (status: number, code: string) => { value: T } | undefined,
): Promise<T> {
  signal?.throwIfAborted()
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, timeoutMs)
  const onAbort = () => controller.abort()
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    let response: Response
    try {
      response = await fetch(url, { ...init, signal: controller.signal, cache: 'no-store', credentials: 'omit' })
    } catch (e) {
      throw new BackupUnreachableError(`cannot reach the backup server at ${url}: ${(e as Error).message}`, { cause: e })
    }
    if (response.ok) return await onSuccess(response)
    const { code, message } = await errorBody(response)
    const custom = onRefusal?.(response.status, code)
    if (custom) return custom.value
    const retryAfter = Number(response.headers.get('retry-after'))
    const date = Date.parse(response.headers.get('date') ?? '')
    throw new BackupRefusedError(response.status, code, message, {
      retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
      serverDate: Number.isFinite(date) ? date : undefined,
    })
  } catch (e) {
    if (signal?.aborted) throw signal.reason
    if (timedOut) throw new BackupTimeoutError(`the backup server at ${url} did not answer within ${timeoutMs} ms`, { cause: e })
    throw e
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/** The server's error body `{"errors": message, "code": code}`; anything else is not this protocol's answer. */
async function errorBody(response: Response): Promise<{ code: string; message: string }> {
  const body = (await readJson(response, ANSWER_SLACK_BYTES).catch((e) => {
    if (hasCode(e, 'BACKUP_BAD_ANSWER')) return undefined
    throw e
  })) as { errors?: unknown; code?: unknown } | undefined
  if (typeof body?.code === 'string' && typeof body.errors === 'string') return { code: body.code, message: body.errors }
  throw new BackupBadAnswerError(`HTTP ${response.status} from ${response.url || 'the backup server'}, without the backup server's error body`)
}

/** The answer's body as JSON, read up to `maxBytes`: a larger one is cancelled unread. */
async function readJson(response: Response, maxBytes: number): Promise<unknown> {
  const declared = Number(response.headers.get('content-length'))
  if (declared > maxBytes) {
    await response.body?.cancel()
    throw new BackupBadAnswerError(`the backup server's answer has ${declared} bytes, more than the ${maxBytes} expected`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = response.body?.getReader()
  if (reader)
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.length
      if (size > maxBytes) {
        await reader.cancel()
        throw new BackupBadAnswerError(`the backup server's answer is larger than the ${maxBytes} bytes expected`)
      }
      chunks.push(value)
    }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.length
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown
  } catch (e) {
    throw new BackupBadAnswerError(`the backup server's answer is not JSON (HTTP ${response.status})`, { cause: e })
  }
}

function parseAnswerEnvelope(value: unknown): Envelope {
  try {
    return parseEnvelope(value)
  } catch (e) {
    if (hasCode(e, 'BACKUP_MALFORMED', 'BACKUP_UNSIGNED'))
      throw new BackupBadAnswerError(`the backup server answered with something that is not a copy: ${(e as Error).message}`, { cause: e })
    throw e
  }
}
