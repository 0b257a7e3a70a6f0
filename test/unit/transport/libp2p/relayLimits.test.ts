import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { multiaddr } from '@multiformats/multiaddr'
import type { Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransport, type Libp2pTransportLogEvent } from '../../../../src/transport/libp2p/libp2pTransport.ts'
import { lpStream } from '@libp2p/utils'
import { encodeAnnouncement, encodePresence, maxWatchBatch, signRecord } from '../../../../src/transport/libp2p/presence.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { presenceProtocol } from '../../../../src/transport/libp2p/protocol.ts'
import { startRelay, type Relay, type StartRelayParameters } from '../../../../src/transport/libp2p/relay.ts'
import { ipOf } from '../../../../src/transport/libp2p/relayLimits.ts'
import { isProxyEntry } from '../../../../src/transport/libp2p/relayLimitOptions.ts'
import { honestPeer, meet, quantile, roundTrips, startFlooder, startSink, type HonestPeer } from './honestPeers.ts'
import { bareNode, gossipPeer } from './roguePeer.ts'

/**
 * The relay's limits per peer and per IP address (relayLimits.ts), each met by real libp2p peers on this machine
 * (one address, 127.0.0.1): what goes over is refused or held back, counted in `stats()` and told in one report per
 * source and interval; what stays within, and the honest peers beside, go on.
 */
const [keyA, keyB, keyF] = [anvilKeys[4]!, anvilKeys[5]!, anvilKeys[6]!]
const F = peerIdOfKey(keyF).toString()
const addressF = privateKeyToAddress(keyF)
const eventually = <T>(check: () => T | Promise<T>, timeout = 10_000) => vi.waitFor(check, { timeout, interval: 20 })

type Report = { at: number; source: string; counts: Record<string, number> }
const stops: (() => unknown)[] = []
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await Promise.resolve(stop()).catch(() => {})
})

/** A relay in this process with `limits`; its drop reports are collected (every 300 ms). */
async function relayWith(limits: StartRelayParameters['limits'], more: Partial<StartRelayParameters> = {}): Promise<Relay & { reports: Report[] }> {
  const reports: Report[] = []
  const relay = await startRelay({
    ...more,
    listen: ['/ip4/127.0.0.1/tcp/0/ws'],
    ...(limits ? { limits } : {}),
    dropReportIntervalMs: 300,
    onDrops: (source, counts) => reports.push({ at: performance.now(), source, counts: counts as Record<string, number> }),
  })
  stops.push(() => relay.stop())
  return Object.assign(relay, { reports })
}

async function peer(key: Hex, relays: readonly string[]): Promise<HonestPeer> {
  const p = await honestPeer(key, relays)
  stops.push(() => p.stop())
  return p
}

/** At most one report per source in any one interval (300 ms, with some room for a timer's lateness). */
function expectOnePerInterval(reports: Report[], source: string) {
  const times = reports.filter((r) => r.source === source).map((r) => r.at)
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThan(250)
}

