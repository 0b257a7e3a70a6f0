import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { cors } from 'hono/cors'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { Address } from 'viem'
import { ApiError, errorAnswer } from '../../api/errors.ts'
import { checkBodyMediaType, pathAddress } from '../../api/input.ts'
import { keccak256Hex } from '../../protocol/keccak.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'
import { recoverPackedSignerSync } from '../../protocol/signature.ts'
import { SluiceError } from '../../errors.ts'
import { version as sluiceVersion } from '../../version.ts'
import { AUTH_SCHEME, type BackupServerStatus } from '../client.ts'
import { DEFAULT_MAX_COPY_BYTES, envelopeToJson, FORMAT, parseEnvelope, signedFetchBytes } from '../format.ts'
import { verifyEnvelope } from '../seal.ts'
import { rateLimiter } from './rateLimit.ts'
import type { BackupStore, CopyRecord } from './store.ts'

/**
 * The backup server's HTTP API (docs/decisions/0032-off-browser-backup.md), under /backup/v1:
 *
 *   PUT /copies/{address}   a sealed copy of its owner's state; kept if newer than the one held
 *   GET /copies/{address}   the newest copy, to its owner only (a signed, timestamped request)
 *   GET /status             what it holds and its limits
 *
 * A public service: any page of any origin may call it (CORS for every origin, no cookies), because the owner's
 * signature, not where a request comes from, decides what it may do. Errors are `{"errors": ..., "code": ...}`.
 */
export const BACKUP_BASE_PATH = '/backup/v1'

export type BackupLimits = {
  /** The largest copy, in ciphertext bytes: a larger one is 413. */
  maxCopyBytes: number
  /** What all copies together may take (their JSON): beyond it a push that would grow the store is 507. */
  maxTotalBytes: number
  /** Pushes per owner address a minute (as many at once): beyond it 429. */
  pushesPerMinute: number
  /** Requests per client IP address a minute (as many at once): beyond it 429. */
  requestsPerMinute: number
  /** How far a fetch request's time may be from the server's, either way. */
  fetchWindowSeconds: number
}

export const DEFAULT_BACKUP_LIMITS: BackupLimits = {
  maxCopyBytes: DEFAULT_MAX_COPY_BYTES,
  maxTotalBytes: 1024 ** 3,
  pushesPerMinute: 60,
  requestsPerMinute: 600,
  fetchWindowSeconds: 300,
}

/** The status of the errors the envelope's checks and the store throw; anything else unforeseen is a 500. */
export const statusOfBackupCode: Record<string, ContentfulStatusCode> = {
  BACKUP_MALFORMED: 400,
  BACKUP_UNSIGNED: 401,
  BACKUP_BAD_SIGNATURE: 403,
  BACKUP_STORE: 503,
}

export type CreateBackupAppParameters = {
  store: BackupStore
  /** The curve engine the server's host chose: every push's and fetch's signer is recovered with it. */
  curve: Secp256k1Engine
  limits?: Partial<BackupLimits>
  /** The clock, in milliseconds (tests move it). */
  now?: () => number
  /** Told of every request that failed with an error nothing maps (a bug): it was answered 500. */
  onInternalError?(error: unknown): void
}

/** Where the request comes from: the TCP peer (@hono/node-server's `incoming`); behind a proxy, the proxy. */
type NodeEnv = { incoming?: { socket?: { remoteAddress?: string } } }

const AUTHORIZATION = new RegExp(`^${AUTH_SCHEME}\\s+time=(\\d{1,12}),\\s*signature=(0x[0-9a-fA-F]{130})$`)
const CHALLENGE = { 'www-authenticate': `${AUTH_SCHEME} realm="sluice-backup"` }

