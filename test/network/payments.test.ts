import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { channelJson } from '../../src/api/channelJson.ts'
import { channelWith } from '../../src/protocol/state/access.ts'
import { stopSluice } from '../cli/sluiceProcess.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { networkUnavailable } from '../support/netns/commands.ts'
import { createNetwork, type Network } from '../support/netns/network.ts'
import { startRelayIn, startServeIn, stateOf, type HostedNode, type HostedRelay } from '../support/netns/sluice.ts'

/**
 * Payments between `sluice serve` processes on hosts of their own (test/support/netns/), each link 20 ms ± 5 ms and
 * 0.5 % loss each way: alice, bob and carol meet through two `sluice relay`s on two other hosts, over the emulated
 * links only; the chain (an anvil of this file's own, mining a block a second) is on the root namespace's underlay
 * address, and the test drives each node's REST API over the underlay. What a user sees: the answers to POST
 * /payments, the channels' balances and the payment histories on both ends, and (through GET /_state/export) that
 * both ends of a channel hold the same nonces and balance proofs.
 */

const unavailable = networkUnavailable()
if (unavailable && process.getuid?.() === 0 && process.platform === 'linux') throw new Error(`network tests: ${unavailable}`)

const [keyAlice, keyBob, keyCarol] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]] as Hex[]
const DEPOSIT = 1000n
/**
 * Short timeouts, so that a lock sent into a cut expires within the test: 10 blocks' reveal, 20 to a lock's expiry.
 * One confirmation, not none: a payer sends LockExpired `2 × confirmations` blocks after the expiry and its payee
 * takes it after `confirmations`, so with none a payee whose sync is a block behind refuses it.
 */
const CONFIRMATIONS = 1n
const REVEAL_TIMEOUT = 10
/** A lock expires twice the reveal timeout after it is sent (src/protocol/transfer/initiator.ts); blocks come a second apart. */
const LOCK_BLOCKS = 2 * REVEAL_TIMEOUT
const NODE_FLAGS = [
  '--confirmations',
  String(CONFIRMATIONS),
  '--polling-interval',
  '250',
  '--default-reveal-timeout',
  String(REVEAL_TIMEOUT),
  '--default-settle-timeout',
  '40',
]

type Outcome = { identifier: number; status: number; error?: string; ms: number; phase: string; sentAt: number }