describe('relay: what one IP address may hold', () => {
  test('connections past --max-connections-per-ip are refused and counted; one closed makes room', async () => {
    const relay = await relayWith({ maxConnectionsPerIp: 3 })
    const nodes = await Promise.all(Array.from({ length: 5 }, () => bareNode(generatePrivateKey())))
    stops.push(() => Promise.all(nodes.map((n) => n.stop())))
    const results = await Promise.allSettled(nodes.map((n) => n.dial(multiaddr(relay.multiaddrs[0]!))))
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3)
    expect(relay.stats()).toMatchObject({ connections: 3, drops: { connectionsPerIp: 2 } })
    await eventually(() => expect(relay.reports).toContainEqual(expect.objectContaining({ source: '127.0.0.1', counts: { connectionsPerIp: 2 } })))
    const connected = nodes.filter((_, i) => results[i]!.status === 'fulfilled')
    await connected[0]!.stop()
    await eventually(() => expect(relay.stats().connections).toBe(2))
    const refused = nodes[results.findIndex((r) => r.status === 'rejected')]!
    await refused.dial(multiaddr(relay.multiaddrs[0]!))
    expect(relay.stats().connections).toBe(3)
  })

  test('an address holding 8 connections in their handshake gets no more until one ends', async () => {
    const relay = await relayWith({})
    const url = relay.multiaddrs[0]!.replace(/^\/ip4\/([^/]+)\/tcp\/(\d+)\/ws\/.*$/, 'ws://$1:$2')
    // WebSockets that never start Noise: each holds a handshake until libp2p's upgrade timeout (10 s).
    const silent = Array.from({ length: 10 }, () => new WebSocket(url))
    stops.push(() => silent.forEach((ws) => ws.close()))
    const closedByRelay = silent.map((ws) => new Promise<boolean>((resolve) => ws.addEventListener('close', () => resolve(true))))
    await eventually(() => expect(relay.stats().drops.handshakesPerIp).toBe(2))
    expect(relay.stats().connections).toBe(8)
    // The refused two are closed by the relay; the eight wait.
    expect(await Promise.race([Promise.all(closedByRelay.slice(8)), new Promise((r) => setTimeout(() => r('open'), 2_000))])).toEqual([true, true])
    const node = await bareNode(generatePrivateKey())
    stops.push(() => node.stop())
    await expect(node.dial(multiaddr(relay.multiaddrs[0]!))).rejects.toThrow()
    for (const ws of silent) ws.close()
    await eventually(() => expect(relay.stats().connections).toBe(0))
    await node.dial(multiaddr(relay.multiaddrs[0]!))
    expect(relay.stats().drops.handshakesPerIp).toBe(3)
  })

  test('new connections past --max-connection-rate are refused and counted', async () => {
    const relay = await relayWith({ maxConnectionRate: 2 })
    const nodes = await Promise.all(Array.from({ length: 6 }, () => bareNode(generatePrivateKey())))
    stops.push(() => Promise.all(nodes.map((n) => n.stop())))
    const results = await Promise.allSettled(nodes.map((n) => n.dial(multiaddr(relay.multiaddrs[0]!))))
    const refused = results.filter((r) => r.status === 'rejected').length
    // Two a second: a burst of six within a second or two lets two to four in.
    expect(refused).toBeGreaterThanOrEqual(2)
    expect(relay.stats().drops.connectionRate).toBe(refused)
  })

  test('reservations past --max-reservations-per-ip are refused and counted; behind a proxy (--proxy) the address has no such limit', async () => {
    const start = async (relay: Relay) => {
      const logs: Libp2pTransportLogEvent[] = []
      const t = createLibp2pTransport({ privateKey: generatePrivateKey(), relays: relay.multiaddrs, startTimeoutMs: 3_000, log: (e) => logs.push(e) })
      stops.push(() => t.stop())
      await t.start(() => {})
      return { t, logs }
    }
    const strict = await relayWith({ maxReservationsPerIp: 2 })
    const held = [await start(strict), await start(strict)]
    expect(held.map(({ t }) => t.addresses().length)).toEqual([1, 1])
    const third = await start(strict)
    expect(third.t.addresses()).toEqual([])
    expect(third.logs).toContainEqual(expect.objectContaining({ type: 'noReservation' }))
    expect(strict.stats().reservations).toBe(2)
    expect(strict.stats().drops.reservationsPerIp).toBeGreaterThanOrEqual(1)

    const proxied = await relayWith({ maxReservationsPerIp: 2, maxConnectionsPerIp: 2, proxies: ['127.0.0.0/8'] })
    const all: { t: Libp2pTransport }[] = []
    for (let i = 0; i < 3; i++) all.push(await start(proxied))
    expect(all.map(({ t }) => t.addresses().length)).toEqual([1, 1, 1])
    expect(proxied.stats()).toMatchObject({ reservations: 3, drops: { reservationsPerIp: 0, connectionsPerIp: 0 } })
  }, 30_000)
})

describe('relay: announcements on the presence topic', () => {
  test('too large, not one, stale or too often: dropped, counted, reported once per interval; the honest ones pass', async () => {
    // A relay without a presence registry, as before decision 0067: nodes listen on the topic, which its validator guards.
    const relay = await relayWith({ maxAnnouncementsPerMinute: 10 }, { presenceRegistry: false })
    const listener = await peer(keyA, relay.multiaddrs)
    const rogue = await gossipPeer(keyF, relay.multiaddrs[0]!)
    stops.push(() => rogue.node.stop())
    const announcement = (over: object = {}) => encodeAnnouncement({ v: 1, session: 's', addrs: [], ts: Date.now(), ...over })
    await rogue.publish(announcement({ addrs: Array.from({ length: 5 }, (_, i) => `/${i}/${'x'.repeat(1000)}`) }))
    await rogue.publish(new TextEncoder().encode('not an announcement'))
    await rogue.publish(announcement({ ts: Date.now() - 11 * 60_000 }))
    await eventually(() => expect(relay.stats().drops).toMatchObject({ announcementTooLarge: 1, announcementInvalid: 1, announcementStale: 1 }))
    expect(listener.seen.has(addressF)).toBe(false)
    // Fifteen in a burst, ten a minute allowed: the first ten pass (and the listener hears of the rogue), five do not.
    for (let i = 0; i < 15; i++) await rogue.publish(announcement({ session: `s${i}` }))
    await eventually(() => expect(relay.stats().drops.announcementTooOften).toBe(5))
    await eventually(() => expect([...listener.seen]).toContain(addressF))
    await eventually(() => {
      const reported = relay.reports
        .filter((r) => r.source === F)
        .reduce<Record<string, number>>((sum, r) => {
          for (const [k, n] of Object.entries(r.counts)) sum[k] = (sum[k] ?? 0) + n
          return sum
        }, {})
      expect(reported).toEqual({ announcementTooLarge: 1, announcementInvalid: 1, announcementStale: 1, announcementTooOften: 5 })
    })
    expectOnePerInterval(relay.reports, F)
  }, 30_000)
})

