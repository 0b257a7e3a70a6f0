import '../../src/transport/libp2p/nodePolyfills.ts'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { concatBytes, hexToBytes, stringToBytes, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { encryptKeystore } from '../../src/chain/keystore.ts'
import { openChannel } from '../../src/chain/tokenNetworkActions.ts'
import { planUserDepositWithdraw } from '../../src/chain/userDepositActions.ts'
import { ServiceRegistry } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { MIN_IOU_EXPIRY_BLOCKS } from '../../src/pathfinding/iou.ts'
import type { PFSCapacityUpdate, Signed } from '../../src/protocol/messages/types.ts'
import { encodeMessage } from '../../src/protocol/messages/wire.ts'
import { pfsUpdateAckId } from '../../src/protocol/pfsUpdateAck.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import type { Relay } from '../../src/transport/libp2p/relay.ts'
import type { Devnet } from '../integration/support/devnet.ts'
import { eventually } from '../integration/support/eventually.ts'
import { iouJson } from '../support/ious.ts'
import { request, startPathfindingNodes, type PathfindingNodes } from '../support/pathfindingNodes.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import {
  fundServiceAndPayer,
  openChannelWithDeposits,
  serviceFlags,
  startDevnetAndRelay,
  startServiceProcess,
  testAccounts,
  type TestAccount,
} from '../support/serviceProcess.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { logMessages, runSluice, type SluiceProcess } from './sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

/*
 * `sluice pathfinding` as a process (docs/decisions/0072), against a real anvil, a real relay and real HTTP: four nodes
 * A, B, C, D (each a libp2p transport in this process, online on the relay) with channels A-B, B-C, C-D on chain; they
 * send the service their capacity and fee updates; A pays for its routes with IOUs from its UserDeposit.
 */

const [aKey, bKey, cKey, dKey, serviceKey] = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[4], anvilKeys[5]] as Hex[] as [Hex, Hex, Hex, Hex, Hex]
const [A, B, C, D, SERVICE] = [aKey, bKey, cKey, dKey, serviceKey].map((k) => privateKeyToAddress(k)) as [Address, Address, Address, Address, Address]
const FEE = 10n
const DEPOSIT = 1_000n
const SETTLE_TIMEOUT = 100n
const REVEAL_TIMEOUT = 10n
const UDC_DEPOSIT = 10n ** 18n
const tempDir = tempDirs('sluice-pathfinding-')

let net: Devnet
let relay: Relay
let deploymentFile: string
let stopNetwork: (() => Promise<void>) | undefined
let dataDir: string
let devnet: ReturnType<typeof createDevnetClient>
let chainOf: (key: Hex) => Promise<TestAccount>
const channels: Record<'ab' | 'bc' | 'cd', bigint> = { ab: 0n, bc: 0n, cd: 0n }
let nodes: PathfindingNodes
const started: SluiceProcess[] = []

beforeAll(async () => {
  ;({ net, relay, deploymentFile, stop: stopNetwork } = await startDevnetAndRelay([aKey, bKey, cKey, dKey], tempDir()))
  dataDir = tempDir()
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] as Hex })
  chainOf = testAccounts(net.anvil.rpcUrl)
  const [deployer, a] = await Promise.all([chainOf(anvilKeys[0] as Hex), chainOf(aKey)])
  // The service pays the registry in service tokens; A's UserDeposit pays the service.
  await fundServiceAndPayer(net.deployment, { deployer, service: SERVICE, payer: a, deposit: UDC_DEPOSIT })
  for (const [name, k1, k2] of [
    ['ab', aKey, bKey],
    ['bc', bKey, cKey],
    ['cd', cKey, dKey],
  ] as const) {
    const [one, two] = await Promise.all([chainOf(k1), chainOf(k2)])
    channels[name] = await openChannelWithDeposits(one, two, { tokenNetwork: net.tokenNetwork, settleTimeout: SETTLE_TIMEOUT, deposit: DEPOSIT })
  }
  nodes = await startPathfindingNodes([aKey, bKey, cKey, dKey], {
    net,
    relays: relay.multiaddrs,
    service: SERVICE,
    deposit: DEPOSIT,
    revealTimeout: REVEAL_TIMEOUT,
  })
}, 180_000)

afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await nodes?.stop()
  await stopNetwork?.()
})

