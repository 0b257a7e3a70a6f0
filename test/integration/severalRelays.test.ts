import '../../src/transport/libp2p/nodePolyfills.ts'
import { multiaddr } from '@multiformats/multiaddr'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

/**
 * Two nodes, each given the same two relays (real ones, on loopback), paying over libp2p while a relay dies and comes
 * back, and while both are gone for 20 s (a cut between the nodes: neither can reach the other). The chain makes a
 * block each second, as a real one does, so a lock held up too long expires. The nodes keep the node's own backoff
 * (300 ms doubling to a minute): what a cut makes it grow to is what the recovery must not wait for.
 */

const [keyA, keyB] = [anvilKeys[7], anvilKeys[8]] as [Hex, Hex]
const relayKeys = [anvilKeys[5], anvilKeys[6]] as [Hex, Hex]
/** Locks of 2 × 20 blocks (20 s): long enough for a payment made during a 20 s cut to complete when it ends. */
const REVEAL_TIMEOUT = 20
let net: Devnet
const relays: Relay[] = []
let ports: string[] = []
const nodes: SluiceNode[] = []
const transports = new Map<Hex, Libp2pTransport>()

const startRelayOn = (i: number, port: string) => startRelay({ listen: [`/ip4/127.0.0.1/tcp/${port}/ws`], privateKey: relayKeys[i] })

async function node(key: Hex): Promise<SluiceNode> {
  const addresses = relays.flatMap((r) => r.multiaddrs)
  const made = await startNode(net, key, {
    defaultRevealTimeout: REVEAL_TIMEOUT,
    defaultSettleTimeout: 100,
    pollingInterval: 200,
    backoff: { initialMs: 300, maxMs: 60_000 },
    transport: () => {
      const transport = createLibp2pTransport({ privateKey: key, relays: addresses })
      transports.set(key, transport)
      return transport
    },
  })
  nodes.push(made)
  return made
}

let a: SluiceNode
let b: SluiceNode
/** What B holds of A's payments: the amount A's latest proof to B transferred. */
const received = () => b.client.channel(net.tokenNetwork, a.address)?.partnerEnd.balanceProof?.transferredAmount ?? 0n
let identifier = 1_000n
let paid = 0n
/** A payment of `amount` under a new identifier: its outcome, and the block it was made at. */
async function pay(amount: bigint) {
  const id = identifier++
  const block = a.state.blockNumber
  try {
    await sendPayment(a.client, { token: net.token, target: b.address, amount, identifier: id })
    paid += amount
    return { id, block, ok: true as const, at: performance.now() }
  } catch (error) {
    return { id, block, ok: false as const, at: performance.now(), error: error as Error & { code?: string } }
  }
}

beforeAll(async () => {
  net = await startDevnet([keyA], 10n ** 21n, { blockTime: 1 })
  for (const key of relayKeys) relays.push(await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'], privateKey: key }))
  ports = relays.map(
    (r) =>
      multiaddr(r.multiaddrs[0]!)
        .getComponents()
        .find((c) => c.name === 'tcp')!.value!,
  )
  a = await node(keyA)
  b = await node(keyB)
  await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 10n ** 18n })
  await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))
  await eventually(() => expect(relays.map((r) => r.reservations())).toEqual([2, 2]))
}, 120_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await Promise.all(relays.map((r) => r.stop()))
  await net?.stop()
})

