// The node's side of pathfinding (docs/decisions/0073) between real processes: a `sluice pathfinding` service, a relay
// and five `sluice serve` nodes A, B, C, D, E on an anvil of this file's own (the service registers itself in the
// ServiceRegistry, which the run's shared anvil must not get). Two ways from A to D: A-B-D, short and free, and
// A-C-E-D, where E charges 10 a mediation. B's direction to D gets drained. Routing locally, A heard it and E's fee
// from the nodes' announcements (docs/decisions/0074); with --routing-mode pfs the service's route and fee carry the payment, its IOU rises by its
// price, a first route that fails falls back to the next, each outcome goes back to the service, private nodes tell it
// nothing, and a node whose service is gone routes locally and says so.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { feeMargin } from '../../src/protocol/fees/index.ts'
import { packIouQuery } from '../../src/protocol/iou.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { call } from '../cli/devnetProcess.ts'
import { logged, quickServeFlags, startSluice, stopSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { fundServiceAndPayer, serviceFlags, startServiceProcess, testAccounts } from '../support/serviceProcess.ts'
import { nativeCurve } from '../support/curve.ts'

type Name = 'A' | 'B' | 'C' | 'D' | 'E'
const names: Name[] = ['A', 'B', 'C', 'D', 'E']
const keys = Object.fromEntries(names.map((n, i) => [n, anvilKeys[i + 1] as Hex])) as Record<Name, Hex>
const at = Object.fromEntries(names.map((n) => [n, privateKeyToAddress(keys[n])])) as Record<Name, Address>
const serviceKey = anvilKeys[7] as Hex
const SERVICE = privateKeyToAddress(serviceKey)
/** What one routes request costs, in service tokens. */
const PRICE = 10n
const DEPOSIT = 1000n
/** E's flat fee per mediation (5 on each of its two channels). */
const E_FEE = 10n

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pfs-client-'))
  dirs.push(dir)
  return dir
}

let net: Devnet
let relay: Relay
let deploymentFile: string
let service: { sluice: SluiceProcess; api: string } | undefined
const nodes = {} as Record<Name, { sluice: SluiceProcess; api: string; dataDir: string }>

function startService(): Promise<{ sluice: SluiceProcess; api: string }> {
  const flags = serviceFlags({ rpcUrl: net.anvil.rpcUrl, deploymentFile, key: serviceKey, dataDir: tempDir(), relay: relay.multiaddrs[0]!, confirmations: 0 })
  return startServiceProcess(['pathfinding', ...flags, '--service-fee', String(PRICE)], tempDir())
}

/** The service's base URL, as a node is given it (its API is under /api/v1). */
const serviceUrl = () => service!.api.replace(/\/api\/v1$/, '')

async function serve(name: Name, ...flags: string[]) {
  const dataDir = nodes[name]?.dataDir ?? tempDir()
  const sluice = startSluice(
    [
      'serve',
      '--rpc',
      net.anvil.rpcUrl,
      '--deployment',
      deploymentFile,
      '--key',
      keys[name],
      '--data-dir',
      dataDir,
      '--relay',
      relay.multiaddrs[0]!,
      ...quickServeFlags,
      ...(name === 'E' ? ['--flat-fee', net.token, String(E_FEE)] : []),
      ...flags,
    ],
    tempDir(),
  )
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  nodes[name] = { sluice, api: api!, dataDir }
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 60_000)
}

/** Every node but a private one tells the service of its channels: the service named, routes found locally. */
const announcing = () => ['--routing-mode', 'local', '--pathfinding-service-address', serviceUrl()]
const restart = async (name: Name, ...flags: string[]) => {
  await stopSluice(nodes[name].sluice)
  await serve(name, ...flags)
}

const api = (name: Name) => nodes[name].api
const settings = async (name: Name) => (await call('GET', `${api(name)}/settings`)).body
const pay = (from: Name, to: Name, amount: bigint, identifier: number) =>
  call('POST', `${api(from)}/payments/${net.token}/${at[to]}`, { amount: String(amount), identifier: String(identifier) })
const balance = async (name: Name, partner: Name) => BigInt((await call('GET', `${api(name)}/channels/${net.token}/${at[partner]}`)).body.balance)
const serviceStatus = async () => (await call('GET', `${service!.api}/status`)).body