const serviceArgs = () => [
  'pathfinding',
  ...serviceFlags({ rpcUrl: net.anvil.rpcUrl, deploymentFile, key: serviceKey, dataDir, relay: relay.multiaddrs[0]!, confirmations: 1 }),
  '--service-fee',
  String(FEE),
  // One service token is worth one ETH here: a claim of a tenth of a token is worth its gas, one of a few units is not.
  '--service-token-price',
  '1',
  '--metrics',
  '127.0.0.1:0',
]

const startService = () => startServiceProcess(serviceArgs(), tempDir(), started)

const errorOf = (code: number) => ({ error_code: code, errors: expect.any(String) })

/** What B charges to mediate: 3 on the way in and 4 on the way out, 7 a payment. */
const B_FEE = 7n

/** GET /payment/iou as Raiden signs it: sender || receiver || the timestamp's text, EIP-191. */
function lastIouQuery(key: Hex, timestamp = new Date().toISOString().slice(0, 19)) {
  const sender = privateKeyToAddress(key)
  const signature = signPackedSync(jsSecp256k1, key, concatBytes([hexToBytes(sender), hexToBytes(SERVICE), stringToBytes(timestamp)]))
  return new URLSearchParams({ sender, receiver: SERVICE, timestamp, signature }).toString()
}

