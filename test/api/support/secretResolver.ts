import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Hex } from 'viem'

export type ResolverRequest = { text: string; body: Record<string, unknown>; contentType: string | undefined }

/**
 * A real secret-resolver HTTP endpoint (docs/rest-api.md, the secret resolver): answers 200 {"secret"}
 * for the hashes it knows and 404 otherwise. While `hold` is set, it keeps requests waiting until `release()`.
 */
export type SecretResolver = {
  url: string
  secrets: Map<Hex, Hex>
  requests: ResolverRequest[]
  hold: boolean
  /** While above 0, requests get 503 (and it counts down): a resolver that is temporarily unavailable. */
  unavailable: number
  /** Answers the held requests now. */
  release(): void
  /** Resolves once a request for this secret hash has arrived. */
  requested(secrethash: Hex, timeoutMs?: number): Promise<ResolverRequest>
  close(): Promise<void>
}

export async function startSecretResolver(): Promise<SecretResolver> {
  const held: (() => void)[] = []
  const server: Server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (text += chunk))
    req.on('end', () => {
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(text) as Record<string, unknown>
      } catch {
        // recorded as an empty body: the test then fails on its fields
      }
      resolver.requests.push({ text, body, contentType: req.headers['content-type'] })
      const answer = () => {
        if (resolver.unavailable > 0) {
          resolver.unavailable--
          res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'try again later' }))
          return
        }
        const secret = typeof body.secrethash === 'string' ? resolver.secrets.get(body.secrethash.toLowerCase() as Hex) : undefined
        res.writeHead(secret ? 200 : 404, { 'content-type': 'application/json' })
        res.end(JSON.stringify(secret ? { secret } : { error: 'unknown secret hash' }))
      }
      if (resolver.hold) held.push(answer)
      else answer()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const resolver: SecretResolver = {
    url: `http://127.0.0.1:${port}/resolve`,
    secrets: new Map(),
    requests: [],
    hold: false,
    unavailable: 0,
    release: () => {
      for (const answer of held.splice(0)) answer()
    },
    requested: async (secrethash, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = resolver.requests.find((r) => r.body.secrethash === secrethash)
        if (found) return found
        if (Date.now() > deadline) throw new Error(`the resolver was not asked for ${secrethash}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        resolver.release()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return resolver
}
