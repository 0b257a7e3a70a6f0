// Direct paths between two real transports on loopback, with a real relay as the fallback: the relay's circuit
// count says whether it carries the pair's messages. A TCP forwarder in front of one node's socket is its announced
// direct address, which the test closes, cuts and brings back without touching the node.
import '../../../src/transport/libp2p/nodePolyfills.ts'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { lpStream } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import {
  createLibp2pTransport,
  type Libp2pTransport,
  type Libp2pTransportLogEvent,
  type Libp2pTransportParameters,
} from '../../../src/transport/libp2p/libp2pTransport.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../src/transport/libp2p/peerIdentity.ts'
import { encodePresence, signRecord } from '../../../src/transport/libp2p/presence.ts'
import { presenceProtocol } from '../../../src/transport/libp2p/protocol.ts'
import { startRelay, type Relay } from '../../../src/transport/libp2p/relay.ts'
import { parseRelay } from '../../../src/transport/libp2p/relayAddress.ts'
import { yamuxMuxer } from '../../../src/transport/libp2p/yamuxMuxer.ts'
import { startTcpForwarder, startTrap } from '../../support/tcpForwarder.ts'
import { sleep } from './support.ts'

const [keyA, keyB, keyC] = [anvilKeys[4]!, anvilKeys[5]!, anvilKeys[6]!]
const [A, B] = [privateKeyToAddress(keyA), privateKeyToAddress(keyB)]
const loopback = '/ip4/127.0.0.1/tcp/0/ws'
const eventually = <T>(check: () => T | Promise<T>, timeout = 5_000) => vi.waitFor(check, { timeout, interval: 10 })

let relay: Relay
beforeAll(async () => {
  relay = await startRelay({ listen: [loopback] })
})
afterAll(async () => {
  await relay?.stop()
})

const running: Libp2pTransport[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()))
})

type Node = { transport: Libp2pTransport; lines: string[]; peers: Address[]; logs: Libp2pTransportLogEvent[] }

async function started(key: Hex, options: Partial<Libp2pTransportParameters> = {}): Promise<Node> {
  const logs: Libp2pTransportLogEvent[] = []
  const transport = createLibp2pTransport({ privateKey: key, relays: relay.multiaddrs, log: (e) => logs.push(e), ...options })
  const node: Node = { transport, lines: [], peers: [], logs }
  transport.onPeerSeen!((peer) => node.peers.push(peer))
  await transport.start((lines) => node.lines.push(...lines))
  running.push(transport)
  return node
}

/** Both know each other (each wants the other, as channel partners do). */
async function introduced(a: Node, b: Node) {
  a.transport.connect!(B)
  b.transport.connect!(A)
  await eventually(() => {
    expect(a.peers).toContain(B)
    expect(b.peers).toContain(A)
  })
}