describe("relay: the presence registry's limits", () => {
  /** A bare node's presence stream to `relay`, written to as a test likes (none of a node's own pacing). */
  async function presenceStream(key: Hex, relay: Relay) {
    const node = await bareNode(key)
    stops.push(() => node.stop())
    const stream = await node.dialProtocol(multiaddr(relay.multiaddrs[0]!), presenceProtocol)
    const lp = lpStream(stream)
    return { node, stream, write: (message: object) => lp.write(encodePresence(message)) }
  }
  const someAddresses = (n: number) => Array.from({ length: n }, () => privateKeyToAddress(generatePrivateKey()).toLowerCase())

  test('records put faster than announcements may be are dropped and counted; the first reach a watcher', async () => {
    const relay = await relayWith({ maxAnnouncementsPerMinute: 10 })
    const watcher = await peer(keyA, relay.multiaddrs)
    watcher.transport.connect!(addressF)
    const rogue = await presenceStream(keyF, relay)
    const key = libp2pPrivateKey(keyF)
    const t0 = Date.now()
    // Each newer than the last, so each would be taken and handed on but for the limit.
    for (let i = 0; i < 25; i++) await rogue.write({ put: await signRecord(key, F, { v: 1, session: `s${i}`, addrs: [], ts: t0 + i }) })
    await eventually(() => expect(relay.stats().drops.announcementTooOften).toBe(15))
    await eventually(() => expect([...watcher.seen]).toContain(addressF))
    await eventually(() => expect(relay.reports.filter((r) => r.source === F).reduce((n, r) => n + (r.counts.announcementTooOften ?? 0), 0)).toBe(15))
  }, 30_000)

  test("an address's watches past --max-watches-per-ip are not taken and are counted; they are its again once its streams end", async () => {
    const relay = await relayWith({ maxWatchesPerIp: 300 })
    const rogue = await presenceStream(keyF, relay)
    await rogue.write({ watch: someAddresses(maxWatchBatch) })
    await eventually(() => expect(relay.presence().watches).toBe(300))
    expect(relay.stats().drops.watchesPerIp).toBe(1)
    // Every node of this machine shares 127.0.0.1: an honest node's watch is not taken while the rogue holds them all.
    const honest = await presenceStream(keyB, relay)
    await honest.write({ watch: someAddresses(10) })
    await eventually(() => expect(relay.stats().drops.watchesPerIp).toBe(2))
    expect(relay.presence().watches).toBe(300)
    // The rogue goes: what it held is free, and the honest node's next watches are taken.
    await rogue.node.stop()
    await eventually(() => expect(relay.presence().watches).toBe(0))
    await honest.write({ watch: someAddresses(10) })
    await eventually(() => expect(relay.presence().watches).toBe(10))
    expect(relay.stats().drops.watchesPerIp).toBe(2)
  }, 30_000)
})

