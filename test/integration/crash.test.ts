import '../../src/transport/libp2p/nodePolyfills.ts'
import { rm } from 'node:fs/promises'
import { createPublicClient, http } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { startDevnet, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import type { ChannelSummary } from './support/nodeProcess.ts'
import { NodeProcessExitedError, spawnNodeProcess, type NodeProcess } from './support/nodeProcesses.ts'

/**
 * The crash test: three nodes in separate OS processes (LevelDB, libp2p through a relay, one anvil), channels
 * A–B and B–C. A payment starts, one node is SIGKILLed somewhere in the middle of it and started again from
 * its data directory; the payment must still complete, both ends of every channel must agree, and no node
 * may ever have signed two different balance proofs with one nonce.
 */
const [keyA, keyB, keyC] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]]
const deposit = 1000n
let net: Devnet
let relay: Relay
let a: NodeProcess
let b: NodeProcess
let c: NodeProcess

beforeAll(async () => {
  const t0 = performance.now()
  ;[net, relay] = await Promise.all([startDevnet([keyA, keyB, keyC]), startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })])
  const config = (privateKey: `0x${string}`) => ({
    rpcUrl: net.anvil.rpcUrl,
    deployment: net.deployment,
    privateKey,
    dataDir: net.dataDir,
    relays: relay.multiaddrs,
  })
  ;[a, b, c] = await Promise.all([spawnNodeProcess('A', config(keyA)), spawnNodeProcess('B', config(keyB)), spawnNodeProcess('C', config(keyC))])
  await Promise.all([
    a.call({ cmd: 'openChannel', tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: deposit }),
    b.call({ cmd: 'openChannel', tokenNetwork: net.tokenNetwork, partner: c.address, totalDeposit: deposit }),
  ])
  const head = await createPublicClient({ transport: http(net.anvil.rpcUrl) }).getBlockNumber()
  await Promise.all([a, b, c].map((n) => n.call({ cmd: 'waitForBlock', block: head })))
  console.log(
    `setup: 3 node processes started in ${[a, b, c].map((n) => n.startTimes[0]!.toFixed(0)).join('/')} ms; total ${(performance.now() - t0).toFixed(0)} ms`,
  )
}, 60_000)

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.stop()))
  await relay?.stop()
  await net?.stop()
  if (net) await rm(net.dataDir, { recursive: true, force: true })
})

const channel = (n: NodeProcess, partner: NodeProcess) => n.call<ChannelSummary>({ cmd: 'channel', tokenNetwork: net.tokenNetwork, partner: partner.address })

/** Both ends of a channel agree on each side's balance proof, nothing is locked, and the balances add up. */
async function expectConsistent(x: NodeProcess, y: NodeProcess) {
  const [xy, yx] = await Promise.all([channel(x, y), channel(y, x)])
  expect(xy.id).toBe(yx.id)
  expect(xy.our).toEqual(yx.partner)
  expect(xy.partner).toEqual(yx.our)
  expect([xy.our.locks, xy.partner.locks]).toEqual([0, 0])
  expect(xy.ourBalance).toBe(yx.partnerBalance)
  expect(xy.ourBalance + xy.partnerBalance).toBe(xy.our.deposit + xy.partner.deposit)
  return xy
}

/** Rejections that show a nonce used twice: a message whose nonce the receiver has already seen with other content. */
const nonceConflicts = (n: NodeProcess) =>
  n.notices.filter((e) => {
    if (e.type !== 'messageRejected') return false
    const m = /nonce (\d+) is not (\d+)/.exec(String(e.reason))
    return m !== null && BigInt(m[1]!) < BigInt(m[2]!)
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `check` back to back (each poll is an IPC round trip, about a millisecond): the kill must land close to the event. */
async function waitUntil(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await check())) if (performance.now() > deadline) throw new Error(`not within ${ms} ms`)
}

/** What the target has received in total over its channel with its payer side. */
async function received(t: NodeProcess): Promise<bigint> {
  return (await channel(t, t === c ? b : a)).partner.transferred
}

/**
 * Where in the payment the kill comes: as soon as `holder` has applied the lock its partner `from` sent it (a
 * LockedTransfer: the sender had made it durable before sending, so the payment has begun for good).
 */
type KillPoint = { holder: () => NodeProcess; from: () => NodeProcess }

type Case = { payer: () => NodeProcess; target: () => NodeProcess; victim: () => NodeProcess; at: KillPoint }

let paymentId = 7000n

