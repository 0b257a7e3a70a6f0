import type { Address, Hex } from 'viem'
import type { Logger } from '../log/logger.ts'
import { createBroadcastChannelTransport } from '../transport/broadcastChannelTransport.ts'
import type { Libp2pTransport } from '../transport/libp2p/libp2pTransport.ts'
import type { Relay } from '../transport/libp2p/relay.ts'
import type { Transport } from '../transport/transport.ts'

/** How the devnet's nodes (and its monitoring service) reach each other. */
export type DevnetTransport = {
  /** With libp2p: the relay this devnet started on 127.0.0.1. */
  relay?: Relay
  /** The transport of one node (or the monitoring service): its key is its libp2p identity (`peerId`). */
  create(key: Hex, address: Address): Transport & { peerId?: string }
  /** The libp2p transports made so far, to wait for their presence. */
  readonly libp2p: readonly Libp2pTransport[]
}

/** How long a libp2p devnet waits, once the nodes run, for each to have seen every other (presence). */
const PRESENCE_WAIT_MS = 10_000

/**
 * The devnet's transport: a BroadcastChannel of its own name in this process, or libp2p through a relay it starts on
 * 127.0.0.1 (as nodes in separate processes talk).
 */
export async function startTransport(kind: 'broadcast' | 'libp2p', log: Logger): Promise<DevnetTransport> {
  const channelName = `sluice-devnet-${process.pid}-${Date.now()}`
  if (kind === 'broadcast') return { create: (_, address) => createBroadcastChannelTransport({ address, channelName }), libp2p: [] }
  // relay.ts loads the Node 20 polyfills (nodePolyfills.ts) before libp2p.
  const { startRelay } = await import('../transport/libp2p/relay.ts')
  const { createLibp2pTransport } = await import('../transport/libp2p/libp2pTransport.ts')
  log.info('starting a libp2p relay')
  const relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
  log.info('libp2p relay at {relay}', { relay: relay.multiaddrs })
  const made: Libp2pTransport[] = []
  return {
    relay,
    create: (key) => {
      // A devnet is on loopback: its nodes may dial the direct addresses of nodes beside them (`sluice serve --p2p-listen`).
      const transport = createLibp2pTransport({ privateKey: key, relays: relay.multiaddrs, announceIntervalMs: 5_000, allowPrivateDirect: true })
      made.push(transport)
      return transport
    },
    libp2p: made,
  }
}

/**
 * Each devnet node asks for every other (a node hears of the peers it wants: docs/transport.md, Presence), then
 * this waits until every node knows every other, so that the first payment goes out at once (if one is slow, its
 * messages still go out when it is seen: delivery retries).
 */
export async function waitForPresence(transports: readonly Libp2pTransport[], log: Logger): Promise<void> {
  const others = transports.length - 1
  if (others <= 0) return
  const [{ peerIdFromString }, { addressOfPeer }] = await Promise.all([import('@libp2p/peer-id'), import('../transport/libp2p/peerIdentity.ts')])
  const addresses = transports.map((t) => addressOfPeer(peerIdFromString(t.peerId))!)
  for (const t of transports) for (const address of addresses) t.connect!(address)
  log.info('waiting for the nodes to see each other through the relay')
  const deadline = Date.now() + PRESENCE_WAIT_MS
  while (transports.some((t) => t.stats().knownPeers < others) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  const known = Math.min(...transports.map((t) => t.stats().knownPeers))
  if (known < others)
    log.warn('libp2p: not every node has seen every other yet (after {seconds} s); messages go out once they have', { seconds: PRESENCE_WAIT_MS / 1000 })
}