describe('relay: bytes a second', () => {
  test("a peer flooding another through the relay is held to --peer-bytes-per-second, counted, reported once per interval; the honest pair's round trips stay close to what they are without it", async () => {
    const rate = 256 * 1024
    const relay = await relayWith({ peerBytesPerSecond: rate })
    const [a, b] = await Promise.all([peer(keyA, relay.multiaddrs), peer(keyB, relay.multiaddrs)])
    await meet(a, b)
    await roundTrips(a, b, 10)
    const quiet = await roundTrips(a, b, 50)
    const target = await startSink(generatePrivateKey(), relay.multiaddrs[0]!)
    stops.push(() => target.stop())
    const flooder = await startFlooder({ key: keyF, relay: relay.multiaddrs[0]!, target: target.peerId, lines: 'junk', perFrame: 64 })
    stops.push(() => flooder.stop())
    await eventually(() => expect(target.received()).toBeGreaterThan(rate))
    const [received0, t0] = [target.received(), performance.now()]
    const flooded = await roundTrips(a, b, 50)
    await new Promise((r) => setTimeout(r, Math.max(0, 3_000 - (performance.now() - t0))))
    const throughput = ((target.received() - received0) / (performance.now() - t0)) * 1000
    const [p50, p50Flooded] = [quantile(quiet, 0.5), quantile(flooded, 0.5)]
    console.log(
      `through a relay holding each peer to ${rate / 1024} KiB/s: the flood arrived at ${(throughput / 1024).toFixed(0)} KiB/s ` +
        `(${(flooder.sent().bytes / 1024).toFixed(0)} KiB written in all), held back ${relay.stats().drops.peerThrottled} times; ` +
        `honest round trips p50 ${p50.toFixed(1)} ms without it, ${p50Flooded.toFixed(1)} ms (p90 ${quantile(flooded, 0.9).toFixed(1)}) with it`,
    )
    // What the sink reads (the messages, and the yamux and Noise framing around them) is at most the rate, with room
    // for the window the relay lets through at once and the reading's timing.
    expect(throughput).toBeLessThan(1.5 * rate)
    expect(relay.stats().drops.peerThrottled).toBeGreaterThan(0)
    expect(relay.reports.some((r) => r.source === F && (r.counts.peerThrottled ?? 0) > 0)).toBe(true)
    expectOnePerInterval(relay.reports, F)
    // Measured 0.7x to 1.5x here (decision 0064 has the figures); 4x of at least 20 ms leaves room for a
    // loaded machine.
    expect(p50Flooded).toBeLessThan(4 * Math.max(p50, 20))
  }, 120_000)

  test('the peers of one address are held to --ip-bytes-per-second together', async () => {
    const rate = 128 * 1024
    const relay = await relayWith({ ipBytesPerSecond: rate })
    const target = await startSink(generatePrivateKey(), relay.multiaddrs[0]!)
    stops.push(() => target.stop())
    const flooder = await startFlooder({ key: keyF, relay: relay.multiaddrs[0]!, target: target.peerId, lines: 'junk', perFrame: 64 })
    stops.push(() => flooder.stop())
    await eventually(() => expect(target.received()).toBeGreaterThan(rate))
    const [received0, t0] = [target.received(), performance.now()]
    await new Promise((r) => setTimeout(r, 3_000))
    const throughput = ((target.received() - received0) / (performance.now() - t0)) * 1000
    console.log(`through a relay holding each address to ${rate / 1024} KiB/s: ${(throughput / 1024).toFixed(0)} KiB/s arrived`)
    expect(throughput).toBeLessThan(1.5 * rate)
    expect(relay.stats().drops.ipThrottled).toBeGreaterThan(0)
    expect(relay.reports.some((r) => r.source === '127.0.0.1' && (r.counts.ipThrottled ?? 0) > 0)).toBe(true)
  }, 60_000)
})

describe('relay limits: addresses', () => {
  test('an IPv4 address counts as itself, an IPv6 one by its /64, a mapped IPv4 one as the IPv4; a circuit has none', () => {
    expect(ipOf(multiaddr('/ip4/203.0.113.7/tcp/443/wss'))?.key).toBe('203.0.113.7')
    expect(ipOf(multiaddr('/ip6/2001:db8:1:2:3:4:5:6/tcp/443/wss'))?.key).toBe('2001:db8:1:2::/64')
    expect(ipOf(multiaddr('/ip6/2001:db8:1:2::9/tcp/1/ws'))?.key).toBe('2001:db8:1:2::/64')
    expect(ipOf(multiaddr('/ip6/2001:db8::1/tcp/1/ws'))?.key).toBe('2001:db8:0:0::/64')
    expect(ipOf(multiaddr('/ip6/::ffff:198.51.100.1/tcp/1/ws'))).toEqual({ address: '198.51.100.1', family: 'ipv4', key: '198.51.100.1' })
    expect(ipOf(multiaddr(`/p2p/${F}/p2p-circuit`))).toBeUndefined()
  })

  test('--proxy takes an IPv4 or IPv6 address or a CIDR block, nothing else', () => {
    for (const ok of ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']) expect(isProxyEntry(ok), ok).toBe(true)
    for (const bad of ['localhost', '10.0.0.0/33', '1.2.3', '10.0.0.0/x', '']) expect(isProxyEntry(bad), bad).toBe(false)
  })
})