const directPort = (node: Node) => Number(/\/tcp\/(\d+)\/ws\/p2p\//.exec(node.transport.addresses().find((a) => !a.includes('/p2p-circuit')) ?? '')?.[1])

describe('direct paths between headless nodes', () => {
  test('two nodes that listen on loopback talk directly: no circuit through the relay, both ways', async () => {
    const options = { listen: [loopback], allowPrivateDirect: true }
    const [a, b] = await Promise.all([started(keyA, options), started(keyB, options)])
    // Each announces its circuit on the relay, then its direct address, ending at its own peer id.
    expect(b.transport.addresses()).toEqual([
      expect.stringMatching(new RegExp(`/p2p-circuit/p2p/${b.transport.peerId}$`)),
      expect.stringMatching(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/ws/p2p/${b.transport.peerId}$`)),
    ])
    await introduced(a, b)
    const t0 = performance.now()
    await a.transport.send(B, ['to b'])
    await eventually(() => expect(b.lines).toEqual(['to b']))
    const first = performance.now() - t0
    await b.transport.send(A, ['to a'])
    await eventually(() => expect(a.lines).toEqual(['to a']))
    console.log(`first line A→B over a direct connection (dial, Noise, yamux, stream): ${first.toFixed(1)} ms`)
    expect(relay.circuits()).toBe(0)
    expect(a.transport.stats().directPeers).toBe(1)
    expect(b.transport.stats().directPeers).toBe(1)
    // Each opened its way to the other ahead (connect): one direct connection each way, or one if a dial found the
    // other's already up; never a relayed one.
    const opened = a.logs.filter((e) => e.type === 'directOpen')
    expect(opened.length).toBeGreaterThanOrEqual(1)
    expect(opened.every((e) => e.type === 'directOpen' && e.peer === b.transport.peerId)).toBe(true)
    expect(a.logs.filter((e) => e.type === 'directFailed')).toEqual([])
  })

  test('a node without direct addresses is reached through the relay, as before', async () => {
    const [a, b] = await Promise.all([started(keyA, { allowPrivateDirect: true }), started(keyB)])
    expect(b.transport.addresses()).toHaveLength(1)
    await introduced(a, b)
    await a.transport.send(B, ['through the relay'])
    await eventually(() => expect(b.lines).toEqual(['through the relay']))
    expect(relay.circuits()).toBeGreaterThan(0)
    expect(a.transport.stats().directPeers).toBe(0)
  })

  test('the port closed: the next lines go through the relay at once; open again, the pair goes direct again and the circuit closes', async () => {
    const b0 = await started(keyB, { listen: [loopback] })
    const port = directPort(b0)
    await b0.transport.stop()
    running.splice(running.indexOf(b0.transport), 1)
    // B listens on a port of its own and announces the forwarder's in front of it.
    const forwarder = await startTcpForwarder(port)
    const b = await started(keyB, { listen: [`/ip4/127.0.0.1/tcp/${port}/ws`], announce: [`/ip4/127.0.0.1/tcp/${forwarder.port}/ws`] })
    const a = await started(keyA, { allowPrivateDirect: true, directRetryMs: 300, directCheckMs: 1_000 })
    await introduced(a, b)
    let sent = 0
    const send = async () => {
      const line = `line ${sent++}`
      await a.transport.send(B, [line]).catch(() => {})
      return line
    }
    await send()
    await eventually(() => expect(b.lines).toEqual(['line 0']))
    // B cannot dial A directly (A does not listen): its way to A may have gone through the relay, until A's direct
    // connection came up, over which B answers too; then the circuit closes.
    await eventually(() => {
      expect(a.transport.stats().directPeers).toBe(1)
      expect(relay.circuits()).toBe(0)
    })
    expect(forwarder.accepted).toBe(1)

    await forwarder.close()
    const closedAt = performance.now()
    await eventually(async () => {
      const line = await send()
      await sleep(20)
      expect(b.lines).toContain(line)
    })
    console.log(`port closed: a line reached B through the relay ${(performance.now() - closedAt).toFixed(0)} ms later`)
    expect(relay.circuits()).toBe(1)
    expect(a.transport.stats().directPeers).toBe(0)

    await forwarder.open()
    const openedAt = performance.now()
    await eventually(async () => {
      await send()
      await sleep(50)
      expect(a.transport.stats().directPeers).toBe(1)
      expect(relay.circuits()).toBe(0)
    }, 10_000)
    console.log(`port open again: direct again and the circuit closed ${(performance.now() - openedAt).toFixed(0)} ms later`)
    const line = await send()
    await eventually(() => expect(b.lines).toContain(line))
    expect(relay.circuits()).toBe(0)
  }, 30_000)

  test('the direct path cut (nothing answers, nothing resets): given up within the check, the relay carries the lines, and direct again once healed', async () => {
    const b0 = await started(keyB, { listen: [loopback] })
    const port = directPort(b0)
    await b0.transport.stop()
    running.splice(running.indexOf(b0.transport), 1)
    const forwarder = await startTcpForwarder(port)
    const b = await started(keyB, { listen: [`/ip4/127.0.0.1/tcp/${port}/ws`], announce: [`/ip4/127.0.0.1/tcp/${forwarder.port}/ws`] })
    const checkMs = 600
    const a = await started(keyA, { allowPrivateDirect: true, directRetryMs: 500, directCheckMs: checkMs })
    await introduced(a, b)
    await a.transport.send(B, ['before'])
    await eventually(() => expect(b.lines).toEqual(['before']))
    // Direct, whichever came first (B's announcement, or its stream through the relay), and the circuit closed.
    await eventually(() => {
      expect(a.transport.stats().directPeers).toBe(1)
      expect(relay.circuits()).toBe(0)
    })

    forwarder.cut()
    const cutAt = performance.now()
    // A line a moment, as a node's delivery would resend; those written into the dead connection are lost.
    let sent = 0
    let arrivedAt: number | undefined
    while (arrivedAt === undefined) {
      const line = `during the cut ${sent++}`
      await a.transport.send(B, [line]).catch(() => {})
      await sleep(50)
      if (b.lines.includes(line)) arrivedAt = performance.now() - cutAt
      expect(performance.now() - cutAt).toBeLessThan(5 * checkMs + 2_000)
    }
    console.log(`direct path cut: a line reached B through the relay ${arrivedAt.toFixed(0)} ms later (a check every ${checkMs} ms)`)
    expect(relay.circuits()).toBe(1)
    // Within a check and its timeout, plus the dial through the relay.
    expect(arrivedAt).toBeLessThan(2.5 * checkMs + 1_000)

    forwarder.heal()
    await eventually(async () => {
      await a.transport.send(B, ['after']).catch(() => {})
      await sleep(50)
      expect(a.transport.stats().directPeers).toBe(1)
      expect(relay.circuits()).toBe(0)
    }, 10_000)
  }, 30_000)
})

describe('what an announcement may make a node dial', () => {
  const C = privateKeyToAddress(keyC)
  const cId = peerIdOfKey(keyC).toString()
  const relayPeer = () => parseRelay(relay.multiaddrs[0]!).peerId

  /**
   * A hostile node C: connected to the relay without a reservation, it puts records it signed itself with whatever
   * direct addresses it likes, as any node can.
   */
  async function hostile() {
    const c = await createLibp2p({
      privateKey: libp2pPrivateKey(keyC),
      transports: [webSockets()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamuxMuxer()],
      services: { identify: identify() },
    })
    await c.dial(multiaddr(relay.multiaddrs[0]!))
    const lp = lpStream(await c.dialProtocol(relayPeer(), presenceProtocol))
    let ts = Date.now()
    return {
      stop: () => c.stop(),
      announce: async (addrs: string[]) =>
        lp.write(encodePresence({ put: await signRecord(libp2pPrivateKey(keyC), cId, { v: 1, session: 'hostile', addrs, ts: ++ts }) })),
    }
  }

  /**
   * C announces `addrs`; once each node has its record, it sends C a line: C's way is dialled (its direct addresses
   * first, where taken) and fails (C has no reservation).
   */
  async function announceAndSend(c: Awaited<ReturnType<typeof hostile>>, addrs: string[], nodes: Node[]) {
    const before = nodes.map((node) => node.peers.filter((p) => p === C).length)
    await c.announce(addrs)
    for (const [i, node] of nodes.entries()) {
      await eventually(() => expect(node.peers.filter((p) => p === C).length).toBeGreaterThan(before[i]!))
      await node.transport.send(C, ['x']).catch(() => {})
    }
    await sleep(300)
  }

  test('a direct address of another peer id is never dialled; a private one only by a node that allows them (the trap sees that dial)', async () => {
    const [otherId, privateOwn] = await Promise.all([startTrap(), startTrap()])
    const c = await hostile()
    try {
      // A refuses private direct addresses (the default); B allows them (a devnet).
      const [a, b] = await Promise.all([started(keyA), started(keyB, { allowPrivateDirect: true })])
      a.transport.connect!(C)
      b.transport.connect!(C)
      // Another node's peer id on a port of C's choosing: whoever dialled it would open a connection there.
      await announceAndSend(c, [`/ip4/127.0.0.1/tcp/${otherId.port}/ws/p2p/${peerIdOfKey(anvilKeys[7]!)}`], [a, b])
      expect(otherId.connections()).toBe(0)
      // C's own peer id, on loopback.
      await announceAndSend(c, [`/ip4/127.0.0.1/tcp/${privateOwn.port}/ws/p2p/${cId}`], [a, b])
      expect(privateOwn.connections()).toBe(1)
      expect(a.logs.filter((e) => e.type === 'directFailed')).toEqual([])
    } finally {
      await c.stop()
      await Promise.all([otherId.stop(), privateOwn.stop()])
    }
  })
})