/** Every update these nodes sent is acknowledged by the service. */
async function allAcknowledged(...which: Name[]) {
  await eventually(async () => {
    for (const name of which) {
      const { pathfinding } = await settings(name)
      expect(pathfinding.service?.address, name).toBe(SERVICE)
      expect(pathfinding.announcements.waiting, name).toBe(0)
    }
  }, 30_000)
}

/** A's IOU session as the service holds it: GET /payment/iou signed with A's key, as Raiden asks it. */
async function lastIou(): Promise<bigint | undefined> {
  const timestamp = new Date().toISOString().slice(0, 19)
  const signature = signPackedSync(nativeCurve, keys.A, packIouQuery(at.A, SERVICE, timestamp))
  const query = new URLSearchParams({ sender: at.A, receiver: SERVICE, timestamp, signature })
  const answer = await fetch(`${service!.api}/${net.tokenNetwork}/payment/iou?${query}`)
  const body = (await answer.json()) as { last_iou: { amount: number } | null }
  return body.last_iou ? BigInt(body.last_iou.amount) : undefined
}

beforeAll(async () => {
  ;[net, relay] = await Promise.all([startDevnet(names.map((n) => keys[n])), startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })])
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
  // The service pays the ServiceRegistry in service tokens; A pays the service from its UserDeposit.
  const account = testAccounts(net.anvil.rpcUrl)
  const [deployer, a] = await Promise.all([account(anvilKeys[0] as Hex), account(keys.A)])
  await fundServiceAndPayer(net.deployment, { deployer, service: SERVICE, payer: a, deposit: 1000n })
  await Promise.all([deployer.chain.close(), a.chain.close()])
  service = await startService()

  await Promise.all(names.map((name) => serve(name, ...announcing())))
  const open = async (from: Name, to: Name) => {
    const opened = await call('PUT', `${api(from)}/channels`, { partner_address: at[to], token_address: net.token, total_deposit: String(DEPOSIT) })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
  }
  await Promise.all([open('A', 'B').then(() => open('A', 'C')), open('B', 'D'), open('C', 'E'), open('E', 'D')])
  // B can give a lock of A's back (a RefundTransfer is a lock of B's own towards A): else A's payment would wait for
  // the lock's expiry, however many routes it has left.
  await eventually(async () => expect((await call('GET', `${api('B')}/channels/${net.token}/${at.A}`)).status).toBe(200), 30_000)
  const deposited = await call('PATCH', `${api('B')}/channels/${net.token}/${at.A}`, { total_deposit: String(DEPOSIT) })
  expect(deposited.status, JSON.stringify(deposited.body)).toBe(200)
  // Every node follows the five channels, and the service holds what each node announced of its own.
  await eventually(async () => {
    for (const name of names) expect((await call('GET', `${api(name)}/tokens/${net.token}/network`)).body.channels, name).toHaveLength(5)
    expect((await serviceStatus()).network.channels).toBe(5)
  }, 60_000)
  await allAcknowledged(...names)
  // A has seen B's deposit on the chain, and what it hears has settled: an announcement of the setup (B's deposit, say)
  // arriving during the first test would pass for the drained channel's, and A route through B before it knows.
  await eventually(async () => {
    const { channels } = (await call('GET', `${api('A')}/tokens/${net.token}/network`)).body
    const ab = channels.find(
      (c: { participant1: string; participant2: string }) => [c.participant1, c.participant2].sort().join() === [at.A, at.B].sort().join(),
    )
    expect(ab[ab.participant1 === at.B ? 'balance1' : 'balance2']).toBe(String(DEPOSIT))
  }, 30_000)
  await eventually(async () => {
    const first = (await settings('A')).pathfinding.heard
    await new Promise((r) => setTimeout(r, 2_000))
    expect((await settings('A')).pathfinding.heard).toEqual(first)
  }, 60_000)
}, 240_000)

