import '../../src/transport/libp2p/nodePolyfills.ts'
import type { Address, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient } from '../../src/chain/chainClient.ts'
import { readChannelInfo, readParticipantInfo } from '../../src/chain/reads.ts'
import { createTransactionQueue } from '../../src/chain/transactionQueue.ts'
import { sendProtocolTransaction } from '../../src/chain/transactions.ts'
import { MonitoringService, TokenNetwork, UserDeposit } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import type { RequestMonitoring, Signed } from '../../src/protocol/messages/types.ts'
import { packMessage } from '../../src/protocol/messages/pack.ts'
import { requestMonitoringAckId } from '../../src/protocol/monitoringRequest.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import type { Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import type { Relay } from '../../src/transport/libp2p/relay.ts'
import type { Devnet } from '../integration/support/devnet.ts'
import { eventually } from '../integration/support/eventually.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'
import { line, mineUntil, monitoringRequest, partnerProof, type ProofOf } from '../support/monitoring.ts'
import { partner, partnerKey, requester, requesterKey, serviceAddress, serviceKey, startMonitoredChannel } from '../support/monitoredChannel.ts'
import { serviceFlags, startServiceProcess } from '../support/serviceProcess.ts'
import { rawRequest } from '../api/support/rawHttp.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { call } from './devnetProcess.ts'
import { logMessages, runSluice, type SluiceProcess } from './sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

/**
 * `sluice monitor` as a process, on anvil, with a relay: a requester (this test, with its own libp2p transport and
 * key) sends RequestMonitoring for a real channel with its partner, signed with their real keys. The service
 * acknowledges what it holds, refuses and counts the rest, survives kill -9, calls monitor in its window when the
 * partner closes with an older proof, and claims its reward from the requester's UserDeposit.
 */

const SETTLE_TIMEOUT = 40n
const REWARD = 7n * 10n ** 17n
const tempDir = tempDirs('sluice-monitor-')

let net: Devnet
let relay: Relay
let deploymentFile: string
let dataDir: string
let channel: ProofOf
let requesterTransport: Libp2pTransport
/** Ids of the Delivered the service sent the requester. */
let acknowledged: Set<bigint>
let stopChannel: (() => Promise<void>) | undefined
const started: SluiceProcess[] = []

beforeAll(async () => {
  const monitored = await startMonitoredChannel({ settleTimeout: SETTLE_TIMEOUT, dir: tempDir() })
  ;({ net, relay, deploymentFile, channel, requesterTransport, acknowledged, stop: stopChannel } = monitored)
  dataDir = tempDir()
}, 120_000)

afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await stopChannel?.()
})

async function startMonitor(): Promise<{ sluice: SluiceProcess; api: string; metrics: () => ReturnType<typeof scrape> }> {
  const flags = serviceFlags({ rpcUrl: net.anvil.rpcUrl, deploymentFile, key: serviceKey, dataDir, relay: relay.multiaddrs[0]!, confirmations: 1 })
  const process_ = await startServiceProcess(['monitor', ...flags, '--metrics', '127.0.0.1:0'], tempDir(), started)
  const url = metricsUrlOf(process_.sluice.stdout())
  return { ...process_, metrics: () => scrape(url) }
}

/** Sends a line to the service as the requester, again and again (as a node resends), until `until` holds or 15 s pass. */
async function sendUntil(text: string, until: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000
  for (;;) {
    await requesterTransport.send(serviceAddress, [text]).catch(() => {})
    for (let i = 0; i < 10; i++) {
      if (await until()) return
      await new Promise((r) => setTimeout(r, 30))
    }
    if (Date.now() > deadline) throw new Error('the service did not answer within 15 s')
  }
}

/** The requester's request for its partner's proof at `nonce` (the partner has sent `3 * nonce` tokens by then). */
const request = (nonce: bigint) =>
  monitoringRequest(
    requesterKey,
    partnerProof(partnerKey, channel, { nonce, transferred: 3n * nonce }),
    net.deployment.contracts.MonitoringService.address,
    REWARD,
  )
const status = async (api: string) => (await call('GET', `${api}/status`)).body

