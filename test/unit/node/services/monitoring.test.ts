// The node's requests to the monitoring services (src/node/services/monitoring.ts, docs/decisions/0035): which partner
// proofs are asked for (the pure rule), and, between real nodes and a real monitoring service on a private anvil,
// Raiden's reward rule, the newest request replacing an unacknowledged one, resends until the service's Delivered,
// a restart, and the notifications.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient } from '../../../../src/chain/chainClient.ts'
import { mintTokens } from '../../../../src/chain/erc20.ts'
import { createTransactionQueue } from '../../../../src/chain/transactionQueue.ts'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { createMonitoringService, type MonitoringService } from '../../../../src/monitor/service.ts'
import { ensureRegistered } from '../../../../src/monitor/registration.ts'
import { openChannelOnChain } from '../../../../src/node/actions/channels.ts'
import { sendPayment } from '../../../../src/node/actions/payments.ts'
import { depositToServices } from '../../../../src/node/actions/userDeposit.ts'
import { proofsToGuard } from '../../../../src/node/services/monitoring.ts'
import type { SluiceNode } from '../../../../src/node/sluiceNode.ts'
import { ZERO_HASH } from '../../../../src/protocol/balanceProof.ts'
import { channelKey } from '../../../../src/protocol/channel/key.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../../../src/protocol/locks.ts'
import { initialState } from '../../../../src/protocol/state/access.ts'
import type { BalanceProofState, Channel, ChannelEnd, NodeState } from '../../../../src/protocol/state/types.ts'
import { createBroadcastChannelTransport } from '../../../../src/transport/broadcastChannelTransport.ts'
import { startDevnet, startNode, type Devnet } from '../../../integration/support/devnet.ts'
import { eventually } from '../../../integration/support/eventually.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

describe('proofsToGuard: the partner proofs a node asks the services to hold', () => {
  const tokenNetwork: Address = '0x00000000000000000000000000000000000000aa'
  const us: Address = '0x00000000000000000000000000000000000000a1'
  const partner: Address = '0x00000000000000000000000000000000000000b2'
  const proof = (nonce: bigint, over: Partial<BalanceProofState> = {}): BalanceProofState => ({
    nonce,
    transferredAmount: 10n * nonce,
    lockedAmount: 0n,
    locksroot: LOCKSROOT_OF_NO_LOCKS,
    balanceHash: `0x${String(nonce).padStart(64, '1')}`,
    messageHash: `0x${'ee'.repeat(32)}`,
    signature: `0x${'5a'.repeat(65)}`,
    ...over,
  })
  const end = (address: Address, balanceProof: BalanceProofState | null): ChannelEnd => ({
    address,
    deposit: 100n,
    withdrawn: 0n,
    pendingWithdraws: [],
    nonce: balanceProof?.nonce ?? 0n,
    balanceProof,
    locks: [],
  })
  const channel = (id: bigint, partnerProof: BalanceProofState | null, over: Partial<Channel> = {}): Channel => ({
    chainId: 31337n,
    tokenNetwork,
    token: tokenNetwork,
    id,
    partner,
    settleTimeout: 40n,
    revealTimeout: 10n,
    openedBlock: 1n,
    state: 'opened',
    our: end(us, proof(9n)),
    partnerEnd: end(partner, partnerProof),
    ...over,
  })
  const state = (...channels: Channel[]): NodeState => ({
    ...initialState({ address: us, chainId: 31337n, blockNumber: 5n }),
    channels: Object.fromEntries(channels.map((c) => [channelKey(c.tokenNetwork, c.id), c])),
  })

  test("the partner's newest proof of each open channel, newer than the one asked for, with something in it", () => {
    const s = state(
      channel(1n, proof(3n)),
      channel(2n, proof(4n)), // asked for already
      channel(3n, proof(6n)), // newer than what was asked for
      channel(4n, null), // nothing received
      channel(5n, proof(2n, { balanceHash: ZERO_HASH })), // T = L = 0: nothing to protect, the contract refuses it
      channel(6n, proof(2n, { signature: undefined })),
      channel(7n, proof(2n), { state: 'closing' }), // our close is on its way: ours to answer
      channel(8n, proof(2n), { state: 'closed', closer: partner }), // closed: too late to ask
    )
    const asked = new Map([
      [channelKey(tokenNetwork, 2n), 4n],
      [channelKey(tokenNetwork, 3n), 5n],
    ])
    const chosen = proofsToGuard(s, (key) => asked.get(key))
    expect(chosen.map((c) => [c.channel.id, c.proof.nonce])).toEqual([
      [1n, 3n],
      [3n, 6n],
    ])
    // What the request carries: the proof as the partner signed it (§2.4), never our own (nonce 9).
    expect(chosen[0]!.proof).toEqual({
      chain_id: 31337n,
      token_network_address: tokenNetwork,
      channel_identifier: 1n,
      nonce: 3n,
      balance_hash: proof(3n).balanceHash,
      additional_hash: proof(3n).messageHash,
      signature: proof(3n).signature,
    })
  })
})

