import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import '../../src/transport/libp2p/nodePolyfills.ts'
import { parseTransaction, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient } from '../../src/chain/chainClient.ts'
import { readChannelInfo } from '../../src/chain/reads.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'
import { createTransactionQueue } from '../../src/chain/transactionQueue.ts'
import { sendProtocolTransaction } from '../../src/chain/transactions.ts'
import { MonitoringService, TokenNetwork } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import { requestMonitoringAckId } from '../../src/protocol/monitoringRequest.ts'
import type { Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import type { Relay } from '../../src/transport/libp2p/relay.ts'
import type { Devnet } from '../integration/support/devnet.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startFaultyRpc, type FaultyRpc } from '../support/faultyRpc.ts'
import { partner, partnerKey, requester, requesterKey, serviceAddress, serviceKey, startMonitoredChannel } from '../support/monitoredChannel.ts'
import { line, monitoringRequest, partnerProof, type ProofOf } from '../support/monitoring.ts'
import { startPostgres, type TestPostgres } from '../support/postgres.ts'
import { serviceFlags, startServiceProcess } from '../support/serviceProcess.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { call } from './devnetProcess.ts'
import type { SluiceProcess } from './sluiceProcess.ts'

/**
 * Two `sluice monitor` processes on one PostgreSQL database (docs/decisions/0077): both answer the API from the shared
 * store; the one holding the lease takes requests and carries out the duties. The leader is killed with SIGKILL in
 * the middle of a duty (its `monitor` transaction signed and journaled, its broadcast swallowed by its endpoint): the
 * other takes over within twice the lease, sends that very transaction inside the settle window, and claims the
 * reward; the MonitoringService contract's events show each done exactly once.
 */

const SETTLE_TIMEOUT = 40n
const REWARD = 7n * 10n ** 17n
const LEASE_MS = 2_000
const tempDir = tempDirs('sluice-monitors-')

let net: Devnet
let relay: Relay
let postgres: TestPostgres
let faulty: FaultyRpc
let deploymentFile: string
let channel: ProofOf
let requesterTransport: Libp2pTransport
let acknowledged: Set<bigint>
let stopChannel: (() => Promise<void>) | undefined
const started: SluiceProcess[] = []

beforeAll(async () => {
  // Each kept as soon as it is up, for afterAll to stop even if the other fails.
  await Promise.all([
    startMonitoredChannel({ settleTimeout: SETTLE_TIMEOUT, dir: tempDir() }).then((m) => {
      ;({ net, relay, deploymentFile, channel, requesterTransport, acknowledged, stop: stopChannel } = m)
    }),
    startPostgres().then((p) => (postgres = p)),
  ])
  faulty = await startFaultyRpc(net.anvil.rpcUrl, { failRate: 0 })
}, 120_000)

afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await faulty?.close()
  await stopChannel?.()
  await postgres?.stop()
})

/** An instance on `database`, following the chain through `rpcUrl`. */
async function startMonitor(database: string, rpcUrl: string) {
  const flags = serviceFlags({ rpcUrl, deploymentFile, key: serviceKey, dataDir: 'unused', relay: relay.multiaddrs[0]!, confirmations: 1 })
  const args = [
    ...flags.filter((_, i) => flags[i] !== '--data-dir' && flags[i - 1] !== '--data-dir'),
    '--database',
    database,
    '--lease-seconds',
    String(LEASE_MS / 1000),
    '--metrics',
    '127.0.0.1:0',
  ]
  return startServiceProcess(['monitor', ...args], tempDir(), started)
}

const get = async (api: string, path: string) => (await call('GET', `${api}${path}`)).body

