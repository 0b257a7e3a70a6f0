import { SluiceError } from '../errors.ts'
import { createAdaptorServer } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'

export type HttpServer = {
  /** http://host:port, with the port the OS gave when 0 was asked. */
  url: string
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

/** Serves a fetch handler (the Hono app) over HTTP/1.1 on host:port. */
export async function listen(fetch: (request: Request) => Response | Promise<Response>, { host, port }: { host: string; port: number }): Promise<HttpServer> {
  const server = createAdaptorServer({ fetch, overrideGlobalObjects: false }) as Server
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new AddressInUseError(host, port) : error))
    server.listen(port, host, () => resolve())
  })
  const { port: actual } = server.address() as AddressInfo
  const shown = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shown}:${actual}`,
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
