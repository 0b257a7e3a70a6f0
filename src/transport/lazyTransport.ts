import type { Address } from 'viem'
import { TransportClosedError } from './errors.ts'
import type { Transport } from './transport.ts'

/**
 * A Transport whose adapter is loaded when it starts, not when the node is built. The browser worker builds its
 * node with this around libp2p (most of the worker's bytes, in chunks of their own): the node answers its first
 * request while libp2p still loads and reaches the relay, instead of after.
 */
export function lazyTransport(load: () => Promise<Transport>): Transport {
  let loading: Promise<Transport> | undefined
  let stopped = false
  const peerSeen: ((peer: Address) => void)[] = []
  const loaded = () => {
    loading ??= load().then((transport) => {
      for (const listener of peerSeen) transport.onPeerSeen?.(listener)
      return transport
    })
    return loading
  }
  return {
    async start(onMessages) {
      if (stopped) throw new TransportClosedError('start')
      const transport = await loaded()
      // Stopped while it loaded: stop() stops the adapter, which must not start after that.
      if (stopped) throw new TransportClosedError('start')
      await transport.start(onMessages)
    },
    async send(to, lines) {
      if (!loading || stopped) throw new TransportClosedError('send')
      await (await loading).send(to, lines)
    },
    onPeerSeen(listener) {
      peerSeen.push(listener)
    },
    async stop() {
      stopped = true
      // Never loaded: nothing to stop. A load in progress is stopped once it is done (a failed one has nothing).
      const transport = await loading?.catch(() => undefined)
      await transport?.stop()
    },
  }
}
