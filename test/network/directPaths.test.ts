import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import { stopSluice } from '../cli/sluiceProcess.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { networkUnavailable } from '../support/netns/commands.ts'
import { createNetwork, type Network } from '../support/netns/network.ts'
import { startRelayIn, startServeIn, type HostedNode, type HostedRelay } from '../support/netns/sluice.ts'

/**
 * Direct paths across hosts (test/support/netns/, 20 ms ± 5 ms and 0.5 % loss each way): alice and bob listen on
 * their overlay addresses (`--p2p-listen`, private ones allowed: `--p2p-allow-private`) and pay each other over a
 * direct connection, the relay on a third host; then the link between alice and bob is cut while both still reach
 * the relay, and the payments go on through it. Which path carried what is read from the switch's frame counts
 * between hosts.
 */

const unavailable = networkUnavailable()
if (unavailable && process.getuid?.() === 0 && process.platform === 'linux') throw new Error(`network tests: ${unavailable}`)

const [keyAlice, keyBob] = [anvilKeys[1], anvilKeys[2]] as Hex[]
const DEPOSIT = 1000n
const REVEAL_TIMEOUT = 10
const NODE_FLAGS = ['--confirmations', '1', '--polling-interval', '250', '--default-reveal-timeout', String(REVEAL_TIMEOUT), '--default-settle-timeout', '40']