describe('payments over two relays', () => {
  test('a relay stopped mid-stream of payments: the next goes through the other within seconds, none is lost or paid twice; the relay back is used again', async () => {
    const results: Awaited<ReturnType<typeof pay>>[] = []
    let stoppedAt = 0
    let carrying = -1
    for (let i = 0; i < 30; i++) {
      if (i === 10) {
        // The relay the circuit between A and B goes through.
        carrying = relays.findIndex((r) => r.circuits() > 0)
        expect(carrying).toBeGreaterThanOrEqual(0)
        stoppedAt = performance.now()
        // Not awaited: the stop lands while the next payment is on its way.
        void relays[carrying]!.stop()
      }
      results.push(await pay(1n))
    }
    const failed = results.filter((r) => !r.ok)
    // A payment in flight may fail, clearly; none hangs, and a failed one paid nothing.
    for (const f of failed) expect(f.error.code, f.error.message).toBeDefined()
    expect(failed.length).toBeLessThanOrEqual(1)
    const next = results.slice(10).find((r) => r.ok)!
    console.log(
      `relay stopped mid-stream: the next payment completed ${(next.at - stoppedAt).toFixed(0)} ms after the stop; ${results.filter((r) => r.ok).length} of 30 completed`,
    )
    expect(next.at - stoppedAt).toBeLessThan(5_000)
    // What B holds is what A paid, to the unit: nothing lost, nothing twice.
    await eventually(() => expect(received()).toBe(paid))
    // A failed payment sent again under its identifier is not paid twice (payments are idempotent by identifier).
    for (const f of failed) await expect(sendPayment(a.client, { token: net.token, target: b.address, amount: 1n, identifier: f.id })).rejects.toThrow()

    // The relay comes back on its port with its key: both nodes reserve on it again, and a payment crosses it alone.
    relays[carrying] = await startRelayOn(carrying, ports[carrying]!)
    const back = performance.now()
    await eventually(() => expect(relays[carrying]!.reservations()).toBe(2))
    console.log(`relay back: both nodes reserved on it again ${(performance.now() - back).toFixed(0)} ms after it came back`)
    const other = 1 - carrying
    await relays[other]!.stop()
    expect((await pay(2n)).ok).toBe(true)
    relays[other] = await startRelayOn(other, ports[other]!)
    await eventually(() => expect(relays.map((r) => r.reservations())).toEqual([2, 2]))
    await eventually(() => expect(received()).toBe(paid))
  }, 120_000)

  test('both relays gone for 20 s: the payments made meanwhile complete once they are back, but those whose lock ran out; those made after, all', async () => {
    await eventually(() => expect(relays.map((r) => r.reservations())).toEqual([2, 2]))
    const before = received()
    const refusals: string[] = []
    const off = b.client.subscribe((notice) => {
      if (notice.type === 'messageRejected') refusals.push(notice.reason)
    })
    await Promise.all(relays.map((r) => r.stop()))
    const cutAt = performance.now()
    // A payment each second during the cut, none awaited before the next.
    const outcomes: Promise<Awaited<ReturnType<typeof pay>>>[] = []
    for (let i = 0; i < 20; i++) {
      outcomes.push(pay(1n))
      await new Promise((r) => setTimeout(r, 1_000))
    }
    for (let i = 0; i < relays.length; i++) relays[i] = await startRelayOn(i, ports[i]!)
    const backAt = performance.now()
    // Payments go on, one a second, from the moment the relays are back: each must complete, none wait on the cut's.
    const after: Promise<Awaited<ReturnType<typeof pay>>>[] = []
    let reservedIn = 0
    // The block at which both nodes could reach each other again: on a busy machine, seconds after the relays came back.
    let backBlock = 0n
    for (let i = 0; i < 5; i++) {
      after.push(pay(1n))
      if (i === 0) {
        await eventually(() => expect(relays.map((r) => r.reservations())).toEqual([2, 2]))
        reservedIn = performance.now() - backAt
        backBlock = a.state.blockNumber
      } else await new Promise((r) => setTimeout(r, 1_000))
    }
    const results = await Promise.all(outcomes)
    const completed = results.filter((r) => r.ok)
    const lastDone = Math.max(...completed.map((r) => r.at))
    const afterResults = await Promise.all(after)
    off()
    console.log(
      `cut of ${((backAt - cutAt) / 1000).toFixed(1)} s: both nodes back on both relays ${reservedIn.toFixed(0)} ms after they returned; ${afterResults.filter((r) => r.ok).length} of 5 payments made after it completed; messages the payee refused: ${refusals.length} (${refusals.slice(0, 3).join('; ')}); ${completed.length} of 20 payments made during the cut completed, the last ${(lastDone - backAt).toFixed(0)} ms after the relays returned; failed: ${results
        .filter((r) => !r.ok)
        .map((r) => `made at block ${r.block} (${r.error.message})`)
        .join('; ')}`,
    )
    // A payment could still complete if, when both nodes were back on the relays, its lock (2 × reveal timeout, from
    // the block it was made at) had more than the reveal timeout left, with a few blocks for the messages to go: each
    // such one did.
    const lockBlocks = 2n * BigInt(REVEAL_TIMEOUT)
    for (const r of results)
      if (r.block + lockBlocks - backBlock > BigInt(REVEAL_TIMEOUT) + 3n) expect(r.ok, `payment ${r.id} made at block ${r.block}`).toBe(true)
    expect(afterResults.map((r) => r.ok)).toEqual([true, true, true, true, true])
    await eventually(() => expect(received() - before).toBe(BigInt(completed.length + afterResults.length)))
  }, 180_000)
})