describe.skipIf(unavailable !== undefined)('payments across hosts', () => {
  let network: Network
  let chain: Devnet
  let dir: string
  let deploymentFile: string
  const relays: HostedRelay[] = []
  let alice: HostedNode
  let bob: HostedNode
  let carol: HostedNode
  const nodes = () => [alice, bob, carol].filter(Boolean)

  beforeAll(async () => {
    const t0 = performance.now()
    dir = mkdtempSync(join(tmpdir(), 'sluice-network-'))
    network = await createNetwork({ hosts: ['relay1', 'relay2', 'alice', 'bob', 'carol'] })
    const { hosts } = network
    // What starts is kept at once, so that afterAll stops it even when something else fails to start (and the
    // network's teardown kills what runs in its hosts, and its anvil, whatever happens to this process).
    const chainStarted = startDevnet([keyAlice!, keyBob!, keyCarol!], 10n ** 21n, { host: network.rootAddress }).then((c) => {
      chain = c
      network.own(c.anvil.process.pid!)
    })
    await Promise.all([chainStarted, ...['relay1', 'relay2'].map(async (name) => relays.push(await startRelayIn(hosts[name]!, join(dir, name))))])
    // A chain that moves on its own, as a real one: locks expire by the clock even when nobody transacts.
    await rpc(chain.anvil.rpcUrl, 'evm_setIntervalMining', [1])
    deploymentFile = join(dir, 'deployment.json')
    await writeDeployment(deploymentFile, chain.deployment)
    const serve = (name: 'alice' | 'bob' | 'carol', key: Hex) =>
      startServeIn(hosts[name]!, {
        rpc: chain.anvil.rpcUrl,
        deploymentFile,
        key,
        relays: relays.map((r) => r.multiaddr),
        dir: join(dir, name),
        flags: NODE_FLAGS,
      })
    ;[alice, bob, carol] = await Promise.all([serve('alice', keyAlice!), serve('bob', keyBob!), serve('carol', keyCarol!)])
    await Promise.all(nodes().map((n) => eventually(async () => expect((await n.call('GET', '/status')).body).toEqual({ status: 'ready' }), 90_000)))
    const tReady = performance.now()
    // alice -> bob -> carol, each channel funded by its opener.
    const opened = await Promise.all([
      alice.call('PUT', '/channels', { partner_address: bob.address, token_address: chain.token, total_deposit: String(DEPOSIT) }),
      bob.call('PUT', '/channels', { partner_address: carol.address, token_address: chain.token, total_deposit: String(DEPOSIT) }),
    ])
    for (const o of opened) expect(o.status, JSON.stringify(o.body)).toBe(201)
    await Promise.all([
      eventually(async () => expect((await bob.call('GET', `/channels/${chain.token}/${alice.address}`)).status).toBe(200), 30_000),
      eventually(async () => expect((await carol.call('GET', `/channels/${chain.token}/${bob.address}`)).status).toBe(200), 30_000),
    ])
    console.log(
      `network slot ${network.slot} (${network.emulation}): hosts, chain, relays and nodes ready in ${Math.round(tReady - t0)} ms, ` +
        `channels open ${Math.round(performance.now() - tReady)} ms later`,
    )
  }, 240_000)

  afterAll(async () => {
    await Promise.all([...nodes(), ...relays].map((p) => stopSluice(p.sluice, 15_000)))
    // SLUICE_NETWORK_LOGS=DIR keeps each process's log (DIR/<host>.log) for a look after the run.
    const logs = process.env.SLUICE_NETWORK_LOGS
    if (logs) {
      mkdirSync(logs, { recursive: true })
      for (const p of [...nodes(), ...relays]) writeFileSync(join(logs, `${p.host.name}.log`), `${p.sluice.stdout()}\n--- stderr ---\n${p.sluice.stderr()}`)
    }
    await chain?.stop()
    await network?.destroy()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  /** POST /payments from `payer` to `target`, timed, its answer kept whatever it is. */
  async function pay(payer: HostedNode, target: HostedNode, identifier: number, amount: bigint, phase: string): Promise<Outcome> {
    const t = performance.now()
    const sentAt = t
    const r = await payer.call('POST', `/payments/${chain.token}/${target.address}`, { amount: String(amount), identifier: String(identifier) })
    const ms = Math.round(performance.now() - t)
    if (r.status === 200) {
      expect(r.body).toMatchObject({ initiator_address: payer.address, target_address: target.address, amount: String(amount), identifier: String(identifier) })
      return { identifier, status: 200, ms, phase, sentAt }
    }
    return { identifier, status: r.status, error: String(r.body?.errors ?? JSON.stringify(r.body)), ms, phase, sentAt }
  }

  /** The payments `node` received, by identifier (each entry of its history counted). */
  async function receivedBy(node: HostedNode, from: HostedNode): Promise<Map<number, number>> {
    const history = await node.call('GET', `/payments/${chain.token}/${from.address}`)
    expect(history.status).toBe(200)
    const counts = new Map<number, number>()
    for (const e of history.body as { event: string; identifier: string; initiator?: Address }[])
      if (e.event === 'EventPaymentReceivedSuccess' && e.initiator === from.address)
        counts.set(Number(e.identifier), (counts.get(Number(e.identifier)) ?? 0) + 1)
    return counts
  }

  const balance = async (node: HostedNode, partner: HostedNode) => BigInt((await node.call('GET', `/channels/${chain.token}/${partner.address}`)).body.balance)

  /**
   * Both ends of the channel of `a` and `b` agree: no lock pending on either, balances that add up to the deposits,
   * and the same nonces and balance proofs on both sides (their exported states).
   */
  async function expectAgreement(a: HostedNode, b: HostedNode, deposits: bigint, ms: number) {
    await eventually(async () => {
      for (const n of [a, b]) expect((await n.call('GET', '/pending_transfers')).body, `${n.host.name}'s pending transfers`).toEqual([])
      expect((await balance(a, b)) + (await balance(b, a))).toBe(deposits)
    }, ms)
    const [stateA, stateB] = await Promise.all([stateOf(a, chain.deployment, CONFIRMATIONS), stateOf(b, chain.deployment, CONFIRMATIONS)])
    const ab = channelWith(stateA, chain.tokenNetwork, b.address)!
    const ba = channelWith(stateB, chain.tokenNetwork, a.address)!
    // The replayed states are the nodes' own: each gives the balance the node's API answers.
    expect(channelJson(ab).balance).toBe(await balance(a, b))
    expect(channelJson(ba).balance).toBe(await balance(b, a))
    const proof = (p: typeof ab.our.balanceProof) =>
      p && { nonce: p.nonce, transferredAmount: p.transferredAmount, lockedAmount: p.lockedAmount, locksroot: p.locksroot }
    expect({ nonce: ab.our.nonce, proof: proof(ab.our.balanceProof), locks: ab.our.locks.length }, `${a.host.name}'s end`).toEqual({
      nonce: ba.partnerEnd.nonce,
      proof: proof(ba.partnerEnd.balanceProof),
      locks: ba.partnerEnd.locks.length,
    })
    expect({ nonce: ba.our.nonce, proof: proof(ba.our.balanceProof), locks: ba.our.locks.length }, `${b.host.name}'s end`).toEqual({
      nonce: ab.partnerEnd.nonce,
      proof: proof(ab.partnerEnd.balanceProof),
      locks: ab.partnerEnd.locks.length,
    })
    return { a: ab, b: ba }
  }

  /** Every payment that answered 200 is in the payee's history exactly once; what the others did, counted. */
  async function expectExactlyOnce(payee: HostedNode, payer: HostedNode, outcomes: Outcome[]) {
    const received = await receivedBy(payee, payer)
    for (const o of outcomes.filter((o) => o.status === 200))
      expect(received.get(o.identifier), `payment ${o.identifier} in ${payee.host.name}'s history`).toBe(1)
    return outcomes.filter((o) => o.status !== 200 && received.has(o.identifier)).map((o) => o.identifier)
  }

  /** The messages `node` refused since `from` (an offset in its stderr), counted by type and reason (numbers as N). */
  const rejections = (node: HostedNode, from: number) => {
    const by = new Map<string, number>()
    for (const m of node.sluice
      .stderr()
      .slice(from)
      .matchAll(/messageType=(\w+) reason="([^"]*)"/g)) {
      const key = `${m[1]}: ${m[2]!.replace(/\d+/g, 'N')}`
      by.set(key, (by.get(key) ?? 0) + 1)
    }
    return [...by].map(([k, n]) => `${n}× ${k}`).join('; ') || 'nothing'
  }

  const summary = (outcomes: Outcome[]) => {
    const by = new Map<string, number>()
    for (const o of outcomes)
      by.set(`${o.phase} ${o.status}${o.error ? ` (${o.error})` : ''}`, (by.get(`${o.phase} ${o.status}${o.error ? ` (${o.error})` : ''}`) ?? 0) + 1)
    return [...by].map(([k, n]) => `${n}× ${k}`).join('; ')
  }

  test('alice pays bob directly and carol through bob, over the emulated links; both ends of each channel agree', async () => {
    const direct: Outcome[] = []
    const mediated: Outcome[] = []
    for (let i = 1; i <= 5; i++) direct.push(await pay(alice, bob, 1000 + i, 10n, 'direct'))
    for (let i = 1; i <= 5; i++) mediated.push(await pay(alice, carol, 2000 + i, 7n, 'mediated'))
    console.log(`direct payments answered in ${direct.map((o) => o.ms).join(', ')} ms; mediated in ${mediated.map((o) => o.ms).join(', ')} ms`)
    expect([...direct, ...mediated].map((o) => o.status)).toEqual(Array(10).fill(200))

    await eventually(async () => {
      expect([...(await receivedBy(bob, alice))].filter(([id]) => id > 1000 && id < 2000)).toEqual(direct.map((o) => [o.identifier, 1]))
      expect([...(await receivedBy(carol, alice))].filter(([id]) => id > 2000 && id < 3000)).toEqual(mediated.map((o) => [o.identifier, 1]))
    }, 20_000)
    const sent = (await alice.call('GET', `/payments/${chain.token}/${carol.address}`)).body as { event: string; identifier: string }[]
    expect(sent.filter((e) => e.event === 'EventPaymentSentSuccess').map((e) => Number(e.identifier))).toEqual(mediated.map((o) => o.identifier))

    await expectAgreement(alice, bob, DEPOSIT, 20_000)
    await expectAgreement(bob, carol, DEPOSIT, 20_000)
    expect(await balance(alice, bob)).toBe(DEPOSIT - 5n * 10n - 5n * 7n)
    expect(await balance(bob, alice)).toBe(5n * 10n + 5n * 7n)
    expect(await balance(bob, carol)).toBe(DEPOSIT - 5n * 7n)
    expect(await balance(carol, bob)).toBe(5n * 7n)
  })

  test('bob cut off for 20 s in the middle of a stream of payments: afterwards both ends agree, and every payment that answered 200 is in his history once; none that could still complete is left to expire', async () => {
    const aliceBefore = await balance(alice, bob)
    const rejectedBefore = bob.sluice.stderr().length
    const outcomes: Promise<Outcome>[] = []
    const send = (i: number, phase: string) => outcomes.push(pay(alice, bob, 3000 + i, 1n, phase))
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))
    for (let i = 1; i <= 5; i++) {
      send(i, 'before')
      await wait(500)
    }
    await network.cut('bob')
    const cutAt = performance.now()
    for (let i = 6; i <= 25; i++) {
      send(i, 'during')
      await wait(1000)
    }
    await network.heal('bob')
    const healedAt = performance.now()
    for (let i = 26; i <= 30; i++) {
      send(i, 'after')
      await wait(500)
    }
    const results = await Promise.all(outcomes)
    const answeredAt = performance.now()
    console.log(
      `cut of ${Math.round(healedAt - cutAt)} ms; the 30 answers came within ${Math.round(answeredAt - cutAt)} ms of the cut: ${summary(results)}; ` +
        `times of the failed: ${results
          .filter((o) => o.status !== 200)
          .map((o) => `${o.identifier}: ${o.ms} ms`)
          .join(', ')}`,
    )

    // A payment that could still complete is not left to expire: one whose lock had, when the link came back, at
    // least 5 blocks more than the reveal timeout left (a block a second, the lock 20 blocks from its sending) is
    // claimed. (One with fewer has nothing to do with delivery: the payee rightly does not claim a lock so close to
    // its expiry, and a payment sent early in the cut cannot complete.)
    const leftAtHeal = (o: Outcome) => LOCK_BLOCKS - (healedAt - o.sentAt) / 1000
    const couldComplete = results.filter((o) => o.phase === 'during' && leftAtHeal(o) >= REVEAL_TIMEOUT + 5)
    expect(couldComplete.length).toBeGreaterThan(0)
    expect(couldComplete.filter((o) => o.status !== 200).map((o) => `${o.identifier}: ${o.status} ${o.error}`)).toEqual([])

    // Bound: a message the cut held back is resent within the delivery's longest backoff (60 s), and a lock sent
    // into the cut expires 20 blocks after it was sent.
    const { a } = await expectAgreement(alice, bob, DEPOSIT, 90_000)
    const receivedNot200 = await expectExactlyOnce(bob, alice, results)
    const paid = results.filter((o) => o.status === 200).length
    // What alice sees she paid is what bob holds of hers, and every payment that did not answer 200 left nothing.
    expect(aliceBefore - (await balance(alice, bob))).toBe(BigInt(paid + receivedNot200.length))
    console.log(
      `after the cut: ${paid} of 30 answered 200, ${30 - paid} did not (${receivedNot200.length} of those reached bob all the same: ${receivedNot200.join(', ') || 'none'}); ` +
        `both ends at nonce ${a.our.nonce} (alice's) and ${a.partnerEnd.nonce} (bob's); what bob refused of alice's meanwhile: ${rejections(bob, rejectedBefore)}`,
    )
  }, 240_000)

  test('the relay carrying the traffic is killed under load: the payments go on through the other relay', async () => {
    // Which relay carries alice's traffic: the one her frames go to while she pays.
    const bytesTo = async () => {
      const stats = await network.stats()
      return new Map(relays.map((r) => [r, stats.filter((s) => s.fromHost === 'alice' && s.toHost === r.host.name).reduce((n, s) => n + s.bytes, 0)]))
    }
    const rejectedBefore = [bob, carol].map((n) => n.sluice.stderr().length)
    const t0 = await bytesTo()
    for (let i = 1; i <= 3; i++) expect((await pay(alice, bob, 4000 + i, 1n, 'warm-up')).status).toBe(200)
    const t1 = await bytesTo()
    const warmUp = (r: HostedRelay) => t1.get(r)! - t0.get(r)!
    const busy = warmUp(relays[0]!) > warmUp(relays[1]!) ? relays[0]! : relays[1]!
    const other = relays.find((r) => r !== busy)!

    // 30 payments, 10 a second, every other one to carol through bob; the busy relay is SIGKILLed after the 10th.
    const outcomes: Promise<Outcome>[] = []
    let atKill = t1
    for (let i = 4; i <= 33; i++) {
      const target = i % 2 === 0 ? bob : carol
      outcomes.push(pay(alice, target, 4000 + i, 1n, target === bob ? 'direct' : 'mediated'))
      if (i === 13) {
        busy.sluice.child.kill('SIGKILL')
        await busy.sluice.exited
        atKill = await bytesTo()
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    const results = await Promise.all(outcomes)
    const t2 = await bytesTo()
    const afterKill = t2.get(other)! - atKill.get(other)!
    console.log(
      `relay ${busy.host.name} killed after 10 of 30 payments: ${summary(results)}; answered in ${results.map((o) => o.ms).join(', ')} ms; ` +
        `alice's bytes to ${busy.host.name} / ${other.host.name}: ${warmUp(busy)} / ${warmUp(other)} over the 3 payments before, ` +
        `${afterKill} to ${other.host.name} from the kill on; refused meanwhile by bob: ${rejections(bob, rejectedBefore[0]!)}, by carol: ${rejections(carol, rejectedBefore[1]!)}`,
    )
    expect(results.filter((o) => o.status !== 200)).toEqual([])
    // The 20 payments after the kill went through the other relay: more than thrice what the 3 before brought the busy one.
    expect(afterKill).toBeGreaterThan(3 * warmUp(busy))
    await expectAgreement(alice, bob, DEPOSIT, 30_000)
    await expectAgreement(bob, carol, DEPOSIT, 30_000)
    await expectExactlyOnce(
      bob,
      alice,
      results.filter((o) => o.phase === 'direct'),
    )
    await expectExactlyOnce(
      carol,
      alice,
      results.filter((o) => o.phase === 'mediated'),
    )
  }, 120_000)
})

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await r.json()) as { result?: unknown; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}