describe('sluice monitor', () => {
  test('a bad flag or a missing one: one line, exit code 2', async () => {
    const missing = await runSluice(['monitor', '--rpc', 'http://127.0.0.1:8545'], tempDir())
    expect(missing).toMatchObject({ code: 2, stdout: '' })
    expect(missing.stderr).toBe('sluice monitor: --deployment is required (see sluice monitor --help)\n')
    const exposed = await runSluice(
      ['monitor', '--rpc', 'http://x', '--deployment', 'd', '--data-dir', 'x', '--key', serviceKey, '--api', '0.0.0.0:6001'],
      tempDir(),
    )
    expect(exposed.code).toBe(2)
    expect(exposed.stderr).toMatch(/^sluice monitor: --api 0\.0\.0\.0 is not a loopback address/)
    const metrics = await runSluice(
      ['monitor', '--rpc', 'http://x', '--deployment', 'd', '--data-dir', 'x', '--key', serviceKey, '--metrics', ':9100'],
      tempDir(),
    )
    expect(metrics).toMatchObject({ code: 2, stdout: '' })
    expect(metrics.stderr).toBe('sluice monitor: --metrics must be HOST:PORT (port 0 picks a free one), got ":9100" (see sluice monitor --help)\n')
  })

  test('--help shows --metrics', async () => {
    const { code, stdout } = await runSluice(['monitor', '--help'], tempDir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/^ +--metrics <HOST:PORT> +serve Prometheus metrics at http:\/\/HOST:PORT\/metrics/m)
  })

  test('acknowledges a valid request, refuses and counts forged and stale ones, keeps it across kill -9, monitors in the window and claims its reward', async () => {
    const t0 = performance.now()
    let monitor = await startMonitor()
    const registered = await status(monitor.api)
    expect(registered).toMatchObject({
      address: serviceAddress,
      monitoring_service_address: net.deployment.contracts.MonitoringService.address,
      registration: { registered: true, url: monitor.api.replace(/\/api\/v1$/, '') },
      requests: { accepted: 0, acknowledged_again: 0, refused: {} },
    })
    const tStarted = performance.now()

    // Who may call: the rules of sluice serve (decision 0025); read only; bad input is a 4xx.
    const raw = (path: string, init: { method?: string; headers?: Record<string, string> } = {}) => rawRequest(`${monitor.api}${path}`, init)
    expect(await raw('/status', { headers: { host: `attacker.example:${new URL(monitor.api).port}` } })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN_HOST' },
    })
    expect(await raw('/channels', { headers: { origin: 'https://attacker.example' } })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN_ORIGIN' } })
    expect(await raw('/status', { method: 'POST' })).toMatchObject({ status: 405, body: { code: 'METHOD_NOT_ALLOWED' } })
    expect(await raw('/shutdown', { method: 'POST' })).toMatchObject({ status: 404, body: { errors: 'invalid endpoint' } })
    expect(await raw('/channels?limit=0')).toMatchObject({ status: 400, body: { code: 'INVALID_REQUEST' } })
    expect(await raw('/monitor_calls?page=2')).toMatchObject({ status: 400, body: { code: 'INVALID_REQUEST' } })

    // Acknowledged: a Delivered with the id derived from the request, once the service holds it.
    const older = request(3n)
    await sendUntil(line(older), () => acknowledged.has(requestMonitoringAckId(older)))
    const tFirstAck = performance.now()
    const newer = request(5n)
    await sendUntil(line(newer), () => acknowledged.has(requestMonitoringAckId(newer)))

    // Refused and counted, never acknowledged: a newer request whose reward proof the partner signed, an older request,
    // and another request under the nonce held. The request held, sent again, is acknowledged again.
    const forged: Signed<RequestMonitoring> = { ...request(6n), reward_amount: 1n }
    const forgedText = line({ ...forged, signature: signPackedSync(jsSecp256k1, partnerKey, packMessage(forged)) })
    const sameNonce = monitoringRequest(requesterKey, newer.balance_proof, net.deployment.contracts.MonitoringService.address, REWARD + 1n)
    for (const text of [forgedText, line(older), line(sameNonce), line(newer)]) await requesterTransport.send(serviceAddress, [text])
    await eventually(async () => {
      const { acknowledged_again, ...counted } = (await status(monitor.api)).requests
      expect(counted).toEqual({ accepted: 2, refused: { bad_reward_signature: 1, stale: 2 }, refused_total: 3 })
      // The held request sent again; sendUntil's own resends before an acknowledgement came (a busy machine) add more.
      expect(acknowledged_again).toBeGreaterThanOrEqual(1)
    })
    expect(acknowledged.has(requestMonitoringAckId(sameNonce))).toBe(false)
    // Its metrics say the same (docs/decisions/0078), and how it follows the chain.
    const counted = await monitor.metrics()
    expect(sampleValue(counted, 'sluice_monitor_requests_total', { outcome: 'accepted' })).toBe(2)
    expect(sampleValue(counted, 'sluice_monitor_requests_total', { outcome: 'refused_stale' })).toBe(2)
    expect(sampleValue(counted, 'sluice_monitor_requests_total', { outcome: 'refused_bad_reward_signature' })).toBe(1)
    expect(sampleValue(counted, 'sluice_monitor_requests_held')).toBe(1)
    expect(sampleValue(counted, 'sluice_monitor_duties_due', { kind: 'monitor' })).toBe(0)
    expect(sampleValue(counted, 'sluice_chain_synced_block')).toBeGreaterThan(0)
    expect(sampleValue(counted, 'sluice_chain_sync_lag_blocks')).toBeLessThanOrEqual(2)
    expect(sampleValue(counted, 'sluice_transactions_pending')).toBe(0)
    expect(sampleValue(counted, 'sluice_info', { command: 'monitor' })).toBe(1)
    const held = (await call('GET', `${monitor.api}/channels`)).body
    expect(held).toEqual([
      expect.objectContaining({
        token_network_address: net.tokenNetwork,
        channel_identifier: String(channel.channelId),
        state: 'opened',
        requests: [expect.objectContaining({ requester, partner, nonce: '5', reward_amount: String(REWARD), balance_hash: newer.balance_proof.balance_hash })],
      }),
    ])

    // kill -9 right after an acknowledgement: the request is on disk, and the restarted service holds it.
    const latest = request(6n)
    await sendUntil(line(latest), () => acknowledged.has(requestMonitoringAckId(latest)))
    monitor.sluice.child.kill('SIGKILL')
    expect(await monitor.sluice.exited).toEqual({ code: null, signal: 'SIGKILL' })
    monitor = await startMonitor()
    expect((await call('GET', `${monitor.api}/channels`)).body[0].requests[0]).toMatchObject({ nonce: '6' })
    const tRestarted = performance.now()

    // The partner closes; someone submits an older proof of the partner's (nonce 3, with the requester's
    // counter-signature from its first request): the chain holds nonce 3, the service holds 6.
    const p = { chain: await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: partnerKey, pollingInterval: 20 }) }
    const queue = createTransactionQueue(p.chain)
    const closed = await sendProtocolTransaction(
      { type: 'close', tokenNetwork: net.tokenNetwork, channelId: channel.channelId, partner: requester, balanceProof: null },
      { signer: p.chain, secretRegistry: net.deployment.contracts.SecretRegistry.address, queue },
    )
    const devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[4] as Hex })
    const bp = older.balance_proof
    const updated = await devnet.writeContract({
      address: net.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'updateNonClosingBalanceProof',
      args: [channel.channelId, partner, requester, bp.balance_hash, bp.nonce, bp.additional_hash, bp.signature, older.non_closing_signature],
    })
    // The hash comes back when the transaction is sent; on a busy machine anvil mines it a moment later.
    expect((await waitForReceipt(devnet, updated, { timeout: 20_000 })).status).toBe('success')
    const onChain = () =>
      readParticipantInfo(p.chain, { tokenNetwork: net.tokenNetwork, channelId: channel.channelId, participant: partner, partner: requester })
    expect((await onChain()).nonce).toBe(3n)
    const { settleBlockNumber } = await readChannelInfo(p.chain, {
      tokenNetwork: net.tokenNetwork,
      channelId: channel.channelId,
      participant1: partner,
      participant2: requester,
    })
    expect(settleBlockNumber).toBe(closed.receipt.blockNumber + SETTLE_TIMEOUT)
    const firstAllowed = await devnet.readContract({
      address: net.deployment.contracts.MonitoringService.address,
      abi: MonitoringService.abi,
      functionName: 'firstBlockAllowedToMonitorChannel',
      args: [net.tokenNetwork, channel.channelId, partner, requester, serviceAddress],
    })

    // The close is confirmed (one block on top), the service has its duty; kill -9 again: it resumes the duty.
    await devnet.mine({ blocks: 1 })
    await eventually(async () =>
      expect((await call('GET', `${monitor.api}/channels`)).body[0]).toMatchObject({ state: 'closed', duties: [expect.objectContaining({ requester })] }),
    )
    // A duty due (the monitor call waits for its first allowed block), none done yet.
    const due = await monitor.metrics()
    expect(sampleValue(due, 'sluice_monitor_duties_due', { kind: 'monitor' })).toBe(1)
    expect(sampleValue(due, 'sluice_monitor_duties_done_total', { kind: 'monitor' })).toBe(0)
    monitor.sluice.child.kill('SIGKILL')
    await monitor.sluice.exited
    monitor = await startMonitor()

    // The service calls monitor from its first allowed block on (the blocks before it mined in one step), before the
    // settle block.
    let calls: any[] = []
    const monitoredYet = async () => {
      calls = (await call('GET', `${monitor.api}/monitor_calls`)).body
      return calls[0]?.status === 'done'
    }
    await mineUntil(devnet, monitoredYet, settleBlockNumber, firstAllowed)
    const monitored = calls[0]
    expect(monitored).toMatchObject({
      non_closing_participant: requester,
      closing_participant: partner,
      nonce: '6',
      reward_amount: String(REWARD),
      reward: { status: 'due' },
    })
    expect(BigInt(monitored.block_number)).toBeGreaterThanOrEqual(firstAllowed)
    expect(BigInt(monitored.block_number)).toBeLessThanOrEqual(settleBlockNumber)
    // The chain shows the newer proof.
    expect(await onChain()).toMatchObject({ nonce: 6n, balanceHash: latest.balance_proof.balance_hash })
    const monitoredMetrics = await monitor.metrics()
    expect(sampleValue(monitoredMetrics, 'sluice_monitor_duties_done_total', { kind: 'monitor' })).toBe(1)
    expect(sampleValue(monitoredMetrics, 'sluice_monitor_duties_due', { kind: 'monitor' })).toBe(0)
    expect(sampleValue(monitoredMetrics, 'sluice_monitor_duties_due', { kind: 'claimReward' })).toBe(1)
    const tMonitored = performance.now()

    // Settlement: the partner sent 18 tokens (nonce 6), the requester nothing the chain knows of.
    const udc = (who: Address) =>
      devnet.readContract({ address: net.deployment.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'balances', args: [who] })
    const [requesterBefore, serviceBefore] = await Promise.all([udc(requester), udc(serviceAddress)])
    await devnet.mine({ blocks: Number(settleBlockNumber - (await devnet.getBlockNumber())) + 1 })
    await devnet.writeContract({
      address: net.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'settleChannel',
      args: [channel.channelId, requester, 0n, 0n, LOCKSROOT_OF_NO_LOCKS, partner, 18n, 0n, LOCKSROOT_OF_NO_LOCKS],
    })
    await devnet.mine({ blocks: 2 })
    await eventually(
      async () => expect((await call('GET', `${monitor.api}/monitor_calls`)).body[0].reward).toMatchObject({ status: 'claimed', amount: String(REWARD) }),
      20_000,
    )
    expect(await udc(requester)).toBe(requesterBefore - REWARD)
    expect(await udc(serviceAddress)).toBe(serviceBefore + REWARD)
    // The claim reads the settled channel from the chain itself; the watch drops the requests when it applies the
    // ChannelSettled event at its next sync, which under load comes a moment after the claim is mined.
    await eventually(async () => {
      const final = await status(monitor.api)
      expect(final.duties).toEqual({ monitor: { done: 1 }, claim: { claimed: 1 }, rewards_claimed: String(REWARD) })
      expect(final.watching).toEqual({ channels: 0, requests: 0 })
    }, 20_000)
    const claimedMetrics = await monitor.metrics()
    expect(sampleValue(claimedMetrics, 'sluice_monitor_duties_done_total', { kind: 'claimReward' })).toBe(1)
    expect(sampleValue(claimedMetrics, 'sluice_monitor_duties_due', { kind: 'claimReward' })).toBe(0)
    const tClaimed = performance.now()

    monitor.sluice.child.kill('SIGTERM')
    expect(await monitor.sluice.exited).toEqual({ code: 0, signal: null })
    expect(logMessages(monitor.sluice.stdout()).slice(-2)).toEqual(['SIGTERM: stopping', 'stopped'])
    console.log(
      `monitor: started and registered ${(tStarted - t0).toFixed(0)} ms, first ack ${(tFirstAck - tStarted).toFixed(0)} ms, restarted ${(tRestarted - tFirstAck).toFixed(0)} ms, monitored ${(tMonitored - tRestarted).toFixed(0)} ms, claimed ${(tClaimed - tMonitored).toFixed(0)} ms`,
    )
  })
})
