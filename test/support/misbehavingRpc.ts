// A JSON-RPC endpoint in front of a real one (the run's anvil) that answers as a careless provider may: every
// answer late by a random few milliseconds (so answers overtake each other), and eth_getLogs answers with logs
// twice, out of order, with the logs of earlier answers again (those whose range overlaps, and a stale one), and
// with copies marked `removed` or missing their position. It never drops or alters a log of the range asked for:
// what a node applies must still be exactly the chain's logs. Node-only (node:http).
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mulberry32 } from './random.ts'

type RpcLog = { blockNumber: string | null; logIndex: string | null; transactionHash: string | null; removed?: boolean; [k: string]: unknown }
type RpcRequest = { id: unknown; method: string; params?: unknown[] }
type RpcAnswer = { id: unknown; result?: unknown; error?: unknown }

export type MisbehavingRpcOptions = {
  /** Seed of every random choice: a failing run prints it, and the same seed makes the same choices. */
  seed: number
  /** Each answer waits up to this long (5 ms by default). */
  maxDelayMs?: number
}

export type MisbehavingRpc = {
  url: string
  /** What it did: eth_getLogs answers, logs added to them, and the most eth_getLogs it had in flight at once. */
  stats: { getLogs: number; duplicated: number; replayed: number; removedCopies: number; incompleteCopies: number; maxGetLogsInFlight: number }
  close(): Promise<void>
}

/** Starts the endpoint on 127.0.0.1 (a free port), forwarding to `target`. */
export async function startMisbehavingRpc(target: string, { seed, maxDelayMs = 5 }: MisbehavingRpcOptions): Promise<MisbehavingRpc> {
  const random = mulberry32(seed)
  const chance = (p: number) => random() < p
  const stats: MisbehavingRpc['stats'] = { getLogs: 0, duplicated: 0, replayed: 0, removedCopies: 0, incompleteCopies: 0, maxGetLogsInFlight: 0 }
  /** Earlier eth_getLogs answers, newest last (a bounded number). */
  const earlier: { from: bigint; to: bigint; logs: RpcLog[] }[] = []
  let getLogsInFlight = 0

  const misbehave = (request: RpcRequest, logs: RpcLog[]): RpcLog[] => {
    stats.getLogs++
    const filter = (request.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string }
    const from = BigInt(filter.fromBlock ?? '0x0')
    const to = BigInt(filter.toBlock ?? '0x0')
    const out = [...logs]
    const add = (kind: 'duplicated' | 'removedCopies' | 'incompleteCopies' | 'replayed', ...added: RpcLog[]) => {
      out.push(...added)
      stats[kind] += added.length
    }
    const positionFields = ['blockNumber', 'logIndex', 'transactionHash'] as const
    // Each kind of copy at random, and surely while none of that kind has been made yet: a test that counts
    // on meeting each kind cannot fail for a draw that made none (it did, with 0.1 a log over a few dozen logs).
    const sometimes = (kind: keyof typeof stats, p: number) => stats[kind] === 0 || chance(p)
    for (const log of logs) {
      if (sometimes('duplicated', 0.3)) add('duplicated', { ...log })
      if (sometimes('removedCopies', 0.1)) add('removedCopies', { ...log, removed: true })
      if (sometimes('incompleteCopies', 0.1)) add('incompleteCopies', { ...log, [positionFields[Math.floor(random() * 3)]!]: null })
    }
    // Each earlier answer again when its range overlaps this one, and one earlier answer, whatever its range.
    const again = earlier.filter((a) => a.from <= to && from <= a.to)
    if (earlier.length > 0) again.push(earlier[Math.floor(random() * earlier.length)]!)
    for (const a of again) add('replayed', ...a.logs.map((l) => ({ ...l })))
    earlier.push({ from, to, logs })
    if (earlier.length > 20) earlier.shift()
    // Fisher-Yates.
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }

  const answer = async (request: RpcRequest): Promise<RpcAnswer> => {
    const isGetLogs = request.method === 'eth_getLogs'
    if (isGetLogs) stats.maxGetLogsInFlight = Math.max(stats.maxGetLogsInFlight, ++getLogsInFlight)
    try {
      const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) })
      const forwarded = (await response.json()) as RpcAnswer
      await new Promise((r) => setTimeout(r, random() * maxDelayMs))
      if (isGetLogs && Array.isArray(forwarded.result)) return { ...forwarded, result: misbehave(request, forwarded.result as RpcLog[]) }
      return forwarded
    } finally {
      if (isGetLogs) getLogsInFlight--
    }
  }

  const server = createServer(async (req, res) => {
    try {
      const body = JSON.parse(await read(req)) as RpcRequest | RpcRequest[]
      const result = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body)
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result))
    } catch (error) {
      res.writeHead(502, { 'content-type': 'text/plain' }).end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((e) => (e ? reject(e) : resolve()))
      }),
  }
}

async function read(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
