import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Stream } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { lpStream } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import type { Hex } from 'viem'
import { libp2pPrivateKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { messageProtocol, presenceTopic } from '../../../../src/transport/libp2p/protocol.ts'
import { lineSigner } from '../../../../src/transport/lineSigner.ts'
import { secretRequest } from '../messages.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

/**
 * A libp2p node with `key` and the same stack as the transport, but none of its logic (no presence, no handler, no
 * limits): a peer that speaks the message protocol however a test makes it.
 */
export const bareNode = (key: Hex): Promise<Libp2p> =>
  createLibp2p({
    privateKey: libp2pPrivateKey(key),
    transports: [webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify() },
  })

/**
 * A bare node that holds a reservation on `relay` and reads every message stream opened to it as fast as it can,
 * keeping nothing: what a flood through the relay goes to when the test is about the relay, not about a node.
 */
export async function sink(key: Hex, relay: string): Promise<Libp2p & { received: () => number }> {
  const node = await createLibp2p({
    privateKey: libp2pPrivateKey(key),
    addresses: { listen: ['/p2p-circuit'] },
    transports: [webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify() },
  })
  let received = 0
  await node.handle(
    messageProtocol,
    async (stream) => {
      for await (const chunk of stream) received += chunk.byteLength
    },
    { runOnLimitedConnection: true, maxInboundStreams: 64 },
  )
  await node.dial(multiaddr(relay))
  const reserved = () => node.getMultiaddrs().some((ma) => ma.toString().includes('/p2p-circuit'))
  for (let waited = 0; !reserved(); waited += 20) {
    if (waited > 20_000) throw new Error('the sink got no reservation')
    await new Promise((r) => setTimeout(r, 20))
  }
  return Object.assign(node, { received: () => received })
}

/** A message stream from `node` to `peerId` through `relay` (a relay multiaddr with its /p2p/). */
export async function messageStream(node: Libp2p, relay: string, peerId: string): Promise<Stream> {
  return node.dialProtocol(multiaddr(`${relay}/p2p-circuit/p2p/${peerId}`), messageProtocol, { runOnLimitedConnection: true })
}

const encoder = new TextEncoder()

/** An unsigned varint, as lpStream writes a frame's length before it. */
export function varint(n: number): Uint8Array {
  const bytes: number[] = []
  for (; n >= 0x80; n = Math.floor(n / 0x80)) bytes.push((n & 0x7f) | 0x80)
  return new Uint8Array([...bytes, n])
}

/** One frame of the message protocol: a JSON array of lines. */
export const frameOf = (lines: readonly string[]): Uint8Array => encoder.encode(JSON.stringify(lines))

/** Writes frames as they are given, each once the last is written. */
export function frameWriter(stream: Stream): (frame: Uint8Array) => Promise<void> {
  const lp = lpStream(stream)
  return (frame) => lp.write(frame)
}

/** `count` distinct protocol lines signed by `key` (SecretRequests, ids from `firstId`): each costs a receiver a recovery. */
export async function signedLines(key: Hex, count: number, firstId = 1n): Promise<string[]> {
  const sign = lineSigner(jsSecp256k1, key)
  return Promise.all(Array.from({ length: count }, (_, i) => sign(secretRequest(firstId + BigInt(i)))))
}

/**
 * A bare node on the presence topic through `relay`, with gossipsub as a node has it and none of its checks: it
 * publishes whatever bytes it is given, as often as it is told.
 */
export async function gossipPeer(key: Hex, relay: string): Promise<{ node: Libp2p<{ pubsub: GossipSub }>; publish(data: Uint8Array): Promise<void> }> {
  const node = await createLibp2p({
    privateKey: libp2pPrivateKey(key),
    transports: [webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, runOnLimitedConnection: true, doPX: false }) },
  })
  node.services.pubsub.subscribe(presenceTopic)
  await node.dial(multiaddr(relay))
  // The relay known to be on the topic: what it publishes then goes to the relay (gossipsub's flood publish).
  for (let waited = 0; node.services.pubsub.getSubscribers(presenceTopic).length === 0; waited += 20) {
    if (waited > 20_000) throw new Error('the relay never came on the topic')
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    node,
    publish: async (data) => {
      await node.services.pubsub.publish(presenceTopic, data)
    },
  }
}
