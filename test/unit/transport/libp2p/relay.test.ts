import '../../../../src/transport/libp2p/nodePolyfills.ts'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, describe, expect, test, vi } from 'vitest'
import { createLibp2pTransport, type Libp2pTransport } from '../../../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay } from '../../../../src/transport/libp2p/relay.ts'

const running: Libp2pTransport[] = []
afterAll(async () => {
  await Promise.allSettled(running.map((t) => t.stop()))
})

describe('relay: many nodes behind one address', () => {
  // Browsers behind one carrier-grade NAT or office router share an address, as every node of a test does. Gossipsub's
  // IP colocation penalty gave each peer past the tenth a negative score, and the hub then dropped their
  // announcements (and kept the score for an hour after they left): nobody new could be found through that relay.
  test('the 15th and 16th nodes on one address still find each other by presence and exchange lines', async () => {
    const relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
    try {
      const start = async (receive: (lines: string[]) => void = () => {}) => {
        const t = createLibp2pTransport({ privateKey: generatePrivateKey(), relays: relay.multiaddrs })
        running.push(t)
        await t.start((lines) => receive(lines))
        return t
      }
      for (let i = 0; i < 14; i += 7) await Promise.all(Array.from({ length: 7 }, () => start()))
      const keyB = generatePrivateKey()
      const B = privateKeyToAddress(keyB)
      const a = await start()
      const seen: Address[] = []
      a.onPeerSeen!((peer) => seen.push(peer))
      a.connect!(B)
      const received: string[] = []
      const b = createLibp2pTransport({ privateKey: keyB, relays: relay.multiaddrs })
      running.push(b)
      await b.start((lines) => received.push(...lines))
      await vi.waitFor(() => expect(seen).toContain(B), { timeout: 10_000, interval: 20 })
      await a.send(B, ['hello from the 15th'])
      await vi.waitFor(() => expect(received).toEqual(['hello from the 15th']), { timeout: 5_000, interval: 20 })
    } finally {
      await Promise.allSettled(running.splice(0).map((t) => t.stop()))
      await relay.stop()
    }
  })
})
