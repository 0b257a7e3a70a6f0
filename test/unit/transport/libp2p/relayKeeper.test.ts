// The relay keeper with real relays (startRelay) and a libp2p node made from the transport's configuration, without
// the transport: no presence, no streams.
import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { libp2pOptions, type Services } from '../../../../src/transport/libp2p/libp2pOptions.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { startRelay, type Relay } from '../../../../src/transport/libp2p/relay.ts'
import { parseRelay } from '../../../../src/transport/libp2p/relayAddress.ts'
import { RelayKeeper, relayTag, type RelayKeeperLogEvent } from '../../../../src/transport/libp2p/relayKeeper.ts'

const relayKey = anvilKeys[9]!
const eventually = <T>(check: () => T | Promise<T>, timeout = 10_000) => vi.waitFor(check, { timeout, interval: 20 })

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

async function relayOn(port = 0): Promise<Relay> {
  const relay = await startRelay({ listen: [`/ip4/127.0.0.1/tcp/${port}/ws`], privateKey: relayKey })
  cleanups.push(() => relay.stop())
  return relay
}

const portOf = (address: string) =>
  Number(
    multiaddr(address)
      .getComponents()
      .find((c) => c.name === 'tcp')!.value,
  )

/** A node with the transport's configuration and a keeper of `relays`, started. */
async function kept(relays: string[]) {
  const parsed = relays.map(parseRelay)
  const node: Libp2p<Services> = await createLibp2p(libp2pOptions(libp2pPrivateKey(anvilKeys[4]!), parsed))
  const logs: RelayKeeperLogEvent[] = []
  const back: string[] = []
  const keeper = new RelayKeeper({ relays: parsed, dialTimeoutMs: 2_000, log: (e) => logs.push(e), onRelayBack: (r) => back.push(r.addr.toString()) })
  await node.start()
  await keeper.start(node)
  cleanups.push(async () => {
    await keeper.stop()
    await node.stop()
  })
  return { node, keeper, logs, back }
}

const circuitOf = (relay: Relay) => `${relay.multiaddrs[0]}/p2p-circuit/p2p/${peerIdOfKey(anvilKeys[4]!)}`

describe('the relay keeper', () => {
  test('connects to its relay and holds a reservation there: the node is reachable at its circuit address', async () => {
    const relay = await relayOn()
    const { keeper, logs } = await kept(relay.multiaddrs)
    expect(await keeper.waitForReservation(5_000)).toBe(true)
    expect(keeper.circuitAddresses()).toEqual([circuitOf(relay)])
    expect(relay.reservations()).toBe(1)
    expect(logs).toContainEqual({ type: 'relayConnected', relay: relay.multiaddrs[0] })
  })

  test('a relay that is down at start is dialled again and again until it comes', async () => {
    const probe = await relayOn()
    const port = portOf(probe.multiaddrs[0]!)
    const address = probe.multiaddrs[0]!
    await probe.stop()
    const { keeper, logs } = await kept([address])
    expect(await keeper.waitForReservation(300)).toBe(false)
    await eventually(() => expect(logs.filter((e) => e.type === 'relayLost').length).toBeGreaterThanOrEqual(2))
    const relay = await relayOn(port)
    const t0 = performance.now()
    expect(await keeper.waitForReservation(15_000)).toBe(true)
    console.log(`relay down at start: reserved ${(performance.now() - t0).toFixed(0)} ms after it came up`)
    expect(keeper.circuitAddresses()).toEqual([circuitOf(relay)])
  }, 30_000)

  test('a relay that restarts is redialled by libp2p (it is tagged keep-alive) and reserved on again, and said to be back; once stopped, the keeper dials no more', async () => {
    const first = await relayOn()
    const port = portOf(first.multiaddrs[0]!)
    const { node, keeper, logs, back } = await kept(first.multiaddrs)
    expect(await keeper.waitForReservation(5_000)).toBe(true)
    expect((await node.peerStore.get(parseRelay(first.multiaddrs[0]!).peerId)).tags.has(relayTag)).toBe(true)
    expect(back).toEqual([])
    await first.stop()
    await eventually(() => expect(logs).toContainEqual(expect.objectContaining({ type: 'relayLost' })))
    const second = await relayOn(port)
    const t0 = performance.now()
    await eventually(() => expect(second.reservations()).toBe(1), 15_000)
    console.log(`relay restart: reserved again ${(performance.now() - t0).toFixed(0)} ms after it came back`)
    await eventually(() => expect(keeper.circuitAddresses()).toEqual([circuitOf(second)]))
    expect(back).toEqual([first.multiaddrs[0]])
    expect(keeper.connected().map((r) => r.addr.toString())).toEqual(first.multiaddrs)
    await keeper.stop()
    await second.stop()
    const third = await relayOn(port)
    await new Promise((r) => setTimeout(r, 1_000))
    expect(third.reservations()).toBe(0)
    expect(node.getConnections().length).toBe(0)
  }, 40_000)
})

describe('the relay keeper, with two relays', () => {
  test('holds a reservation on each; one that dies is left, the other kept, and the one back is reserved on again', async () => {
    const [one, two] = [await relayOn(), await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })]
    cleanups.push(() => two.stop())
    const port = portOf(one.multiaddrs[0]!)
    const { keeper } = await kept([...one.multiaddrs, ...two.multiaddrs])
    await eventually(() => expect(keeper.circuitAddresses().sort()).toEqual([circuitOf(one), circuitOf(two)].sort()))
    expect([one.reservations(), two.reservations()]).toEqual([1, 1])
    await one.stop()
    await eventually(() => expect(keeper.circuitAddresses()).toEqual([circuitOf(two)]))
    const back = await relayOn(port)
    await eventually(() => expect(keeper.circuitAddresses().sort()).toEqual([circuitOf(back), circuitOf(two)].sort()), 15_000)
    expect(two.reservations()).toBe(1)
  }, 30_000)
})
