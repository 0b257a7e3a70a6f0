// The monitoring service (sluice monitor): how many RequestMonitoring one service checks, and validates and stores.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createChainClient } from '../src/chain/chainClient.ts'
import { mintTokens } from '../src/chain/erc20.ts'
import { openChannel } from '../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue, type TransactionQueue } from '../src/chain/transactionQueue.ts'
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { checkRequest } from '../src/monitor/requestCheck.ts'
import { createMonitoringService } from '../src/monitor/service.ts'
import { decodeMessage } from '../src/protocol/messages/sign.ts'
import { requestMonitoringAckId } from '../src/protocol/monitoringRequest.ts'
import { createBroadcastChannelTransport } from '../src/transport/broadcastChannelTransport.ts'
import type { Transport } from '../src/transport/transport.ts'
import { startDevnet } from '../test/integration/support/devnet.ts'
import { line, monitoringRequest, partnerProof, type ProofOf } from '../test/support/monitoring.ts'
import { opsPerSecond, percentile, repeat, spread } from './measure.ts'

const PARTNERS = 5
const REQUESTERS = 20
const ROUNDS = 30

/**
 * Where the service keeps its store: LevelDB (the default), or a PostgreSQL database shared by `instances` services
 * with the same key (docs/decisions/0077: the first leads and takes the requests; a second follows the database and
 * stands by, as an operator's second instance would).
 */
export type MonitorStoreChoice = { database: string; instances: 1 | 2 } | undefined