export function createBackupApp({ store, curve, limits: given = {}, now = Date.now, onInternalError }: CreateBackupAppParameters): Hono {
  const limits: BackupLimits = { ...DEFAULT_BACKUP_LIMITS, ...given }
  const perClient = rateLimiter({ perMinute: limits.requestsPerMinute, burst: limits.requestsPerMinute, now })
  const perOwner = rateLimiter({ perMinute: limits.pushesPerMinute, burst: limits.pushesPerMinute, now })
  const rateLimited = (seconds: number, what: string) =>
    new ApiError(429, `too many ${what}: try again in ${seconds} s`, { code: 'RATE_LIMITED', headers: { 'retry-after': String(seconds) } })
  const tooLarge = () => new ApiError(413, `a copy may hold at most ${limits.maxCopyBytes} bytes of ciphertext on this server`, { code: 'BACKUP_TOO_LARGE' })
  // One push per address at a time: the compare and the write happen as one step.
  const queues = new Map<Address, Promise<unknown>>()
  const oneAtATime = <T>(address: Address, task: () => Promise<T>): Promise<T> => {
    const run = (queues.get(address) ?? Promise.resolve()).then(task, task)
    const tail = run.catch(() => {})
    queues.set(address, tail)
    void tail.then(() => queues.get(address) === tail && queues.delete(address))
    return run
  }
  // Bytes promised to writes in flight, so that pushes of several addresses at once cannot pass the total together.
  let reserved = 0

  const app = new Hono({ strict: true }).basePath(BACKUP_BASE_PATH)
  app.use(
    cors({
      origin: '*',
      allowMethods: ['GET', 'PUT'],
      allowHeaders: ['Content-Type', 'Authorization'],
      // A page reads the server's clock from Date to sign a fetch again (a CORS answer shows no other headers).
      exposeHeaders: ['Date', 'Retry-After'],
      maxAge: 600,
    }),
  )
  app.use(async (c, next) => {
    const client = (c.env as NodeEnv | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown'
    const wait = perClient.take(client)
    if (wait) throw rateLimited(wait, 'requests from this address')
    await checkBodyMediaType(c.req.raw)
    await next()
  })

  app.put(
    '/copies/:address',
    bodyLimit({
      // The JSON of the largest copy: its ciphertext in hex, and the other fields.
      maxSize: 2 * limits.maxCopyBytes + 4096,
      onError: () => errorAnswer(tooLarge()),
    }),
    async (c) => {
      const address = pathAddress(c.req.param('address'), 'address')
      const envelope = parseEnvelope(await readJson(c.req.raw))
      if (envelope.address !== address) throw new ApiError(400, `the copy is of ${envelope.address}, not of ${address}`, { code: 'BACKUP_MALFORMED' })
      if (envelope.ciphertext.length > limits.maxCopyBytes) throw tooLarge()
      verifyEnvelope(curve, envelope)
      const wait = perOwner.take(address)
      if (wait) throw rateLimited(wait, `copies of ${address}`)
      const json = JSON.stringify(envelopeToJson(envelope))
      const hash = keccak256Hex(envelope.ciphertext)
      return oneAtATime(address, async () => {
        const answer = (unchanged: boolean) => c.json({ address, version: envelope.version.toString(), unchanged })
        /** Whether to write the copy (false: the same copy is held), given what is held and the bytes of all copies. */
        const decide = (held: CopyRecord | undefined, totalBytes: number) => {
          if (held && envelope.version < held.version)
            throw new ApiError(409, `the server holds version ${held.version} of ${address}, newer than ${envelope.version}`, { code: 'BACKUP_STALE' })
          if (held && envelope.version === held.version) {
            if (held.hash === hash) return false
            throw new ApiError(409, `the server holds another copy of ${address} under version ${held.version}`, { code: 'BACKUP_CONFLICT' })
          }
          const growth = json.length - (held?.bytes ?? 0)
          if (growth > 0 && totalBytes + growth > limits.maxTotalBytes) throw new ApiError(507, 'the backup server is full', { code: 'BACKUP_SERVER_FULL' })
          return true
        }
        const record = { version: envelope.version, bytes: json.length, hash }
        // Shared by several servers: decided in the transaction that writes (two cannot both take an older copy).
        if (store.writeChecked) return answer(!(await store.writeChecked(address, record, json, decide)))
        const held = await store.record(address)
        if (!decide(held, store.bytes + reserved)) return answer(true)
        const promised = Math.max(json.length - (held?.bytes ?? 0), 0)
        reserved += promised
        try {
          await store.write(address, record, json)
        } finally {
          reserved -= promised
        }
        return answer(false)
      })
    },
  )

  app.get('/copies/:address', async (c) => {
    const address = pathAddress(c.req.param('address'), 'address')
    const header = c.req.header('authorization')
    if (header === undefined)
      throw new ApiError(401, `only the owner may fetch a copy: sign the request (Authorization: ${AUTH_SCHEME} time=..., signature=...)`, {
        code: 'BACKUP_UNSIGNED',
        headers: CHALLENGE,
      })
    const m = AUTHORIZATION.exec(header)
    if (!m)
      throw new ApiError(401, `the Authorization header is not ${AUTH_SCHEME} time=<unix seconds>, signature=0x<65 bytes>`, {
        code: 'BACKUP_UNSIGNED',
        headers: CHALLENGE,
      })
    const time = Number(m[1])
    const skew = time - Math.floor(now() / 1000)
    if (Math.abs(skew) > limits.fetchWindowSeconds)
      throw new ApiError(401, `the request was signed ${Math.abs(skew)} s ${skew < 0 ? 'ago' : 'ahead'}; this server allows ${limits.fetchWindowSeconds} s`, {
        code: 'BACKUP_REQUEST_EXPIRED',
        // The clock this check used, for the client to sign again with (fetchBackup does, once).
        headers: { ...CHALLENGE, date: new Date(now()).toUTCString() },
      })
    let signer: Address | undefined
    try {
      signer = recoverPackedSignerSync(curve, signedFetchBytes(address, BigInt(time)), m[2] as `0x${string}`)
    } catch {
      signer = undefined
    }
    if (signer !== address)
      throw new ApiError(403, `the request is not signed by ${address}: only the owner may fetch its copy`, { code: 'BACKUP_BAD_SIGNATURE' })
    const json = await store.read(address)
    if (json === undefined) throw new ApiError(404, `no copy of ${address} here`, { code: 'NO_BACKUP' })
    return c.body(json, 200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
  })

  app.get('/status', (c) => {
    const status: BackupServerStatus = { service: 'sluice-backup', format: FORMAT, version: sluiceVersion, copies: store.copies, bytes: store.bytes, limits }
    return c.json(status)
  })

  app.notFound(() => errorAnswer(new ApiError(404, 'invalid endpoint')))
  app.onError((error) => {
    if (error instanceof ApiError) return errorAnswer(error)
    if (error instanceof SluiceError && statusOfBackupCode[error.code] !== undefined)
      return errorAnswer(new ApiError(statusOfBackupCode[error.code]!, error.shortMessage, { code: error.code }))
    if (error instanceof HTTPException)
      return error.res ? error.getResponse() : errorAnswer(new ApiError(error.status as ContentfulStatusCode, error.message || `HTTP ${error.status}`))
    onInternalError?.(error)
    return errorAnswer(new ApiError(500, `internal error: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`))
  })
  return app
}

async function readJson(request: Request): Promise<unknown> {
  const text = await request.text()
  if (text.trim() === '') throw new ApiError(400, 'a copy is expected as the JSON body', { code: 'BACKUP_MALFORMED' })
  try {
    return JSON.parse(text) as unknown
  } catch (e) {
    throw new ApiError(400, `malformed JSON: ${(e as Error).message}`, { code: 'BACKUP_MALFORMED' })
  }
}
