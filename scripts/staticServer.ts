// A static file server as a dApp's host is one, for `npm run demo` and `npm run bench`: files revalidated on each
// load (Last-Modified, 304), no compression, GET and HEAD only; what `route` takes (the demo's door to the peers'
// APIs, demoProxy.ts) first.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { extname, resolve, sep } from 'node:path'

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
}

/**
 * Serves `dir`. With `ownFiles`, serves only once it gives the run's own JSON files (by path, answered from memory
 * before the folder); until then a 503 that says to wait. `route` answers the requests it takes (resolving true)
 * before anything else.
 */
export function staticServer(
  dir: string,
  ownFiles: () => Map<string, string> | undefined = () => new Map(),
  route: (req: IncomingMessage, res: ServerResponse) => Promise<boolean> = async () => false,
): Server {
  const root = resolve(dir)
  return createServer(async (req, res) => {
    // A client gone mid-body, or a route that fails: the request ends, the server goes on.
    const routed = await route(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' })
      res.end()
      return true
    })
    if (routed) return
    const answer = (status: number, text: string) => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : `${text}\n`)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD')
      return answer(405, 'Method not allowed')
    }
    const own = ownFiles()
    if (!own) return answer(503, 'Starting (npm run demo): reload in a moment.')
    let pathname: string
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname)
    } catch {
      return answer(400, 'Bad request')
    }
    const json = own.get(pathname)
    if (json !== undefined) {
      res.writeHead(200, { 'Content-Type': contentTypes['.json']!, 'Content-Length': Buffer.byteLength(json), 'Cache-Control': 'no-cache' })
      return res.end(req.method === 'HEAD' ? undefined : json)
    }
    if (pathname.endsWith('/')) pathname += 'index.html'
    const file = resolve(root, `.${pathname}`)
    if (!file.startsWith(root + sep)) return answer(404, 'Not found')
    const info = await stat(file).catch(() => undefined)
    if (!info?.isFile()) return answer(404, 'Not found')
    const modified = info.mtime.toUTCString()
    const headers = { 'Last-Modified': modified, 'Cache-Control': 'no-cache' }
    if (req.headers['if-modified-since'] === modified) {
      res.writeHead(304, headers)
      return res.end()
    }
    res.writeHead(200, { ...headers, 'Content-Type': contentTypes[extname(file)] ?? 'application/octet-stream', 'Content-Length': info.size })
    if (req.method === 'HEAD') return res.end()
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res)
  })
}
