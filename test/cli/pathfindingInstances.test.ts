import '../../src/transport/libp2p/nodePolyfills.ts'
import { parseTransaction, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { planUserDepositWithdraw } from '../../src/chain/userDepositActions.ts'
import { OneToN } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { MIN_IOU_EXPIRY_BLOCKS } from '../../src/pathfinding/iou.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import type { Relay } from '../../src/transport/libp2p/relay.ts'
import type { Devnet } from '../integration/support/devnet.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startFaultyRpc, type FaultyRpc } from '../support/faultyRpc.ts'
import { iouJson } from '../support/ious.ts'
import { request, startPathfindingNodes, type PathfindingNodes } from '../support/pathfindingNodes.ts'
import { startPostgres, type TestPostgres } from '../support/postgres.ts'
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
import type { SluiceProcess } from './sluiceProcess.ts'

/**
 * Two `sluice pathfinding` processes on one PostgreSQL database (docs/decisions/0077): the leader takes the nodes'
 * updates over the relay and follows the chain, the standby answers routes from what the leader wrote (channels,
 * capacities, fees, who is online); IOUs sent at once to both are checked one at a time; the leader is killed with
 * SIGKILL in the middle of a claim (its transaction journaled, its broadcast swallowed by its endpoint), and the other
 * takes over and completes that claim: OneToN pays once.
 */

const [aKey, bKey, cKey, serviceKey] = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[5]] as Hex[] as [Hex, Hex, Hex, Hex]
const [A, B, C, SERVICE] = [aKey, bKey, cKey, serviceKey].map((k) => privateKeyToAddress(k)) as [Address, Address, Address, Address]
const FEE = 10n
const DEPOSIT = 1_000n
const UDC_DEPOSIT = 10n ** 18n
const LEASE_MS = 2_000
const tempDir = tempDirs('sluice-pathfinders-')

let net: Devnet
let relay: Relay
let deploymentFile: string
let stopNetwork: (() => Promise<void>) | undefined
let postgres: TestPostgres
let faulty: FaultyRpc
let devnet: ReturnType<typeof createDevnetClient>
let a: TestAccount
const channels: Record<'ab' | 'bc', bigint> = { ab: 0n, bc: 0n }
let nodes: PathfindingNodes
const started: SluiceProcess[] = []

beforeAll(async () => {
  // Each kept as soon as it is up, for afterAll to stop even if the other fails.
  await Promise.all([
    startDevnetAndRelay([aKey, bKey, cKey], tempDir()).then((n) => {
      ;({ net, relay, deploymentFile, stop: stopNetwork } = n)
    }),
    startPostgres().then((p) => (postgres = p)),
  ])
  faulty = await startFaultyRpc(net.anvil.rpcUrl, { failRate: 0 })
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] as Hex })
  const account = testAccounts(net.anvil.rpcUrl)
  const deployer = await account(anvilKeys[0] as Hex)
  a = await account(aKey)
  await fundServiceAndPayer(net.deployment, { deployer, service: SERVICE, payer: a, deposit: UDC_DEPOSIT })
  for (const [name, k1, k2] of [
    ['ab', aKey, bKey],
    ['bc', bKey, cKey],
  ] as const) {
    const [one, two] = await Promise.all([account(k1), account(k2)])
    channels[name] = await openChannelWithDeposits(one, two, { tokenNetwork: net.tokenNetwork, settleTimeout: 100n, deposit: DEPOSIT })
  }
  nodes = await startPathfindingNodes([aKey, bKey, cKey], { net, relays: relay.multiaddrs, service: SERVICE, deposit: DEPOSIT, revealTimeout: 10n })
}, 180_000)

afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await nodes?.stop()
  await faulty?.close()
  await stopNetwork?.()
  await postgres?.stop()
})

/** An instance on `database`, following the chain through `rpcUrl`. */
function startPathfinding(database: string, rpcUrl: string) {
  const flags = serviceFlags({ rpcUrl, deploymentFile, key: serviceKey, dataDir: 'unused', relay: relay.multiaddrs[0]!, confirmations: 1 })
  const args = [
    'pathfinding',
    ...flags.filter((_, i) => flags[i] !== '--data-dir' && flags[i - 1] !== '--data-dir'),
    ...['--database', database, '--lease-seconds', String(LEASE_MS / 1000), '--service-fee', String(FEE)],
    // One service token is worth one ETH: a claim of a tenth of a token is worth its gas.
    ...['--service-token-price', '1'],
  ]
  return startServiceProcess(args, tempDir(), started)
}

