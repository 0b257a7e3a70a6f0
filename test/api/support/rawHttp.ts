import { request } from 'node:http'

export type RawReply = { status: number; headers: Record<string, string | string[] | undefined>; text: string; body: any }

/**
 * One HTTP/1.1 request with exactly the headers given, `Host` included (fetch sets the Host itself and adds
 * `sec-fetch-mode`): what a browser sends for another site's page, a DNS rebinding page, or a form. A body is sent
 * with its Content-Length and no Content-Type unless the headers give one.
 */
export function rawRequest(
  url: string,
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array },
): Promise<RawReply> {
  const target = new URL(url)
  const bytes = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : Buffer.from(body)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method,
        setHost: !Object.keys(headers).some((h) => h.toLowerCase() === 'host'),
        headers: { ...headers, ...(bytes ? { 'content-length': String(bytes.length) } : {}) },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () => {
          let parsed: unknown
          try {
            parsed = text ? JSON.parse(text) : undefined
          } catch {
            parsed = undefined
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, body: parsed })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(bytes)
  })
}