describe.skipIf(unavailable !== undefined)('direct paths across hosts', () => {
  let network: Network
  let chain: Devnet
  let dir: string
  let relay: HostedRelay
  let alice: HostedNode
  let bob: HostedNode

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-network-direct-'))
    network = await createNetwork({ hosts: ['relay', 'alice', 'bob'] })
    const { hosts } = network
    const chainStarted = startDevnet([keyAlice!, keyBob!], 10n ** 21n, { host: network.rootAddress }).then((c) => {
      chain = c
      network.own(c.anvil.process.pid!)
    })
    const relayStarted = startRelayIn(hosts.relay!, join(dir, 'relay')).then((r) => (relay = r))
    await Promise.all([chainStarted, relayStarted])
    await rpc(chain.anvil.rpcUrl, 'evm_setIntervalMining', [1])
    const deploymentFile = join(dir, 'deployment.json')
    await writeDeployment(deploymentFile, chain.deployment)
    const serve = (name: 'alice' | 'bob', key: Hex) =>
      startServeIn(hosts[name]!, {
        rpc: chain.anvil.rpcUrl,
        deploymentFile,
        key,
        relays: [relay.multiaddr],
        dir: join(dir, name),
        flags: [...NODE_FLAGS, '--p2p-listen', `/ip4/${hosts[name]!.overlay}/tcp/4001/ws`, '--p2p-allow-private'],
      })
    ;[alice, bob] = await Promise.all([serve('alice', keyAlice!), serve('bob', keyBob!)])
    await Promise.all([alice, bob].map((n) => eventually(async () => expect((await n.call('GET', '/status')).body).toEqual({ status: 'ready' }), 90_000)))
    const opened = await alice.call('PUT', '/channels', { partner_address: bob.address, token_address: chain.token, total_deposit: String(DEPOSIT) })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
    await eventually(async () => expect((await bob.call('GET', `/channels/${chain.token}/${alice.address}`)).status).toBe(200), 30_000)
  }, 240_000)

  afterAll(async () => {
    await Promise.all([alice, bob, relay].filter(Boolean).map((p) => stopSluice(p.sluice, 15_000)))
    const logs = process.env.SLUICE_NETWORK_LOGS
    if (logs) {
      mkdirSync(logs, { recursive: true })
      for (const p of [alice, bob, relay].filter(Boolean))
        writeFileSync(join(logs, `direct-${p.host.name}.log`), `${p.sluice.stdout()}\n--- stderr ---\n${p.sluice.stderr()}`)
    }
    await chain?.stop()
    await network?.destroy()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  let identifier = 0
  /** POST /payments from `payer` to `payee`: its status and how long it took. */
  async function pay(payer: HostedNode, payee: HostedNode, amount: bigint) {
    const t = performance.now()
    const r = await payer.call('POST', `/payments/${chain.token}/${payee.address}`, { amount: String(amount), identifier: String(++identifier) })
    return { status: r.status, ms: Math.round(performance.now() - t), error: r.status === 200 ? undefined : JSON.stringify(r.body) }
  }
  const balance = async (node: HostedNode, partner: HostedNode) => BigInt((await node.call('GET', `/channels/${chain.token}/${partner.address}`)).body.balance)

  /** Frames between the two hosts, both ways, so far. */
  async function frames(a: string, b: string) {
    const stats = await network.stats()
    return stats.filter((s) => (s.fromHost === a && s.toHost === b) || (s.fromHost === b && s.toHost === a)).reduce((n, s) => n + s.frames, 0)
  }
  async function paths() {
    return { direct: await frames('alice', 'bob'), relay: (await frames('alice', 'relay')) + (await frames('bob', 'relay')) }
  }

  test('alice and bob pay each other over their direct connection: the relay carries none of it', async () => {
    // Alice opened her way to bob when she asked for the channel; bob answers over it.
    await alice.sluice.waitForOutput(new RegExp(`libp2p: direct connection with ${peerIdOfKey(keyBob!)} \\(outbound\\)`), 10_000)
    const before = await paths()
    const results = []
    for (let i = 1; i <= 5; i++) {
      results.push(await pay(alice, bob, 10n))
      // Bob pays back out of what he holds: once alice's Unlock reached him.
      await eventually(async () => expect(await balance(bob, alice)).toBe(BigInt(i) * 7n + 3n), 10_000)
      results.push(await pay(bob, alice, 3n))
    }
    const after = await paths()
    console.log(
      `direct: 10 payments answered in ${results.map((r) => r.ms).join(', ')} ms; frames alice<->bob ${after.direct - before.direct}, through the relay ${after.relay - before.relay}`,
    )
    expect(results.filter((r) => r.status !== 200)).toEqual([])
    await eventually(async () => expect(await balance(alice, bob)).toBe(DEPOSIT - 35n), 10_000)
    // The relay's frames meanwhile are the links' own upkeep (libp2p's checks every 10 s), not the payments': a
    // payment is a dozen messages or so each way.
    expect(after.direct - before.direct).toBeGreaterThan(100)
    expect(after.relay - before.relay).toBeLessThan((after.direct - before.direct) / 5)
  }, 120_000)

  test('the link between alice and bob cut, the relay still reachable: they go on paying through the relay; healed, they pay on', async () => {
    const before = await paths()
    // Where the first test left them, once bob's last Unlock reached alice.
    await eventually(async () => expect(await balance(alice, bob)).toBe(DEPOSIT - 35n), 10_000)
    const balanceBefore = await balance(alice, bob)
    await network.cutBetween('alice', 'bob')
    const cutAt = performance.now()
    const during = []
    for (let i = 0; i < 10; i++) {
      during.push(await pay(i % 2 === 0 ? alice : bob, i % 2 === 0 ? bob : alice, i % 2 === 0 ? 2n : 1n))
      await new Promise((r) => setTimeout(r, 500))
    }
    const cutPaths = await paths()
    console.log(
      `cut between alice and bob: 10 payments answered in ${during.map((r) => r.ms).join(', ')} ms (the first ${Math.round(
        during[0]!.ms,
      )} ms after the cut); frames through the relay meanwhile ${cutPaths.relay - before.relay}, alice<->bob ${cutPaths.direct - before.direct} (all dropped)`,
    )
    expect(during.filter((r) => r.status !== 200)).toEqual([])
    // Given up within a check of the direct connection (5 s, 2.5 s to answer) and a resend, well inside a lock's time.
    expect(during[0]!.ms).toBeLessThan(15_000)
    expect(cutPaths.relay - before.relay).toBeGreaterThan(100)
    await alice.sluice.waitForOutput(new RegExp(`libp2p: direct connection with ${peerIdOfKey(keyBob!)} closed`), 1_000)

    await network.healBetween('alice', 'bob')
    const healedAt = performance.now()
    const after = []
    for (let i = 0; i < 4; i++) after.push(await pay(alice, bob, 1n))
    expect(after.filter((r) => r.status !== 200)).toEqual([])
    await eventually(async () => expect(await balance(alice, bob)).toBe(balanceBefore - 5n * 2n + 5n - 4n), 20_000)
    console.log(`healed ${Math.round(healedAt - cutAt)} ms after the cut; 4 payments then in ${after.map((r) => r.ms).join(', ')} ms`)
  }, 180_000)
})

async function rpc(url: string, method: string, params: unknown[]) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await r.json()) as { error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
}