/** Starts a payment, SIGKILLs the victim at the kill point, starts it again, and checks the outcome. */
async function crashDuringPayment({ payer, target, victim, at }: Case) {
  const [p, t, v, holder, from] = [payer(), target(), victim(), at.holder(), at.from()]
  const id = ++paymentId
  const amount = 10n + (id % 7n)
  const receivedBefore = await received(t)
  const nonceBefore = (await channel(holder, from)).partner.nonce
  const t0 = performance.now()
  const paying = p.call({ cmd: 'pay', tokenNetwork: net.tokenNetwork, target: t.address, amount, paymentId: id }).catch((e: Error) => e)
  await waitUntil(async () => (await channel(holder, from)).partner.nonce > nonceBefore)
  const heldAt = performance.now() - t0
  const killAt = performance.now()
  await v.kill()
  await v.restart()
  const restartedAt = performance.now() - t0
  await eventually(async () => expect(await received(t)).toBe(receivedBefore + amount), 20_000).catch(async (error) => {
    for (const n of [a, b, c])
      console.error(
        `---- ${n.name}`,
        await n.call({ cmd: 'debug' }),
        n.notices.filter((e) => e.at > t0),
      )
    throw error
  })
  const receivedAt = performance.now() - t0

  const outcome = await Promise.race([paying, sleep(15_000).then(() => new Error('no outcome within 15 s'))])
  if (v === p && outcome instanceof NodeProcessExitedError) {
    // The initiator died with the payment in flight: that pay() call is gone; its store says how it ended.
  } else {
    expect(outcome).toMatchObject({ paymentId: id, amount })
  }
  await eventually(async () => {
    const history = await p.call<{ event: string; identifier: bigint }[]>({ cmd: 'history' })
    expect(history.filter((r) => r.identifier === id).map((r) => r.event)).toEqual(['EventPaymentSentSuccess'])
  })
  // Every lock is unlocked on both sides of every channel, and the two views of each channel agree.
  await eventually(async () => {
    await expectConsistent(a, b)
    await expectConsistent(b, c)
  }, 15_000)
  for (const n of [a, b, c]) expect(nonceConflicts(n)).toEqual([])

  if (process.env.SLUICE_TRACE) for (const n of [a, b, c]) console.log(`---- ${n.name} (killed at ${Date.now() - (performance.now() - killAt)})\n${n.output()}`)
  const doneBeforeKill = t.notices.some((e) => e.type === 'paymentReceivedSuccess' && e.paymentId === id && e.at < killAt)
  console.log(
    `${p.name}→${t.name} ${amount}: ${holder.name} held ${from.name}'s lock at ${heldAt.toFixed(0)} ms, ${v.name} killed then ` +
      `(${doneBeforeKill ? 'after' : 'before'} the target had the payment), back up after ${v.startTimes.at(-1)!.toFixed(0)} ms, ` +
      `payment received ${(receivedAt - restartedAt).toFixed(0)} ms after the restart`,
  )
}

const holds = (holder: () => NodeProcess, from: () => NodeProcess): KillPoint => ({ holder, from })

describe('crash in the middle of a payment (nodes in separate processes, SIGKILL, restart from LevelDB)', () => {
  test.each([
    [
      'initiator A',
      "B holds A's lock",
      () => a,
      holds(
        () => b,
        () => a,
      ),
    ],
    [
      'initiator A',
      "C holds B's lock",
      () => a,
      holds(
        () => c,
        () => b,
      ),
    ],
    [
      'mediator B',
      "B holds A's lock",
      () => b,
      holds(
        () => b,
        () => a,
      ),
    ],
    [
      'mediator B',
      "C holds B's lock",
      () => b,
      holds(
        () => c,
        () => b,
      ),
    ],
    [
      'target C',
      "B holds A's lock",
      () => c,
      holds(
        () => b,
        () => a,
      ),
    ],
    [
      'target C',
      "C holds B's lock",
      () => c,
      holds(
        () => c,
        () => b,
      ),
    ],
  ] as const)('mediated A→B→C: kill the %s when %s; the payment completes and every channel agrees', async (_who, _when, victim, at) => {
    await crashDuringPayment({ payer: () => a, target: () => c, victim, at })
  })

  test.each([
    ['payer A', () => a],
    ['payee B', () => b],
  ] as const)("direct A→B: kill the %s when B holds A's lock; the payment completes and both ends agree", async (_who, victim) => {
    await crashDuringPayment({
      payer: () => a,
      target: () => b,
      victim,
      at: holds(
        () => b,
        () => a,
      ),
    })
  })
})