describe('a node with monitoring on, a real monitoring service, a private anvil', () => {
  const [keyA, keyB, serviceKey] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]] as [Hex, Hex, Hex]
  const service = privateKeyToAddress(serviceKey)
  const REWARD = 3n * 10n ** 17n
  let net: Devnet
  let monitor: MonitoringService | undefined
  let monitorDir: string
  const running: SluiceNode[] = []

  beforeAll(async () => {
    net = await startDevnet([keyA, keyB])
    monitorDir = await mkdtemp(join(tmpdir(), 'sluice-monitoring-'))
    const deployer = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] as Hex, pollingInterval: 50 })
    const queue = createTransactionQueue(deployer)
    // The service pays the registry in service tokens; B buys service tokens for its UserDeposit.
    await mintTokens(deployer, queue, { token: net.deployment.serviceToken, amount: 10n ** 22n, to: service })
    await mintTokens(deployer, queue, { token: net.deployment.serviceToken, amount: 10n ** 19n, to: privateKeyToAddress(keyB) })
  }, 60_000)

  afterAll(async () => {
    await Promise.all(running.map((n) => n.stop()))
    await monitor?.stop()
    await net?.stop()
    await rm(monitorDir, { recursive: true, force: true })
  })

  const startB = async () => {
    const node = await startNode(net, keyB, { durable: true, enableMonitoring: true, monitoringReward: REWARD })
    running.push(node)
    return node
  }
  const stop = async (node: SluiceNode) => {
    await node.stop()
    running.splice(running.indexOf(node), 1)
  }
  const notificationIds = async (node: SluiceNode) => {
    await node.services.notifications.check()
    return (await node.services.notifications.list()).map((n) => n.id)
  }
  const startMonitor = async () => {
    monitor = await createMonitoringService({
      secp256k1: jsSecp256k1,
      rpc: net.anvil.rpcUrl,
      deployment: net.deployment,
      key: serviceKey,
      dataDir: monitorDir,
      transport: (address) => createBroadcastChannelTransport({ address, channelName: net.channelName }),
      confirmations: 0,
      pollingInterval: 50,
    })
    await monitor.start()
    return monitor
  }
  const held = () => monitor!.channels().flatMap((c) => Object.values(c.requests))

  test('asks for the newest proof only once the UserDeposit covers the reward; a newer one replaces one unacknowledged; resent until the service holds it; asked again after a restart', async () => {
    const a = await startNode(net, keyA)
    running.push(a)
    let b = await startB()
    expect(b.services.monitoring).toBeDefined()
    expect(a.services.monitoring).toBeUndefined()

    // No service in the registry: the node says its channels are unguarded.
    await eventually(() => expect(b.services.monitoring!.view().registry).toBeDefined())
    expect(b.services.monitoring!.view().services).toEqual([])
    expect(await notificationIds(b)).toEqual(expect.arrayContaining(['monitoring_unavailable', 'monitoring_reward_not_covered']))

    // The service registers, but is not running yet; B reads the registry as it starts again.
    const serviceChain = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: serviceKey, pollingInterval: 50 })
    await ensureRegistered(serviceChain, createTransactionQueue(serviceChain), { serviceRegistry: net.deployment.contracts.ServiceRegistry.address })
    await stop(b)
    b = await startB()
    await eventually(() => expect(b.services.monitoring!.view().services.map((s) => s.address)).toEqual([service]))

    // A pays B twice: B's UserDeposit holds nothing, so nothing is signed or sent.
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 100n })
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))
    for (const identifier of [1n, 2n]) await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier })
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.nonce).toBe(4n))
    await eventually(() => expect(b.services.monitoring!.view().userDeposit).toMatchObject({ effectiveBalance: 0n, coversReward: false }))
    expect(b.services.monitoring!.view().channels).toEqual([])
    const ids = await notificationIds(b)
    expect(ids).toContain('monitoring_reward_not_covered')
    expect(ids).not.toContain('monitoring_unavailable')

    // B deposits exactly the reward: the newest proof (nonce 4) is signed and sent to the service, which is offline.
    await depositToServices(b.client, { totalDeposit: REWARD })
    const channelId = b.client.channel(net.tokenNetwork, a.address)!.id
    await eventually(() =>
      expect(b.services.monitoring!.view()).toMatchObject({
        userDeposit: { effectiveBalance: REWARD, coversReward: true },
        services: [{ address: service, acknowledged: 0, waiting: 1 }],
        channels: [{ tokenNetwork: net.tokenNetwork, channelId, partner: a.address, state: 'opened', request: { nonce: 4n }, acknowledged: [] }],
      }),
    )
    expect(await notificationIds(b)).not.toContain('monitoring_reward_not_covered')

    // Two more payments while the service is away: the newer request replaces the one waiting, still one per channel.
    for (const identifier of [3n, 4n]) await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier })
    await eventually(() =>
      expect(b.services.monitoring!.view()).toMatchObject({ services: [{ waiting: 1 }], channels: [{ request: { nonce: 8n }, acknowledged: [] }] }),
    )

    // The service comes up: B's resends reach it, and it holds the newest proof only, with B's reward.
    await startMonitor()
    await eventually(() =>
      expect(b.services.monitoring!.view()).toMatchObject({
        services: [{ address: service, acknowledged: 1, waiting: 0 }],
        channels: [{ request: { nonce: 8n }, acknowledged: [{ service, nonce: 8n }] }],
      }),
    )
    // Accepted once; a resend that crossed its acknowledgement (B retries while it waits: more on a busy machine) is
    // answered again and counted as such, never stored twice.
    expect(monitor!.status().requests).toMatchObject({ accepted: 1, refused: {} })
    expect(held()).toEqual([
      expect.objectContaining({
        closing: a.address,
        request: expect.objectContaining({
          non_closing_participant: b.address,
          reward_amount: REWARD,
          balance_proof: expect.objectContaining({ channel_identifier: channelId, nonce: 8n }),
        }),
      }),
    ])
    // Nothing more is sent for a proof the service holds: once a resend still on its way when B saw the
    // acknowledgement has come (a busy machine), the count stays put.
    await eventually(async () => {
      const sent = structuredClone(monitor!.status().requests)
      await new Promise((r) => setTimeout(r, 500))
      expect(monitor!.status().requests).toEqual(sent)
    }, 10_000)

    // A restart forgets what was acknowledged: B asks again, and the service acknowledges what it holds.
    await stop(b)
    b = await startB()
    await eventually(() => expect(b.services.monitoring!.view().channels).toMatchObject([{ request: { nonce: 8n }, acknowledged: [{ service, nonce: 8n }] }]))
    // Answered as a resend, never stored again; B may have asked more than once before the answer came (a busy machine).
    const after = monitor!.status().requests
    expect(after).toMatchObject({ accepted: 1, refused: {} })
    expect(after.resent).toBeGreaterThanOrEqual(1)
    expect(await notificationIds(b)).not.toEqual(expect.arrayContaining(['monitoring_unavailable']))
  })
})