afterAll(async () => {
  await Promise.all(Object.values(nodes).map((n) => stopSluice(n.sluice)))
  if (service) await stopSluice(service.sluice)
  await relay?.stop()
  await net?.stop()
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

describe('a node routing with a pathfinding service', () => {
  test("B drains its way to D: routing locally, A heard it and E's fee from the nodes' announcements (0074), and pays over A-C-E-D at once", async () => {
    const heard = (await settings('A')).pathfinding.heard.accepted
    const drained = await pay('B', 'D', DEPOSIT, 1)
    expect(drained.status, JSON.stringify(drained.body)).toBe(200)
    // The service hears of it from both B and D, D once it has B's Unlock; A from B, and from D through E and C.
    await eventually(async () => expect(await balance('D', 'B')).toBe(DEPOSIT))
    await allAcknowledged('B', 'D')
    await eventually(async () => expect((await settings('A')).pathfinding.heard.accepted).toBeGreaterThan(heard))

    const paid = await pay('A', 'D', 100n, 2)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    // Over the longer route, for the fee E announced, with Raiden's margin on it; no route given up.
    expect(paid.body.route).toEqual([at.C, at.E, at.D])
    expect(paid.body.fee).toBe(String(E_FEE + feeMargin(100n, E_FEE)))
    expect(nodes.A.sluice.stdout()).not.toMatch(logged('payment route failed'))
    // Routing locally asked no service and paid none.
    expect(await lastIou()).toBeUndefined()
  }, 60_000)

  test("--routing-mode pfs: the service's route and fee carry the payment, first time; its IOU rises by its price; the service hears it worked", async () => {
    // No address: `auto`, the service the ServiceRegistry lists (it registered its URL there).
    await restart('A', '--routing-mode', 'pfs')
    await eventually(async () =>
      expect(await settings('A')).toMatchObject({
        routing_mode: 'pfs',
        pathfinding_service_address: serviceUrl(),
        pathfinding_max_paths: 3,
        pathfinding: { service: { url: serviceUrl(), address: SERVICE, price: String(PRICE) }, unavailable: null },
      }),
    )
    expect(nodes.A.sluice.stdout()).toMatch(
      logged(`pathfinding service ${serviceUrl()}: ${SERVICE}, ${PRICE} per route request \\(from the ServiceRegistry\\)`),
    )
    const before = await serviceStatus()

    const paid = await pay('A', 'D', 100n, 3)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    // Over the longer route, for what the service estimated E charges, with Raiden's margin on it.
    expect(paid.body.route).toEqual([at.C, at.E, at.D])
    expect(paid.body.fee).toBe(String(E_FEE + feeMargin(100n, E_FEE)))
    expect(nodes.A.sluice.stdout()).toMatch(
      logged(`pathfinding service ${serviceUrl()} routes 100 to ${at.D} over ${at.C} > ${at.E} > ${at.D} \\(fee ${E_FEE}\\)`),
    )
    // E kept what the service estimated.
    await eventually(async () =>
      expect((await call('GET', `${api('E')}/payments/${net.token}`)).body).toContainEqual(
        expect.objectContaining({ event: 'EventPaymentMediated', fee: String(E_FEE), identifier: '3' }),
      ),
    )
    // Paid: a new IOU session of the service's price.
    expect(await lastIou()).toBe(PRICE)
    await eventually(async () => {
      const { routes } = await serviceStatus()
      expect(routes.answered).toBe(before.routes.answered + 1)
      expect(routes.feedback).toEqual({ success: before.routes.feedback.success + 1, failure: before.routes.feedback.failure })
    })
  }, 90_000)

  test('private B and D tell the service nothing: its route through B fails, A falls back to the next, and tells the service both', async () => {
    // D gives B its way back while both announce; then both go private, and B drains it again, unannounced.
    expect((await pay('D', 'B', DEPOSIT, 4)).status).toBe(200)
    await eventually(async () => expect(await balance('B', 'D')).toBe(DEPOSIT))
    await allAcknowledged('B', 'D')
    await Promise.all([restart('B', '--routing-mode', 'private', '--pathfinding-service-address', serviceUrl()), restart('D', '--routing-mode', 'private')])
    const accepted = (await serviceStatus()).updates.accepted
    expect((await pay('B', 'D', DEPOSIT, 5)).status).toBe(200)
    // E pays D a little: E's update comes through, B's and D's never go.
    const eBefore = (await settings('E')).pathfinding.announcements.acknowledged
    expect((await pay('E', 'D', 1n, 6)).status).toBe(200)
    await allAcknowledged('E')
    const eAcknowledged = (await settings('E')).pathfinding.announcements.acknowledged - eBefore
    expect(eAcknowledged).toBeGreaterThan(0)
    expect((await serviceStatus()).updates.accepted).toBe(accepted + eAcknowledged)
    for (const name of ['B', 'D'] as const)
      expect((await settings(name)).pathfinding, name).toMatchObject({
        service: null,
        unavailable: null,
        announcements: { waiting: 0, acknowledged: 0 },
        heard: { sent: 0 },
      })

    const before = await serviceStatus()
    const iou = await lastIou()
    const paid = await pay('A', 'D', 100n, 7)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    // The service still believes in A-B-D and answers it first; B gives the lock back; A-C-E-D carries it.
    expect(paid.body.route).toEqual([at.C, at.E, at.D])
    expect(nodes.A.sluice.stdout()).toMatch(
      logged(`pathfinding service ${serviceUrl()} routes 100 to ${at.D} over ${at.B} > ${at.D} \\(fee 0\\); ${at.C} > ${at.E} > ${at.D}`),
    )
    expect(nodes.A.sluice.stdout()).toMatch(logged('payment route failed'))
    expect(await lastIou()).toBe(iou! + PRICE)
    await eventually(async () =>
      expect((await serviceStatus()).routes.feedback).toEqual({ success: before.routes.feedback.success + 1, failure: before.routes.feedback.failure + 1 }),
    )
  }, 120_000)

  test("a first payment via the service to E, whom A never met: E's key from the service's answer puts the secret in the LockedTransfer; E never has to reach A", async () => {
    // A has never had a message of E, nor asked the relay for it: without the service's records it would not know E's
    // key, and E would have to ask A for the secret (E would hear of A then, to send it a SecretRequest).
    const knownToE = async () => (await call('GET', `${api('E')}/_debug/transport`)).body.transport.known_peers as number
    const before = await knownToE()
    const paid = await pay('A', 'E', 10n, 20)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body.route).toEqual([at.C, at.E])
    await eventually(async () =>
      expect((await call('GET', `${api('E')}/payments/${net.token}`)).body).toContainEqual(
        expect.objectContaining({ event: 'EventPaymentReceivedSuccess', identifier: '20' }),
      ),
    )
    // E revealed the secret it opened from the LockedTransfer, and A is still nobody E heard of.
    expect(await knownToE()).toBe(before)
  }, 30_000)

  test('a node whose UserDeposit cannot pay the service asks it nothing: it routes locally, says why in its log and its settings, and pays', async () => {
    // C has no UserDeposit: an IOU of the service's price would be refused by the service's own check.
    await restart('C', '--routing-mode', 'pfs', '--pathfinding-service-address', serviceUrl())
    const routesBefore = (await serviceStatus()).routes
    // To B, over A (C has no channel with B): A mediates for free.
    const paid = await pay('C', 'B', 5n, 30)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body).toMatchObject({ route: [at.A, at.B], fee: '0' })
    const why = `the UserDeposit's effective balance 0 does not cover twice the ${PRICE} the IOU would owe the service`
    expect(nodes.C.sluice.stderr()).toMatch(logged(`payment of 5 to ${at.B} routed locally: .*${why}`))
    expect((await settings('C')).pathfinding.unavailable).toMatchObject({ reason: expect.stringContaining(why) })
    // The service was asked for nothing, and holds no IOU of C's.
    expect((await serviceStatus()).routes).toEqual(routesBefore)
    expect(routesBefore.requests).toBeGreaterThan(0)
  }, 60_000)

  test('the service killed: the node routes locally, says so in its log and its settings, and pays', async () => {
    service!.sluice.child.kill('SIGKILL')
    await service!.sluice.exited
    const started = performance.now()
    // A-C-E by deposits: C mediates for free.
    const paid = await pay('A', 'E', 50n, 8)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body).toMatchObject({ route: [at.C, at.E], fee: '0' })
    expect(performance.now() - started).toBeLessThan(10_000)
    // Warnings go to stderr.
    expect(nodes.A.sluice.stderr()).toMatch(logged('pathfinding service unavailable, routing locally: .*cannot be reached'))
    expect(nodes.A.sluice.stderr()).toMatch(logged(`payment of 50 to ${at.E} routed locally: the pathfinding service did not give routes`))
    expect((await settings('A')).pathfinding.unavailable).toMatchObject({ reason: expect.stringMatching(/cannot be reached/) })
    // Within the pause the service is not asked again: the next payment routes locally at once.
    expect((await pay('A', 'E', 5n, 9)).status).toBe(200)
    expect(nodes.A.sluice.stderr()).toMatch(logged(`payment of 5 to ${at.E} routed locally: the pathfinding service is unavailable`))
  }, 60_000)
})
