// A TCP port in front of another on loopback, that a test can cut or close: the path to a node's direct address,
// which a test breaks without touching the node.
import { createServer, type Server, Socket } from 'node:net'

export type TcpForwarder = {
  /** The port it listens on. */
  readonly port: number
  /** Connections it accepted so far. */
  readonly accepted: number
  /** Bytes go nowhere from now on, either way; connections stay open (a link that drops every packet). */
  cut(): void
  /** Bytes flow again (what was sent during the cut is lost). */
  heal(): void
  /** Stops listening and resets every connection (a port closed): dials are refused until `open`. */
  close(): Promise<void>
  /** Listens again on the same port. */
  open(): Promise<void>
}

/** Forwards 127.0.0.1:<port> to 127.0.0.1:`target`. */
export async function startTcpForwarder(target: number): Promise<TcpForwarder> {
  const sockets = new Set<Socket>()
  let cut = false
  let accepted = 0
  const onConnection = (inbound: Socket) => {
    accepted++
    const outbound = new Socket()
    outbound.connect(target, '127.0.0.1')
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(from)
      from.on('data', (chunk) => {
        if (!cut) to.write(chunk)
      })
      from.on('error', () => to.destroy())
      from.on('close', () => {
        sockets.delete(from)
        to.destroy()
      })
    }
  }
  let server: Server = createServer(onConnection)
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port))
    })
  const port = await listen(0)
  return {
    port,
    get accepted() {
      return accepted
    },
    cut: () => {
      cut = true
    },
    heal: () => {
      cut = false
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const socket of sockets) socket.resetAndDestroy()
      await closed
    },
    open: async () => {
      server = createServer(onConnection)
      await listen(port)
    },
  }
}

/** A port that counts the connections made to it and answers none: where a dial that must not happen would land. */
export async function startTrap(): Promise<{ port: number; connections: () => number; stop(): Promise<void> }> {
  let connections = 0
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    stop: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
