// A JSON-RPC endpoint in front of a real one (an anvil) that fails as public endpoints do, on command: a share of
// calls answered 500, 502, 503, 429 (with Retry-After), a JSON-RPC error, a reset connection or no answer at all; the
// whole endpoint down (connections refused, or accepted and never answered); raw transactions swallowed (answered
// with their hash, never forwarded: a transaction dropped from the mempool). Everything it does is counted, so a
// test can tell that the faults happened. It answers pages of any origin (CORS, Retry-After exposed), as public
// endpoints do. Node-only (node:http); tests and by-hand tries only.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mulberry32 } from './random.ts'
import type { AddressInfo, Socket } from 'node:net'
import { keccak256, type Hex } from 'viem'

type RpcRequest = { jsonrpc?: string; id: unknown; method: string; params?: unknown[] }

/** How a failed call fails. `hang`: the connection stays open and nothing is ever answered (a timeout for the caller). */
export type FaultKind = '500' | '502' | '503' | '429' | 'rpcError' | 'reset' | 'hang'

export type Faults = {
  /** The share of calls (0..1) that fail; 0 by default. */
  failRate?: number
  /** How they fail, one drawn at random per failed call; every kind but `hang` by default. */
  kinds?: FaultKind[]
  /** The Retry-After of a 429, in seconds (1 by default). */
  retryAfterSeconds?: number
  /** Only these methods fail (all by default). */
  methods?: string[]
  /** Every answer waits this long first (ms, 0 by default). */
  delayMs?: number
  /** Only this many calls fail (those that draw a fault), then no more: `{ failRate: 1, count: 1 }` fails the next call. */
  count?: number
}

/** `up`; `refuse`: the port is closed (connection refused); `blackhole`: connections are accepted and never answered. */
export type EndpointMode = 'up' | 'refuse' | 'blackhole'

export type FaultyRpcStats = {
  /** Calls received, by method (a batch counts each of its calls), black-holed ones included. */
  calls: Record<string, number>
  /** Calls failed on purpose, by kind. */
  failed: Record<string, number>
  /** Raw transactions answered with their hash and never forwarded. */
  swallowed: Hex[]
  /** The same, as signed: their nonces tell a replacement at a higher fee (another hash) from another transaction. */
  swallowedRaw: Hex[]
}

export type FaultyRpc = {
  url: string
  stats: FaultyRpcStats
  /** Replaces the faults (those not given go back to their defaults). */
  setFaults(faults: Faults): void
  setMode(mode: EndpointMode): Promise<void>
  /**
   * Whether eth_sendRawTransaction is swallowed: answered with the transaction's hash as a node that accepted it
   * would, and never forwarded (the transaction is "dropped from the mempool"). `count` swallows only the next ones.
   */
  swallowRawTransactions(on: boolean | { count: number }): void
  close(): Promise<void>
}

export type FaultyRpcOptions = Faults & {
  /** Seed of every random choice, so that a failing run can be repeated (printed in its failure). */
  seed?: number
  /** The port to listen on (a free one by default); kept across `refuse` and back to `up`. */
  port?: number
}

/** Starts the endpoint on 127.0.0.1, forwarding to `target`. */
export async function startFaultyRpc(target: string, { seed = Date.now() % 2 ** 31, port: wanted = 0, ...initial }: FaultyRpcOptions = {}): Promise<FaultyRpc> {
  const random = mulberry32(seed)
  const stats: FaultyRpcStats = { calls: {}, failed: {}, swallowed: [], swallowedRaw: [] }
  let faults: Faults = initial
  let mode: EndpointMode = 'up'
  let swallow: boolean | number = false
  const sockets = new Set<Socket>()
  const hanging = new Set<ServerResponse>()

  const failure = (method: string): FaultKind | undefined => {
    const rate = faults.failRate ?? 0
    if (rate <= 0 || (faults.methods && !faults.methods.includes(method))) return undefined
    if (faults.count !== undefined && faults.count <= 0) return undefined
    if (random() >= rate) return undefined
    if (faults.count !== undefined) faults = { ...faults, count: faults.count - 1 }
    const kinds = faults.kinds ?? ['500', '502', '503', '429', 'rpcError', 'reset']
    return kinds[Math.floor(random() * kinds.length)]
  }

  const forward = async (request: RpcRequest): Promise<unknown> => {
    if (request.method === 'eth_sendRawTransaction' && swallow !== false) {
      if (typeof swallow === 'number' && --swallow <= 0) swallow = false
      const raw = request.params?.[0] as Hex
      stats.swallowed.push(keccak256(raw))
      stats.swallowedRaw.push(raw)
      return { jsonrpc: '2.0', id: request.id, result: keccak256(raw) }
    }
    const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) })
    return response.json()
  }

  const server = createServer(async (req, res) => {
    if (mode === 'blackhole') {
      hanging.add(res)
      // Counted as received all the same, so that a test can tell which calls went there.
      try {
        const body = JSON.parse(await read(req)) as RpcRequest | RpcRequest[]
        for (const call of Array.isArray(body) ? body : [body]) stats.calls[call.method] = (stats.calls[call.method] ?? 0) + 1
      } catch {}
      return
    }
    res.setHeader('access-control-allow-origin', '*')
    res.setHeader('access-control-expose-headers', 'retry-after')
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type', 'access-control-max-age': '600' }).end()
      return
    }
    let body: RpcRequest | RpcRequest[]
    try {
      body = JSON.parse(await read(req)) as RpcRequest | RpcRequest[]
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error))
      return
    }
    const calls = Array.isArray(body) ? body : [body]
    for (const call of calls) stats.calls[call.method] = (stats.calls[call.method] ?? 0) + 1
    // One fault for the whole HTTP request: the first of its calls that draws one.
    let kind: FaultKind | undefined
    for (const call of calls) kind ??= failure(call.method)
    if (faults.delayMs) await new Promise((r) => setTimeout(r, faults.delayMs))
    if (kind) {
      stats.failed[kind] = (stats.failed[kind] ?? 0) + 1
      switch (kind) {
        case 'hang':
          hanging.add(res)
          return
        case 'reset':
          req.socket.destroy()
          return
        case 'rpcError': {
          const error = (c: RpcRequest) => ({ jsonrpc: '2.0', id: c.id, error: { code: -32603, message: 'internal error (injected)' } })
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Array.isArray(body) ? calls.map(error) : error(calls[0]!)))
          return
        }
        case '429':
          res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(faults.retryAfterSeconds ?? 1) }).end('Too Many Requests (injected)')
          return
        default:
          res.writeHead(Number(kind), { 'content-type': 'text/plain' }).end(`HTTP ${kind} (injected)`)
          return
      }
    }
    try {
      const answers = await Promise.all(calls.map(forward))
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Array.isArray(body) ? answers : answers[0]))
    } catch (error) {
      res.writeHead(502, { 'content-type': 'text/plain' }).end(String(error))
    }
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  const listen = (port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()))
  const stopListening = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy()
      hanging.clear()
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    })
  await listen(wanted)
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    setFaults: (next) => {
      faults = next
    },
    async setMode(next) {
      if (next === mode) return
      if (mode === 'refuse') await listen(port)
      if (mode === 'blackhole') {
        for (const res of hanging) res.destroy()
        hanging.clear()
      }
      mode = next
      if (next === 'refuse') await stopListening()
    },
    swallowRawTransactions: (on) => {
      swallow = typeof on === 'boolean' ? on : on.count
    },
    close: async () => {
      if (mode !== 'refuse') await stopListening()
    },
  }
}

async function read(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
