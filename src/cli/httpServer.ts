import { SluiceError } from '../errors.ts'
import { ApiError, errorAnswer } from '../api/errors.ts'
import { getRequestListener, RequestError } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:http'

export type HttpServer = {
  /** http://host:port, with the port the OS gave when 0 was asked. */
  url: string
  /** The port it listens on: the one the OS gave when 0 was asked. */
  port: number
  /** Stops accepting connections, gives open requests `graceMs` to finish, then drops them. */
  close(graceMs?: number): Promise<void>
}

export class AddressInUseError extends SluiceError {
  override name = 'AddressInUseError' as const
  override readonly code = 'ADDRESS_IN_USE' as const
  constructor(host: string, port: number) {
    super(`${host}:${port} is already in use`)
  }
}

/**
 * Serves a fetch handler (the Hono app) over HTTP/1.1 on host:port. A request no URL can be made of (a Host such as
 * `user@127.0.0.1`, a backslash in the path) never reaches it: it gets a 400 with the API's error body.
 */
export async function listen(fetch: (request: Request) => Response | Promise<Response>, { host, port }: { host: string; port: number }): Promise<HttpServer> {
  const server = createServer(
    getRequestListener(fetch, {
      overrideGlobalObjects: false,
      errorHandler: (error) =>
        error instanceof RequestError ? errorAnswer(new ApiError(400, `malformed request: ${error.message}`)) : new Response(null, { status: 500 }),
    }),
  )
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new AddressInUseError(host, port) : error))
    server.listen(port, host, () => resolve())
  })
  const { port: actual } = server.address() as AddressInfo
  const shown = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shown}:${actual}`,
    port: actual,
    close: (graceMs = 5_000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs)
        server.close(() => {
          clearTimeout(timer)
          resolve()
        })
        server.closeIdleConnections()
      }),
  }
}
