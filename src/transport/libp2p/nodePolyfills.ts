/**
 * What libp2p 3.x needs and Node 20 lacks (docs/transport.md, Node 20 polyfills): `Promise.withResolvers` (used in about 15
 * libp2p packages) and a global `WebSocket` (@libp2p/websockets dials with it). Import this first in Node
 * processes that start libp2p; never from code a browser loads (`ws` is a Node module).
 */
import { WebSocket } from 'ws'

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(this: PromiseConstructor) {
      let resolve!: (value: T | PromiseLike<T>) => void
      let reject!: (reason?: unknown) => void
      const promise = new this<T>((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    },
  })
}

/**
 * `ws` is an EventEmitter: an 'error' with no listener throws, and crashes the process. A browser WebSocket never
 * does, and @libp2p/websockets relies on that: it stops listening when a dial is aborted (a timeout, a stop), and
 * the socket's ECONNREFUSED comes later. So every socket gets a listener that ignores errors; the browser-style
 * listeners (onerror, addEventListener) still hear them.
 */
class NodeWebSocket extends WebSocket {
  constructor(url: string | URL, protocols?: string | string[]) {
    super(url, protocols)
    this.on('error', () => {})
  }
}

if (typeof globalThis.WebSocket !== 'function') {
  Object.defineProperty(globalThis, 'WebSocket', { configurable: true, writable: true, value: NodeWebSocket })
}
