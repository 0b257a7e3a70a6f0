import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { PrivateKey } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { isPrivate } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Libp2pOptions } from 'libp2p'
import { isCircuit, withoutPeerId, type RelayAddress } from './relayAddress.ts'
import { yamuxMuxer } from './yamuxMuxer.ts'

export type Services = { identify: unknown; pubsub: GossipSub }

/**
 * Whether a dial to `ma` is refused. Browsers refuse loopback and private addresses by default, which would rule
 * out a local relay (dev, tests). Our configured relays and circuits are always allowed; other private addresses
 * (which a peer could list in identify) are refused everywhere.
 */
export function deniesDial(relays: readonly RelayAddress[]): (ma: Multiaddr) => boolean {
  const relayAddrs = new Set(relays.map((r) => withoutPeerId(r.addr)))
  return (ma) => !relayAddrs.has(withoutPeerId(ma)) && !isCircuit(ma) && isPrivate(ma) === true
}

/**
 * The libp2p node of a transport (docs/transport.md): WebSockets to the relays, circuit relay v2 to reach peers
 * by PeerId, Noise, yamux, identify, and gossipsub for presence. Created stopped.
 */
export function libp2pOptions(privateKey: PrivateKey, relays: readonly RelayAddress[]): Libp2pOptions<Services> {
  return {
    start: false,
    privateKey,
    // Listen on any relay we reserve on: the reservation store re-reserves whenever we reconnect to one.
    addresses: { listen: relays.length > 0 ? ['/p2p-circuit'] : [] },
    transports: [webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    connectionGater: { denyDialMultiaddr: deniesDial(relays) },
    services: {
      identify: identify(),
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, runOnLimitedConnection: true, doPX: false }),
    },
  }
}