export async function benchMonitor(storeChoice?: MonitorStoreChoice): Promise<Record<string, string>> {
  const curve = await loadNativeSecp256k1()
  const rows: Record<string, string> = {}
  const partnerKeys = anvilKeys.slice(3, 3 + PARTNERS) as Hex[]
  const serviceKey = anvilKeys[2] as Hex
  const net = await startDevnet([])
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-monitor-'))
  const transports: Transport[] = []
  // Stopped before the chain: a queue follows what it sent for a few blocks after it is mined (reorgs), and against a
  // stopped anvil it would try again forever, keeping the bench's process alive after its table.
  const queues: TransactionQueue[] = []
  try {
    const rpcUrl = net.anvil.rpcUrl
    const monitoringService = net.deployment.contracts.MonitoringService.address
    const chainId = BigInt(net.deployment.chainId)
    const requesterKeys = Array.from({ length: REQUESTERS }, () => generatePrivateKey())
    const requesters = requesterKeys.map((k) => privateKeyToAddress(k))

    // Every partner opens a channel with every requester: 100 channels.
    const channels: { partnerKey: Hex; requesterKey: Hex; at: ProofOf }[] = []
    await Promise.all(
      partnerKeys.map(async (partnerKey) => {
        const chain = await createChainClient({ rpcUrl, privateKey: partnerKey, pollingInterval: 10 })
        const queue = createTransactionQueue(chain)
        queues.push(queue)
        for (const [i, requester] of requesters.entries()) {
          const { channelId } = await openChannel(chain, queue, { tokenNetwork: net.tokenNetwork, partner: requester, settleTimeout: 40n })
          channels.push({ partnerKey, requesterKey: requesterKeys[i]!, at: { tokenNetwork: net.tokenNetwork, chainId, channelId } })
        }
      }),
    )
    const deployer = await createChainClient({ rpcUrl, privateKey: anvilKeys[0] as Hex, pollingInterval: 10 })
    const deployerQueue = createTransactionQueue(deployer)
    queues.push(deployerQueue)
    await mintTokens(deployer, deployerQueue, {
      token: net.deployment.serviceToken,
      amount: 10n ** 22n,
      to: privateKeyToAddress(serviceKey),
    })

    // Signed beforehand: what is measured is the service, not the requesters. Reward 0: no UserDeposit needed.
    const rounds = Array.from({ length: ROUNDS + 1 }, (_, r) =>
      channels.map((c) => ({
        from: privateKeyToAddress(c.requesterKey),
        request: monitoringRequest(
          c.requesterKey,
          partnerProof(c.partnerKey, c.at, { nonce: BigInt(r + 1), transferred: BigInt(r + 1) }),
          monitoringService,
          0n,
        ),
      })),
    )

    const sample = rounds[0]!
    rows['RequestMonitoring checked per second (fields, the peer, three signature recoveries; pure, one core, native secp256k1)'] = spread(
      await repeat(3, async () =>
        opsPerSecond((i) => {
          const { request, from } = sample[i % sample.length]!
          if (!checkRequest(request, from, { chainId, monitoringService, minReward: 0n, curve }).ok) throw new Error('refused')
        }),
      ),
    )

    const channelName = `sluice-bench-monitor-${Date.now()}`
    const makeService = () =>
      createMonitoringService({
        rpc: rpcUrl,
        deployment: net.deployment,
        key: serviceKey,
        secp256k1: curve,
        ...(storeChoice ? { database: { url: storeChoice.database } } : { dataDir }),
        transport: (address) => createBroadcastChannelTransport({ address, channelName }),
        confirmations: 0,
        pollingInterval: 1_000,
        limits: { perPeerBurst: 1e9, perPeerPerSecond: 1e9 },
      })
    const service = await makeService()
    await service.start()
    const standbys = []
    if (storeChoice) {
      const deadline = performance.now() + 30_000
      while (!service.status().instance?.leading) {
        if (performance.now() > deadline) throw new Error('the first monitoring service instance did not lead within 30 s')
        await new Promise((r) => setTimeout(r, 20))
      }
      if (storeChoice.instances === 2) {
        const second = await makeService()
        await second.start()
        if (second.status().instance?.leading !== false) throw new Error('the second monitoring service instance leads too')
        standbys.push(second)
      }
    }
    const waiting = new Map<bigint, () => void>()
    const clients = new Map<string, Transport>()
    for (const address of requesters) {
      const t = createBroadcastChannelTransport({ address, channelName })
      transports.push(t)
      clients.set(address.toLowerCase(), t)
      await t.start(async (lines) => {
        for (const text of lines) {
          const { message } = await decodeMessage(curve, text)
          if (message.type === 'Delivered') waiting.get(message.delivered_message_identifier)?.()
        }
      })
    }
    /** Sends a round (one request per channel, all at once) and resolves with each one's time to its acknowledgement. */
    const sendRound = async (round: (typeof rounds)[number]): Promise<number[]> => {
      const started = performance.now()
      const acked = round.map(
        ({ request }) => new Promise<number>((resolve) => waiting.set(requestMonitoringAckId(request), () => resolve(performance.now() - started))),
      )
      const byPeer = new Map<string, string[]>()
      for (const { from, request } of round) byPeer.set(from.toLowerCase(), [...(byPeer.get(from.toLowerCase()) ?? []), line(request)])
      for (const [peer, lines] of byPeer) void clients.get(peer)!.send(privateKeyToAddress(serviceKey) as Address, lines)
      return Promise.all(acked)
    }

    await sendRound(rounds[0]!) // warm-up: the token network check is cached from here on
    const latencies: number[] = []
    const timedRounds = rounds.slice(1)
    const perRun = Math.floor(timedRounds.length / 3)
    const rates = await repeat(3, async (run) => {
      const t0 = performance.now()
      for (const round of timedRounds.slice(run * perRun, (run + 1) * perRun)) latencies.push(...(await sendRound(round)))
      return (perRun * channels.length) / ((performance.now() - t0) / 1000)
    })
    const where = storeChoice
      ? `PostgreSQL group commit (each batch one transaction under the store's advisory lock, the lease checked)${storeChoice.instances === 2 ? ', a second instance following the database' : ''}`
      : 'LevelDB group commit with sync writes'
    rows[
      `RequestMonitoring validated, stored and acknowledged per second (one service; ${channels.length} channels of ${REQUESTERS} requesters, one request per channel in flight: 3 eth_calls batched to anvil, ${where}, Delivered signed and returned over a BroadcastChannel)`
    ] = spread(rates)
    rows['  time to the acknowledgement, p50 / p99 (ms, 100 at once)'] = `${percentile(latencies, 50).toFixed(1)} / ${percentile(latencies, 99).toFixed(1)}`

    // A flood of stale requests (an older round again, 20 times, each requester's lines in one batch): refused from
    // memory, before any signature recovery, chain read or write.
    const REPEAT = 20
    const stale = new Map<string, string[]>()
    for (const { from, request } of rounds[ROUNDS - 1]!) stale.set(from.toLowerCase(), [...(stale.get(from.toLowerCase()) ?? []), line(request)])
    const floods = await repeat(3, async () => {
      const before = service.status().requests.refused.stale ?? 0
      const t1 = performance.now()
      for (const [peer, lines] of stale) void clients.get(peer)!.send(privateKeyToAddress(serviceKey), Array.from({ length: REPEAT }, () => lines).flat())
      while ((service.status().requests.refused.stale ?? 0) - before < channels.length * REPEAT) await new Promise((r) => setTimeout(r, 5))
      return (channels.length * REPEAT) / ((performance.now() - t1) / 1000)
    })
    rows["stale requests refused per second (a replaying peer's flood, in batches: no signature recovery, chain read or write)"] = spread(floods)
    for (const standby of standbys) await standby.stop()
    await service.stop()
  } finally {
    await Promise.all(transports.map((t) => t.stop().catch(() => {})))
    await Promise.all(queues.map((q) => q.stop().catch(() => {})))
    await net.stop()
    await rm(dataDir, { recursive: true, force: true })
    await rm(net.dataDir, { recursive: true, force: true })
  }
  return rows
}