describe('two sluice pathfinding instances on one database', () => {
  test('the standby answers the routes the leader knows; IOUs sent to both at once are taken one at a time; the leader killed in the middle of a claim, the other completes it once', async () => {
    const t0 = performance.now()
    const { capacity, fees, sendUntilAcknowledged } = nodes
    const database = await postgres.createDatabase('pathfinding')
    const leader = await startPathfinding(database, faulty.url)
    const standby = await startPathfinding(database, net.anvil.rpcUrl)
    expect(standby.sluice.stdout()).toContain('Standby: another instance holds the lease')
    expect((await request('GET', `${leader.api}/status`)).body).toMatchObject({ instance: { leading: true }, registration: { registered: true } })
    expect((await request('GET', `${standby.api}/status`)).body).toMatchObject({ instance: { leading: false }, registration: null })
    const tStarted = performance.now()

    // The nodes announce their channels to the leader (the only instance on the relay); B charges 3 + 4 to mediate.
    for (const [key, partner, channelId] of [
      [aKey, B, channels.ab],
      [bKey, A, channels.ab],
      [bKey, C, channels.bc],
      [cKey, B, channels.bc],
    ] as const)
      await sendUntilAcknowledged(key, capacity(key, partner, channelId))
    await sendUntilAcknowledged(bKey, fees(bKey, channels.ab, Date.now() - 1_000, 3n))
    await sendUntilAcknowledged(bKey, fees(bKey, channels.bc, Date.now() - 1_000, 4n))

    // The standby answers the route from what the leader wrote: the channels, capacities, fees, and who is online.
    const confirmed = BigInt((await request('GET', `${standby.api}/info`)).body.network_info.confirmed_block.number)
    const expiry = confirmed + MIN_IOU_EXPIRY_BLOCKS + 1_000n
    const paths = (api: string, amount: bigint) =>
      request('POST', `${api}/${net.tokenNetwork}/paths`, { from: A, to: C, value: 100, iou: iouJson(nodes.iou(aKey, amount, expiry)) })
    let fromStandby: { status: number; body: any } | undefined
    let paid = 0n
    await eventually(async () => {
      fromStandby = await paths(standby.api, paid + FEE)
      if (fromStandby.status === 200 || fromStandby.body.error_code === 2201) paid += FEE
      expect(fromStandby.status).toBe(200)
    }, 20_000)
    const route = fromStandby!.body.result[0]
    expect(route).toMatchObject({ path: [A, B, C], estimated_fee: 7 })
    expect(Object.keys(route.address_metadata)).toEqual([A, B, C])
    expect(route.address_metadata[C]).toMatchObject({ user_id: peerIdOfKey(cKey).toString() })
    expect(await request('GET', `${standby.api}/address/${B}/metadata`)).toMatchObject({ status: 200, body: { user_id: peerIdOfKey(bKey).toString() } })
    paid += FEE
    const fromLeader = await paths(leader.api, paid)
    expect(fromLeader).toMatchObject({ status: 200, body: { result: [{ path: [A, B, C], estimated_fee: 7 }] } })

    // The same next IOU to both at once, five times: one is taken, the other refused as too small (2104).
    for (let round = 0; round < 5; round++) {
      paid += FEE
      const answers = await Promise.all([paths(leader.api, paid), paths(standby.api, paid)])
      expect(answers.map((r) => r.status).sort(), `round ${round}: ${JSON.stringify(answers.map((r) => r.body))}`).toEqual([200, 400])
      expect(answers.find((r) => r.status === 400)!.body).toMatchObject({ error_code: 2104 })
    }
    const tAnswered = performance.now()

    // A tenth of a token, worth its gas; then A plans to withdraw what leaves less than twice that: the leader claims at
    // once. Its endpoint swallows the broadcast: the claim is signed and journaled, and never reaches the chain.
    const tenth = 10n ** 17n
    expect((await paths(standby.api, tenth)).status).toBe(200)
    const serviceBefore = await nodes.udcBalance(SERVICE)
    faulty.swallowRawTransactions(true)
    await planUserDepositWithdraw(a.chain, a.queue, { userDeposit: net.deployment.contracts.UserDeposit.address, amount: UDC_DEPOSIT - tenth })
    await devnet.mine({ blocks: 1 })
    await eventually(() => expect(faulty.stats.swallowed.length).toBeGreaterThan(0), 20_000)
    await eventually(async () => expect((await request('GET', `${standby.api}/status`)).body.ious).toMatchObject({ claiming: 1 }))
    leader.sluice.child.kill('SIGKILL')
    expect(await leader.sluice.exited).toEqual({ code: null, signal: 'SIGKILL' })
    const tKilled = performance.now()

    // The other takes the lease over, sends the journaled claim itself, and marks the session claimed.
    await standby.sluice.waitForOutput(/took over the pathfinding service's lease/, 2 * LEASE_MS + 1_000)
    const tTakenOver = performance.now()
    await eventually(async () => expect((await request('GET', `${standby.api}/status`)).body.ious).toMatchObject({ claiming: 0, claimed: 1 }), 30_000)
    const tClaimed = performance.now()
    expect(await nodes.udcBalance(SERVICE)).toBe(serviceBefore + tenth)
    await devnet.mine({ blocks: 3 })
    const claims = await devnet.getContractEvents({ address: net.deployment.contracts.OneToN.address, abi: OneToN.abi, eventName: 'Claimed', fromBlock: 0n })
    expect(claims).toHaveLength(1)
    // The very transaction the leader journaled (its nonce: the one its endpoint swallowed), sent again by the new
    // leader, perhaps at a higher fee (another hash).
    const journaled = parseTransaction(faulty.stats.swallowedRaw[0]!)
    expect((await devnet.getTransaction({ hash: claims[0]!.transactionHash })).nonce).toBe(journaled.nonce)
    expect(claims[0]!.args).toMatchObject({ sender: A, receiver: SERVICE, transferred: tenth })
    expect((await request('GET', `${standby.api}/status`)).body).toMatchObject({ instance: { leading: true } })

    standby.sluice.child.kill('SIGTERM')
    expect(await standby.sluice.exited).toEqual({ code: 0, signal: null })
    console.log(
      `pathfinding on PostgreSQL: both started ${(tStarted - t0).toFixed(0)} ms, routes and IOUs ${(tAnswered - tStarted).toFixed(0)} ms, taken over ${(tTakenOver - tKilled).toFixed(0)} ms after the kill (lease ${LEASE_MS} ms), claimed ${(tClaimed - tKilled).toFixed(0)} ms after the kill`,
    )
  }, 300_000)
})