describe('two sluice monitor instances on one database', () => {
  test('both answer from the shared store; the leader killed in the middle of its monitor call, the other sends it inside the window and claims, each once', async () => {
    const t0 = performance.now()
    const database = await postgres.createDatabase('monitor')
    // The first leads (its transactions through an endpoint that can swallow them), the second stands by.
    const a = await startMonitor(database, faulty.url)
    const b = await startMonitor(database, net.anvil.rpcUrl)
    expect(b.sluice.stdout()).toContain('Standby: another instance holds the lease')
    const [statusA, statusB] = [await get(a.api, '/status'), await get(b.api, '/status')]
    expect(statusA).toMatchObject({ instance: { leading: true }, registration: { registered: true } })
    expect(statusB).toMatchObject({ instance: { leading: false }, registration: null })
    // What an operator's alert counts: one holder of the lease among the instances.
    const leaseHeld = async (instance: { sluice: SluiceProcess }) =>
      sampleValue(await scrape(metricsUrlOf(instance.sluice.stdout())), 'sluice_lease_held', { lease: 'monitor' })
    expect([await leaseHeld(a), await leaseHeld(b)]).toEqual([1, 0])
    const tStarted = performance.now()

    // A request reaches the leader over the relay; the standby shows it too, from the database.
    const request = monitoringRequest(
      requesterKey,
      partnerProof(partnerKey, channel, { nonce: 6n, transferred: 18n }),
      net.deployment.contracts.MonitoringService.address,
      REWARD,
    )
    const older = monitoringRequest(
      requesterKey,
      partnerProof(partnerKey, channel, { nonce: 3n, transferred: 9n }),
      net.deployment.contracts.MonitoringService.address,
      REWARD,
    )
    await eventually(async () => {
      await requesterTransport.send(serviceAddress, [line(request)]).catch(() => {})
      expect(acknowledged.has(requestMonitoringAckId(request))).toBe(true)
    }, 20_000)
    await eventually(async () => expect((await get(b.api, '/channels'))[0]?.requests[0]).toMatchObject({ requester, nonce: '6' }))

    // The partner closes and the older proof is submitted: the chain holds nonce 3, the service 6.
    const p = { chain: await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: partnerKey, pollingInterval: 20 }) }
    await sendProtocolTransaction(
      { type: 'close', tokenNetwork: net.tokenNetwork, channelId: channel.channelId, partner: requester, balanceProof: null },
      { signer: p.chain, secretRegistry: net.deployment.contracts.SecretRegistry.address, queue: createTransactionQueue(p.chain) },
    )
    const devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[4] as Hex })
    const bp = older.balance_proof
    const updated = await devnet.writeContract({
      address: net.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'updateNonClosingBalanceProof',
      args: [channel.channelId, partner, requester, bp.balance_hash, bp.nonce, bp.additional_hash, bp.signature, older.non_closing_signature],
    })
    expect((await waitForReceipt(devnet, updated, { timeout: 20_000 })).status).toBe('success')
    const { settleBlockNumber } = await readChannelInfo(p.chain, {
      tokenNetwork: net.tokenNetwork,
      channelId: channel.channelId,
      participant1: partner,
      participant2: requester,
    })
    const firstAllowed = await devnet.readContract({
      address: net.deployment.contracts.MonitoringService.address,
      abi: MonitoringService.abi,
      functionName: 'firstBlockAllowedToMonitorChannel',
      args: [net.tokenNetwork, channel.channelId, partner, requester, serviceAddress],
    })

    // From its first allowed block the leader signs and journals its monitor call; its endpoint swallows the
    // broadcast. The standby sees the call sent (its hash) in the shared store: the leader is killed there.
    faulty.swallowRawTransactions(true)
    const head = await devnet.getBlockNumber()
    if (firstAllowed - 1n > head) await devnet.mine({ blocks: Number(firstAllowed - 1n - head) })
    let sent: { transaction_hash: Hex } | undefined
    for (;;) {
      const calls = await get(b.api, '/monitor_calls')
      if (calls[0]?.status === 'sent') {
        sent = calls[0]
        break
      }
      if ((await devnet.getBlockNumber()) >= settleBlockNumber - 2n)
        throw new Error(
          `no monitor call sent by block ${settleBlockNumber - 2n} (first allowed ${firstAllowed}, head ${head}); ${JSON.stringify(calls)}\n${a.sluice.stdout()}\n${a.sluice.stderr()}`,
        )
      await devnet.mine({ blocks: 1 })
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(faulty.stats.swallowed).toContain(sent!.transaction_hash)
    a.sluice.child.kill('SIGKILL')
    expect(await a.sluice.exited).toEqual({ code: null, signal: 'SIGKILL' })
    const tKilled = performance.now()

    // The standby takes the lease over (within twice its duration), sends the journaled transaction itself, and the
    // call is done before the settle block: no block is mined meanwhile but anvil's own for that transaction.
    await b.sluice.waitForOutput(/took over the monitoring service's lease/, 2 * LEASE_MS + 1_000)
    const tTakenOver = performance.now()
    let monitored: any
    await eventually(async () => {
      monitored = (await get(b.api, '/monitor_calls'))[0]
      expect(monitored).toMatchObject({ status: 'done', nonce: '6', reward: { status: 'due' } })
    }, 20_000)
    // The very transaction the leader journaled (its nonce), sent again by the new leader, perhaps at a higher fee.
    const journaled = parseTransaction(faulty.stats.swallowedRaw[faulty.stats.swallowed.indexOf(sent!.transaction_hash)]!)
    expect((await devnet.getTransaction({ hash: monitored.transaction_hash })).nonce).toBe(journaled.nonce)
    expect(BigInt(monitored.block_number)).toBeLessThanOrEqual(settleBlockNumber)
    expect(await get(b.api, '/status')).toMatchObject({ instance: { leading: true } })
    expect(await leaseHeld(b)).toBe(1)
    const tMonitored = performance.now()

    // Settlement, then the new leader claims the reward.
    await devnet.mine({ blocks: Number(settleBlockNumber - (await devnet.getBlockNumber())) + 1 })
    await devnet.writeContract({
      address: net.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'settleChannel',
      args: [channel.channelId, requester, 0n, 0n, LOCKSROOT_OF_NO_LOCKS, partner, 18n, 0n, LOCKSROOT_OF_NO_LOCKS],
    })
    await devnet.mine({ blocks: 2 })
    await eventually(async () => expect((await get(b.api, '/monitor_calls'))[0].reward).toMatchObject({ status: 'claimed', amount: String(REWARD) }), 20_000)

    // Each duty once on the chain: one NewBalanceProofReceived, one RewardClaimed, both for this service.
    await devnet.mine({ blocks: 3 })
    const events = await devnet.getContractEvents({ address: net.deployment.contracts.MonitoringService.address, abi: MonitoringService.abi, fromBlock: 0n })
    const named = (name: string) => events.filter((e) => e.eventName === name)
    expect(named('NewBalanceProofReceived')).toHaveLength(1)
    expect(named('NewBalanceProofReceived')[0]!.args).toMatchObject({ ms_address: serviceAddress, nonce: 6n })
    expect(named('RewardClaimed')).toHaveLength(1)
    expect(named('RewardClaimed')[0]!.args).toMatchObject({ ms_address: serviceAddress, amount: REWARD })

    b.sluice.child.kill('SIGTERM')
    expect(await b.sluice.exited).toEqual({ code: 0, signal: null })
    console.log(
      `monitors on PostgreSQL: both started ${(tStarted - t0).toFixed(0)} ms, taken over ${(tTakenOver - tKilled).toFixed(0)} ms after the kill (lease ${LEASE_MS} ms), monitored ${(tMonitored - tKilled).toFixed(0)} ms after the kill`,
    )
  })
})