describe('sluice pathfinding', () => {
  test('a bad flag or a missing one: one line, exit code 2', async () => {
    const base = ['pathfinding', '--rpc', 'http://127.0.0.1:1', '--deployment', 'd', '--key', serviceKey, '--data-dir', 'x']
    const cases: [string[], RegExp][] = [
      [['pathfinding', '--rpc', 'http://127.0.0.1:1'], /^sluice pathfinding: --deployment is required \(see sluice pathfinding --help\)\n$/],
      [base, /^sluice pathfinding: --relay is required/],
      [[...base, '--relay', '/ip4/127.0.0.1/tcp/1'], /^sluice pathfinding: --relay must be /],
      [[...base, '--relay', relay.multiaddrs[0]!, '--service-fee', '-1'], /^sluice pathfinding: --service-fee must be a decimal integer, got "-1"/],
      [[...base, '--relay', relay.multiaddrs[0]!, '--service-token-price', '0'], /^sluice pathfinding: --service-token-price must be a decimal above 0/],
      [[...base, '--relay', relay.multiaddrs[0]!, '--api', 'nowhere'], /^sluice pathfinding: --api must be HOST:PORT/],
      [[...base, '--relay', relay.multiaddrs[0]!, '--url', 'ftp://x'], /^sluice pathfinding: --url must be an http\(s\) URL/],
      [[...base, '--relay', relay.multiaddrs[0]!, '--confirmations', 'many'], /^sluice pathfinding: --confirmations must be /],
      [[...base, '--relay', relay.multiaddrs[0]!, '--polling-interval', '1'], /^sluice pathfinding: --polling-interval must be /],
      [[...base, '--relay', relay.multiaddrs[0]!, '--nope'], /^sluice pathfinding: unknown flag --nope/],
      [
        [...base, '--relay', relay.multiaddrs[0]!, '--metrics', '127.0.0.1'],
        /^sluice pathfinding: --metrics must be HOST:PORT \(port 0 picks a free one\), got "127\.0\.0\.1"/,
      ],
    ]
    for (const [args, stderr] of cases) {
      const ran = await runSluice(args, tempDir())
      expect(ran.code, args.join(' ')).toBe(2)
      expect(ran.stdout).toBe('')
      expect(ran.stderr).toMatch(stderr)
      expect(ran.stderr.split('\n')).toHaveLength(2)
    }
    const help = await runSluice(['pathfinding', '--help'], tempDir())
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/POST \/api\/v1\/<token network>\/paths/)
    expect(help.stdout).toMatch(/--service-fee <AMOUNT>/)
    expect(help.stdout).toMatch(/--metrics <HOST:PORT> +serve Prometheus metrics/)
  }, 120_000)

  test("Raiden's PFS API against the process: routes from the updates nodes sent, paid by IOU, with raiden-services' error codes; kept across kill -9; the IOUs claimed through OneToN when worth it", async () => {
    const { transports, acknowledged, capacity, fees, sendUntilAcknowledged } = nodes
    const t0 = performance.now()
    let service = await startService()
    const api = service.api
    const tStarted = performance.now()
    const tn = net.tokenNetwork

    // Registered in the ServiceRegistry, its URL readable on chain.
    const onChainUrl = await devnet.readContract({
      address: net.deployment.contracts.ServiceRegistry.address,
      abi: ServiceRegistry.abi,
      functionName: 'urls',
      args: [SERVICE],
    })
    expect(onChainUrl).toBe(api.replace(/\/api\/v1$/, ''))
    expect(
      await devnet.readContract({
        address: net.deployment.contracts.ServiceRegistry.address,
        abi: ServiceRegistry.abi,
        functionName: 'hasValidRegistration',
        args: [SERVICE],
      }),
    ).toBe(true)

    // GET /info: what Raiden's clients read of a service.
    const info = await request('GET', `${api}/info`)
    expect(info.status).toBe(200)
    expect(info.body).toMatchObject({
      price_info: Number(FEE),
      network_info: {
        chain_id: net.deployment.chainId,
        token_network_registry_address: net.deployment.contracts.TokenNetworkRegistry.address,
        user_deposit_address: net.deployment.contracts.UserDeposit.address,
        service_token_address: net.deployment.serviceToken,
        confirmed_block: { number: expect.any(Number) },
      },
      contracts_version: net.deployment.contracts_version,
      payment_address: SERVICE,
      peer_id: peerIdOfKey(serviceKey).toString(),
      relays: relay.multiaddrs.slice(0, 1),
    })
    expect(info.headers.get('access-control-allow-origin')).toBe('*')

    // Every node announces its channels: capacities (nonces 1), and B its fees. Each update held is acknowledged.
    const now = Date.now()
    const updates = [
      capacity(aKey, B, channels.ab),
      capacity(bKey, A, channels.ab),
      capacity(bKey, C, channels.bc),
      capacity(cKey, B, channels.bc),
      capacity(cKey, D, channels.cd),
      capacity(dKey, C, channels.cd),
    ]
    const keyOf = (u: Signed<PFSCapacityUpdate>) => [aKey, bKey, cKey, dKey].find((k) => privateKeyToAddress(k) === u.updating_participant)!
    for (const u of updates) await sendUntilAcknowledged(keyOf(u), u)
    await sendUntilAcknowledged(bKey, fees(bKey, channels.ab, now - 1_000, 3n))
    await sendUntilAcknowledged(bKey, fees(bKey, channels.bc, now - 1_000, 4n))

    // Forged, stale, or sent by another node than the one it speaks for: refused and counted, never acknowledged.
    const forged = { ...capacity(aKey, B, channels.ab, { updating_nonce: 2n }), signature: capacity(cKey, B, channels.ab).signature }
    const stale = capacity(aKey, B, channels.ab, { updating_nonce: 0n, other_nonce: 0n })
    const staleFees = fees(bKey, channels.bc, now - 60_000)
    const sentByOther = capacity(aKey, B, channels.ab, { updating_nonce: 3n })
    await transports.get(A)!.send(SERVICE, [encodeMessage(forged), encodeMessage(stale)])
    await transports.get(B)!.send(SERVICE, [encodeMessage(staleFees)])
    await transports.get(C)!.send(SERVICE, [encodeMessage(sentByOther)])
    await eventually(async () => {
      const { updates } = (await request('GET', `${api}/status`)).body
      expect(updates).toMatchObject({ accepted: 8, refused: { bad_signature: 1, stale: 2, not_updater: 1 }, refused_total: 4 })
    })
    for (const u of [forged, stale, staleFees, sentByOther]) expect(acknowledged.has(pfsUpdateAckId(u))).toBe(false)

    // An update for a channel whose opening is not confirmed yet is held, and taken (and acknowledged) once it is.
    const a = await chainOf(aKey)
    const { channelId: ac } = await openChannel(a.chain, a.queue, { tokenNetwork: tn, partner: C, settleTimeout: SETTLE_TIMEOUT, totalDeposit: DEPOSIT })
    const early = capacity(aKey, C, ac, { other_capacity: 0n })
    await transports.get(A)!.send(SERVICE, [encodeMessage(early)])
    await eventually(async () => expect((await request('GET', `${api}/status`)).body.updates).toMatchObject({ accepted: 8, held_for_unconfirmed_channels: 1 }))
    expect(acknowledged.has(pfsUpdateAckId(early))).toBe(false)
    await devnet.mine({ blocks: 1 })
    await eventually(() => expect(acknowledged.has(pfsUpdateAckId(early))).toBe(true))
    expect((await request('GET', `${api}/status`)).body.updates).toMatchObject({ accepted: 9, held_for_unconfirmed_channels: 0 })

    // A's routes, paid by IOU: a new session expiring far enough ahead, each IOU the last plus the fee.
    const confirmed = BigInt((await request('GET', `${api}/info`)).body.network_info.confirmed_block.number)
    const expiry = confirmed + MIN_IOU_EXPIRY_BLOCKS + 100n
    const paths = (body: Record<string, unknown>, network: string = tn) => request('POST', `${api}/${network}/paths`, body)
    const first = await paths({ from: A, to: D, value: 100, max_paths: 3, iou: iouJson(nodes.iou(aKey, FEE, expiry)) })
    expect(first.status).toBe(200)
    expect(first.body.result).toHaveLength(1)
    const [route] = first.body.result
    // The fee B takes, by Raiden's model; C announced none.
    expect(route).toMatchObject({ path: [A, B, C, D], estimated_fee: Number(B_FEE) })
    // address_metadata: each hop's signed presence record, under Raiden's names (user_id: the peer id it is reached by).
    expect(Object.keys(route.address_metadata)).toEqual([A, B, C, D])
    expect(route.address_metadata[D]).toMatchObject({ user_id: peerIdOfKey(dKey).toString(), displayname: expect.stringMatching(/^[0-9a-f]+$/) })
    expect(JSON.parse(route.address_metadata[D].capabilities)).toMatchObject({
      v: 1,
      addrs: [expect.stringContaining(`/p2p-circuit/p2p/${peerIdOfKey(dKey)}`)],
    })
    expect(first.body.feedback_token).toMatch(/^[0-9a-f]{32}$/)
    // Raiden's light client sends amounts as decimal strings: the same.
    const second = await paths({ from: A, to: C, value: '100', iou: { ...iouJson(nodes.iou(aKey, 2n * FEE, expiry)), amount: String(2n * FEE) } })
    expect(second).toMatchObject({ status: 200, body: { result: [{ path: [A, B, C], estimated_fee: Number(B_FEE) }] } })

    // Bad requests: 2000, with each field named.
    expect(await paths({ from: A, to: D, value: 0 })).toMatchObject({ status: 400, body: { ...errorOf(2000), error_details: { value: [expect.any(String)] } } })
    expect(await paths({ from: A.toLowerCase(), to: D, value: 1, hops: 3 })).toMatchObject({
      status: 400,
      body: { error_code: 2000, error_details: { from: [expect.stringMatching(/checksummed/)], hops: ['Unknown field.'] } },
    })
    expect(await request('POST', `${api}/${tn}/paths`, '{"from": ')).toMatchObject({ status: 400, body: errorOf(2000) })
    expect(await paths({ from: A, to: D, value: 1 }, tn.toLowerCase())).toMatchObject({ status: 400, body: errorOf(2003) })
    expect(await paths({ from: A, to: D, value: 1 }, net.deployment.contracts.OneToN.address)).toMatchObject({ status: 400, body: errorOf(2004) })

    // Bad IOUs: missing, signed by another key, too small, expiring too early, of another session, from a sender
    // without deposit, to another service.
    expect(await paths({ from: A, to: D, value: 1 })).toMatchObject({ status: 400, body: errorOf(2101) })
    expect(await paths({ from: A, to: D, value: 1, iou: iouJson({ ...nodes.iou(bKey, 3n * FEE, expiry), sender: A }) })).toMatchObject({
      status: 400,
      body: errorOf(2001),
    })
    expect(await paths({ from: A, to: D, value: 1, iou: iouJson(nodes.iou(aKey, 3n * FEE - 1n, expiry)) })).toMatchObject({
      status: 400,
      body: { ...errorOf(2104), error_details: { expected_amount: 30, actual_amount: 29 } },
    })
    expect(await paths({ from: A, to: D, value: 1, iou: iouJson(nodes.iou(aKey, 3n * FEE, expiry + 1n)) })).toMatchObject({
      status: 400,
      body: { ...errorOf(2106), error_details: { iou: { amount: 20, expiration_block: Number(expiry) } } },
    })
    expect(await paths({ from: B, to: D, value: 1, iou: iouJson(nodes.iou(bKey, FEE, confirmed + 10n)) })).toMatchObject({ status: 400, body: errorOf(2103) })
    expect(await paths({ from: B, to: D, value: 1, iou: iouJson(nodes.iou(bKey, FEE, expiry)) })).toMatchObject({
      status: 400,
      body: { ...errorOf(2107), error_details: { required_deposit: 20, seen_deposit: 0 } },
    })
    expect(await paths({ from: B, to: D, value: 1, iou: iouJson(nodes.iou(bKey, FEE, expiry, { receiver: C })) })).toMatchObject({
      status: 400,
      body: errorOf(2102),
    })
    expect(await paths({ from: B, to: D, value: 1, iou: iouJson(nodes.iou(bKey, FEE, expiry, { chainId: 1n })) })).toMatchObject({
      status: 400,
      body: errorOf(2005),
    })
    const otherOneToN = nodes.iou(bKey, FEE, expiry, { oneToNAddress: net.deployment.contracts.UserDeposit.address })
    expect(await paths({ from: B, to: D, value: 1, iou: iouJson(otherOneToN) })).toMatchObject({ status: 400, body: errorOf(2108) })

    // No route: more than the channels carry (paid for all the same, as raiden-services charges a request).
    const tooMuch = await paths({ from: A, to: D, value: 5_000, iou: iouJson(nodes.iou(aKey, 3n * FEE, expiry)) })
    expect(tooMuch).toMatchObject({ status: 404, body: errorOf(2201) })
    expect(tooMuch.body.errors).toMatch(/^Source does not have a channel with sufficient capacity/)

    // A target that is not online: D leaves the relay, which tells the service.
    await transports.get(D)!.stop()
    transports.delete(D)
    await eventually(async () => expect(await request('GET', `${api}/address/${D}/metadata`)).toMatchObject({ status: 404, body: errorOf(2203) }), 15_000)
    const offline = await paths({ from: A, to: D, value: 1, iou: iouJson(nodes.iou(aKey, 4n * FEE, expiry)) })
    expect(offline).toMatchObject({ status: 404, body: { ...errorOf(2201), error_details: { reason: 'target_offline' } } })
    expect(offline.body.errors).toMatch(/^Target not online/)
    expect(await request('GET', `${api}/address/${C}/metadata`)).toMatchObject({ status: 200, body: { user_id: peerIdOfKey(cKey).toString() } })
    expect(await request('GET', `${api}/address/${C.toLowerCase()}/metadata`)).toMatchObject({ status: 400, body: errorOf(2006) })

    // GET /payment/iou: the last IOU, to the sender who signs the query; refused when signed by another or too old.
    const last = await request('GET', `${api}/${tn}/payment/iou?${lastIouQuery(aKey)}`)
    expect(last).toMatchObject({
      status: 200,
      body: { last_iou: { sender: A, receiver: SERVICE, amount: 40, expiration_block: Number(expiry), chain_id: net.deployment.chainId } },
    })
    const forgedQuery = new URLSearchParams(lastIouQuery(bKey))
    forgedQuery.set('sender', A)
    expect(await request('GET', `${api}/${tn}/payment/iou?${forgedQuery}`)).toMatchObject({ status: 400, body: errorOf(2001) })
    expect(await request('GET', `${api}/${tn}/payment/iou?${lastIouQuery(aKey, '2020-01-01T00:00:00')}`)).toMatchObject({ status: 400, body: errorOf(2002) })
    expect(await request('GET', `${api}/${tn}/payment/iou?${lastIouQuery(cKey)}`)).toMatchObject({ status: 404, body: { last_iou: null } })

    // Feedback on a route answered: taken once; an unknown token or another route is refused.
    const feedback = (body: unknown) => request('POST', `${api}/${tn}/feedback`, body)
    expect(await feedback({ token: first.body.feedback_token, success: true, path: [A, B, C, D] })).toMatchObject({ status: 200, body: {} })
    expect((await feedback({ token: first.body.feedback_token, success: false, path: [A, B, D] })).status).toBe(400)
    expect((await feedback({ token: 'f'.repeat(32), success: true, path: [A, B, C, D] })).status).toBe(400)
    expect(await feedback({ token: 'nope', success: true, path: [] })).toMatchObject({ status: 400, body: errorOf(2000) })
    const beforeKill = (await request('GET', `${api}/status`)).body
    expect(beforeKill.routes).toMatchObject({ answered: 2, no_route: 2, feedback: { success: 1, failure: 0 } })
    expect(beforeKill.ious).toMatchObject({ held: 1, claimed: 0 })
    // The same in its metrics (docs/decisions/0078).
    const metrics = await scrape(metricsUrlOf(service.sluice.stdout()))
    expect(sampleValue(metrics, 'sluice_pathfinding_route_requests_total', { outcome: 'answered' })).toBe(2)
    expect(sampleValue(metrics, 'sluice_pathfinding_route_requests_total', { outcome: 'no_route' })).toBe(2)
    expect(beforeKill.routes.refused).toBeGreaterThan(0)
    expect(sampleValue(metrics, 'sluice_pathfinding_route_requests_total', { outcome: 'refused' })).toBe(beforeKill.routes.refused)
    expect(sampleValue(metrics, 'sluice_pathfinding_feedback_total', { outcome: 'success' })).toBe(1)
    expect(sampleValue(metrics, 'sluice_pathfinding_ious', { status: 'held' })).toBe(1)
    expect(sampleValue(metrics, 'sluice_pathfinding_ious', { status: 'claimed' })).toBe(0)
    expect(sampleValue(metrics, 'sluice_pathfinding_updates_total', { outcome: 'accepted' })).toBe(beforeKill.updates.accepted)
    expect(sampleValue(metrics, 'sluice_chain_sync_lag_blocks')).toBeLessThanOrEqual(2)

    const tAnswered = performance.now()
    // kill -9, and a restart on the same data: the IOU and the updates are kept (a route without any update sent again).
    service.sluice.child.kill('SIGKILL')
    expect(await service.sluice.exited).toEqual({ code: null, signal: 'SIGKILL' })
    service = await startService()
    const again = service.api
    const tRestarted = performance.now()
    expect(await request('GET', `${again}/${tn}/payment/iou?${lastIouQuery(aKey)}`)).toMatchObject({ status: 200, body: { last_iou: { amount: 40 } } })
    // Who is online is not kept: the relay says it again once the service watches the nodes of its channels.
    for (const node of [A, B, C]) await eventually(async () => expect((await request('GET', `${again}/address/${node}/metadata`)).status).toBe(200), 15_000)
    expect(
      await request('POST', `${again}/${tn}/paths`, { from: A, to: C, value: 1000 - Number(B_FEE), iou: iouJson(nodes.iou(aKey, 5n * FEE, expiry)) }),
    ).toMatchObject({
      status: 200,
      body: { result: [{ path: [A, B, C] }] },
    })

    // The claim: once the session is in its last week it is due, but a claim of 50 units is not worth its gas; a raise
    // to a tenth of a token is, and OneToN pays it into the service's deposit.
    const serviceBefore = await nodes.udcBalance(SERVICE)
    await devnet.mine({ blocks: 150 })
    const [, pays, costs] = await service.sluice.waitForOutput(
      /not claimed now: not worth its gas yet: it pays (\d+), its gas costs (\d+) in service tokens\n/,
      20_000,
    )
    expect(BigInt(pays!)).toBe(5n * FEE)
    expect(BigInt(costs!)).toBeGreaterThan(5n * FEE)
    expect((await request('GET', `${again}/status`)).body.ious).toMatchObject({ held: 1, claiming: 0, claimed: 0 })
    expect(await nodes.udcBalance(SERVICE)).toBe(serviceBefore)
    const tenth = 10n ** 17n
    expect(await request('POST', `${again}/${tn}/paths`, { from: A, to: C, value: 1, iou: iouJson(nodes.iou(aKey, tenth, expiry)) })).toMatchObject({
      status: 200,
    })
    await eventually(
      async () => expect((await request('GET', `${again}/status`)).body.ious).toMatchObject({ held: 0, claimed: 1, claimed_amount: tenth }),
      30_000,
    )
    const claimedMetrics = await scrape(metricsUrlOf(service.sluice.stdout()))
    expect(sampleValue(claimedMetrics, 'sluice_pathfinding_ious', { status: 'claimed' })).toBe(1)
    expect(sampleValue(claimedMetrics, 'sluice_pathfinding_ious_claimed_amount')).toBe(Number(tenth))
    expect(await nodes.udcBalance(SERVICE)).toBe(serviceBefore + tenth)
    const tClaimed = performance.now()
    expect(await nodes.udcBalance(A)).toBe(UDC_DEPOSIT - tenth)
    // The session is closed: another IOU of it is refused, a new session taken.
    expect(await request('POST', `${again}/${tn}/paths`, { from: A, to: C, value: 1, iou: iouJson(nodes.iou(aKey, tenth + FEE, expiry)) })).toMatchObject({
      status: 400,
      body: errorOf(2105),
    })
    const fresh = BigInt((await request('GET', `${again}/info`)).body.network_info.confirmed_block.number) + MIN_IOU_EXPIRY_BLOCKS + 1_000n
    expect(await request('POST', `${again}/${tn}/paths`, { from: A, to: C, value: 1, iou: iouJson(nodes.iou(aKey, FEE, fresh)) })).toMatchObject({
      status: 200,
    })

    // A session far from its end waits, even worth its gas; once A plans to withdraw what would leave less than twice
    // the IOU, it is claimed at once.
    expect(await request('POST', `${again}/${tn}/paths`, { from: A, to: C, value: 1, iou: iouJson(nodes.iou(aKey, tenth, fresh)) })).toMatchObject({
      status: 200,
    })
    await new Promise((r) => setTimeout(r, 1_000))
    expect((await request('GET', `${again}/status`)).body.ious).toMatchObject({ held: 1, claimed: 1 })
    await planUserDepositWithdraw(a.chain, a.queue, { userDeposit: net.deployment.contracts.UserDeposit.address, amount: UDC_DEPOSIT - 2n * tenth })
    await devnet.mine({ blocks: 1 })
    await eventually(
      async () => expect((await request('GET', `${again}/status`)).body.ious).toMatchObject({ held: 0, claimed: 2, claimed_amount: 2n * tenth }),
      30_000,
    )
    expect(await nodes.udcBalance(SERVICE)).toBe(serviceBefore + 2n * tenth)

    service.sluice.child.kill('SIGTERM')
    expect(await service.sluice.exited).toEqual({ code: 0, signal: null })
    expect(logMessages(service.sluice.stdout()).slice(-2)).toEqual(['SIGTERM: stopping', 'stopped'])
    console.log(
      `pathfinding: started and registered ${(tStarted - t0).toFixed(0)} ms, updates and requests ${(tAnswered - tStarted).toFixed(0)} ms, restarted ${(tRestarted - tAnswered).toFixed(0)} ms, claimed ${(tClaimed - tRestarted).toFixed(0)} ms; a claim's gas in service tokens at 1 ETH a token: ${costs}`,
    )
  }, 300_000)

  test("its key from a v3 keystore (--keystore with --password-file, as sluice serve and Raiden's services take it): the service is the keystore's account", async () => {
    const dir = tempDir()
    const keystore = join(dir, 'service.json')
    const password = join(dir, 'password.txt')
    // A cheap PBKDF2 cost: the test pays for one derivation, the service's (keystore.test.ts covers the default's).
    writeFileSync(keystore, JSON.stringify(await encryptKeystore(serviceKey, 'service password', { c: 1_000 })))
    writeFileSync(password, 'service password\n')
    const args = serviceArgs()
    const keyAt = args.indexOf('--key')
    args.splice(keyAt, 2, '--keystore', keystore, '--password-file', password)
    args.splice(args.indexOf('--data-dir') + 1, 1, tempDir())
    const service = await startServiceProcess(args, tempDir(), started)
    expect((await request('GET', `${service.api}/info`)).body).toMatchObject({ payment_address: SERVICE })
    // Registered already (the test above): its start found the registration and sent nothing.
    expect((await request('GET', `${service.api}/status`)).body).toMatchObject({ address: SERVICE, registration: { registered: true } })
    service.sluice.child.kill('SIGTERM')
    expect(await service.sluice.exited).toEqual({ code: 0, signal: null })
    // A wrong password: one line, exit code 2, nothing started.
    writeFileSync(password, 'not it\n')
    const wrong = await runSluice(args, tempDir())
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toMatch(/^sluice pathfinding: .*password/i)
  }, 120_000)
})
