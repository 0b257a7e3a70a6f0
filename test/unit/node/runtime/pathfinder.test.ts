import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { resolveNodeConfig, type NodeConfig } from '../../../../src/node/nodeConfig.ts'
import type { PathfindingNotice } from '../../../../src/node/notices.ts'
import { Pathfinder, type Announcement } from '../../../../src/node/runtime/pathfinder.ts'
import { ServiceMessages } from '../../../../src/node/runtime/serviceMessages.ts'
import { Signer, type ServiceMessage } from '../../../../src/node/runtime/signer.ts'
import { messageSigner } from '../../../../src/protocol/messages/sign.ts'
import { initialState } from '../../../../src/protocol/state/access.ts'
import { signPackedSync } from '../../../../src/protocol/signature.ts'
import { timestampMicros } from '../../../../src/pathfinding/timestamps.ts'
import type { OutboxRecord } from '../../../../src/storage/storage.ts'
import { lineSigner } from '../../../../src/transport/lineSigner.ts'
import type { Deployment } from '../../../../src/chain/deployment.ts'
import { getAddress } from 'viem'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

// The pathfinding client's own rules (docs/decisions/0073), against real HTTP servers playing the service's part
// (one that never answers, one that answers /info): a payment never waits on a service longer than the bound, a
// service that failed is left alone for a while, a private node announces nothing, and announcements made before a
// service is chosen reach it once it is.

const address = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
/** A deployment as data: its addresses only have to be told apart. */
const testDeployment = (): Deployment => ({
  chainId: 31337,
  contracts_version: '0.40.0',
  contracts: {
    TokenNetworkRegistry: { address: address(2), blockNumber: 2 },
    SecretRegistry: { address: address(1), blockNumber: 1 },
    UserDeposit: { address: address(5), blockNumber: 5 },
    ServiceRegistry: { address: address(4), blockNumber: 4 },
    OneToN: { address: address(6), blockNumber: 6 },
    MonitoringService: { address: address(7), blockNumber: 7 },
  },
  tokens: {},
  serviceToken: address(3),
  rpcUrl: 'http://127.0.0.1:8545',
})

const key: Hex = anvilKeys[6]!
const us = privateKeyToAddress(key)
const SERVICE: Address = privateKeyToAddress(anvilKeys[7]!)
const servers: Server[] = []
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => {
      const closed = new Promise((resolve) => s.close(resolve))
      s.closeAllConnections()
      return closed
    }),
  )
})

async function serve(handle: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handle)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A service's GET /info for the test deployment's chain and registry, paid to SERVICE. */
function infoOf(deployment: NodeConfig['deployment'], price = 0n) {
  return JSON.stringify({
    price_info: Number(price),
    network_info: {
      chain_id: deployment.chainId,
      token_network_registry_address: deployment.contracts.TokenNetworkRegistry.address,
      user_deposit_address: deployment.contracts.UserDeposit.address,
      confirmed_block: { number: 1 },
    },
    payment_address: SERVICE,
    operator: '',
    message: '',
    version: '1',
  })
}

function pathfinder(options: Partial<NodeConfig>) {
  const deployment = testDeployment()
  const { config } = resolveNodeConfig({
    deployment,
    key,
    storage: undefined as never,
    transport: undefined as never,
    rpc: 'http://127.0.0.1:8545',
    ...options,
  })
  const state = initialState({ address: us, chainId: BigInt(deployment.chainId), blockNumber: 1n })
  const signer = new Signer({
    engine: { current: state },
    signLine: lineSigner(jsSecp256k1, key),
    signRequest: () => {
      throw new Error('not here')
    },
    signBytes: (data) => signPackedSync(jsSecp256k1, key, data),
  })
  const sent: OutboxRecord[] = []
  const serviceMessages = new ServiceMessages({ delivery: { enqueue: (records) => sent.push(...records), cancel: () => {} }, signer })
  const notices: PathfindingNotice[] = []
  const stopping = new AbortController()
  const p = new Pathfinder({
    config,
    chain: undefined as never,
    state: () => state,
    headBlock: () => 1n,
    signer,
    serviceMessages,
    notify: (n) => notices.push(n),
    stopped: stopping.signal,
  })
  return { p, sent, notices, deployment, stop: () => stopping.abort() }
}

const target: Address = `0x${'33'.repeat(20)}`
const tokenNetwork: Address = `0x${'44'.repeat(20)}`
const capacity = (channelKey: string, nonce: bigint): Announcement => ({
  type: 'announceCapacity',
  channelKey,
  update: {
    type: 'PFSCapacityUpdate',
    canonical_identifier: { chain_identifier: 31337n, token_network_address: tokenNetwork, channel_identifier: 1n },
    updating_participant: us,
    other_participant: target,
    updating_nonce: nonce,
    other_nonce: 0n,
    updating_capacity: 10n,
    other_capacity: 0n,
    reveal_timeout: 10n,
  },
})
const fees = (channelKey: string): Announcement => ({
  type: 'announceFees',
  channelKey,
  update: {
    type: 'PFSFeeUpdate',
    canonical_identifier: { chain_identifier: 31337n, token_network_address: tokenNetwork, channel_identifier: 1n },
    updating_participant: us,
    fee_schedule: { cap_fees: true, flat: 0n, proportional: 0n, imbalance_penalty: null },
  },
})

describe('the pathfinding client', () => {
  test('a service that never answers: the payment routes locally once the bound is out, and the next at once', async () => {
    let asked = 0
    const url = await serve(() => {
      asked++
    })
    const { p, notices } = pathfinder({ routingMode: 'pfs', pathfindingServiceAddress: url, pathfinding: { timeoutMs: 300, retryAfterMs: 60_000 } })
    const started = performance.now()
    expect(await p.routes({ tokenNetwork, target, amount: 5n, address: us })).toEqual({
      source: 'local',
      reason: expect.stringMatching(/^the pathfinding service is unavailable: .*did not answer within 300 ms$/),
    })
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(await p.routes({ tokenNetwork, target, amount: 6n, address: us })).toMatchObject({ source: 'local' })
    expect(asked).toBe(1)
    expect(notices.map((n) => n.what)).toEqual(['unavailable', 'routedLocally', 'routedLocally'])
    expect(p.view().unavailable).toMatchObject({ reason: expect.stringMatching(/did not answer within 300 ms/) })
  })

  test('local mode asks nothing; private mode announces nothing, even with a service named', async () => {
    let asked = 0
    const url = await serve((_req, res) => {
      asked++
      res.end('{}')
    })
    const local = pathfinder({ routingMode: 'local', pathfindingServiceAddress: url })
    expect(await local.p.routes({ tokenNetwork, target, amount: 5n, address: us })).toEqual({ source: 'local' })
    const private_ = pathfinder({ routingMode: 'private', pathfindingServiceAddress: url })
    private_.p.announce(capacity('k', 1n))
    private_.p.announceAll()
    expect(await private_.p.routes({ tokenNetwork, target, amount: 5n, address: us })).toEqual({ source: 'local' })
    expect([private_.sent, private_.notices, asked]).toEqual([[], [], 0])
  })

  test('announcements wait for a service; the one chosen hears every channel as the state has it then, nothing stale, and each later announcement', async () => {
    const deployment = testDeployment()
    const url = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(infoOf(deployment))
    })
    const { p, sent } = pathfinder({ routingMode: 'local', pathfindingServiceAddress: url })
    p.announce(capacity('k', 1n))
    p.announce(capacity('k', 2n))
    p.announce(fees('k'))
    expect(sent).toEqual([])
    expect(p.view().announcements).toEqual({ waiting: 2, acknowledged: 0 })
    expect(await p.service()).toMatchObject({ paymentAddress: SERVICE })
    // The state holds no channel of ours (announceAll says what it holds): what waited is not sent stale.
    expect(sent).toEqual([])
    expect(p.view().announcements).toEqual({ waiting: 0, acknowledged: 0 })
    p.announce(capacity('k', 3n))
    p.announce(fees('k'))
    p.announce(fees('k'))
    const messages = sent.map((r) => r.message as ServiceMessage)
    expect(sent.every((r) => r.recipient === SERVICE)).toBe(true)
    expect(messages.map((m) => m.type)).toEqual(['PFSCapacityUpdate', 'PFSFeeUpdate', 'PFSFeeUpdate'])
    for (const m of messages) expect(await messageSigner(jsSecp256k1, m)).toBe(us)
    // Each fee update later than the one before it: a service keeps only a newer one.
    const stamps = messages.filter((m) => m.type === 'PFSFeeUpdate').map((m) => timestampMicros((m as { timestamp: string }).timestamp)!)
    expect(stamps[1]!).toBeGreaterThan(stamps[0]!)
  })

  test("the service's no route fails the payment, but not when it is about us (it has not heard of our channels yet): then our own routes", async () => {
    const deployment = testDeployment()
    let reason = 'not_connected'
    const url = await serve((req, res) => {
      res.setHeader('content-type', 'application/json')
      if (req.url === '/api/v1/info') return res.end(infoOf(deployment))
      res.statusCode = 404
      res.end(JSON.stringify({ errors: 'No route between nodes found.', error_code: 2201, error_details: { reason } }))
    })
    const { p } = pathfinder({ routingMode: 'pfs', pathfindingServiceAddress: url })
    const ask = () => p.routes({ tokenNetwork, target, amount: 5n, address: us })
    expect(await ask()).toEqual({ source: 'none', reason: 'the pathfinding service found no route (not_connected)' })
    for (reason of ['no_channel_from_source', 'source_capacity', 'source_offline'])
      expect(await ask()).toEqual({ source: 'local', reason: `the pathfinding service does not know this node's channels yet (${reason})` })
    // An answer, even "no route", is no failure of the service: it is asked again at once.
    expect(p.view().unavailable).toBeUndefined()
  })

  test('a service whose price is above --pathfinding-max-fee is not asked: the payment routes locally, saying why', async () => {
    const deployment = testDeployment()
    let paths = 0
    const url = await serve((req, res) => {
      if (req.url !== '/api/v1/info') paths++
      res.setHeader('content-type', 'application/json')
      res.end(infoOf(deployment, 11n))
    })
    const { p } = pathfinder({ routingMode: 'pfs', pathfindingServiceAddress: url, pathfindingMaxFee: 10n })
    expect(await p.routes({ tokenNetwork, target, amount: 5n, address: us })).toEqual({
      source: 'local',
      reason: 'the pathfinding service asks 11 per route request, above --pathfinding-max-fee 10',
    })
    expect(paths).toBe(0)
  })

  test('a service of another chain or registry is never used', async () => {
    const deployment = testDeployment()
    const url = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(infoOf({ ...deployment, chainId: 5 }))
    })
    const { p, notices } = pathfinder({ routingMode: 'local', pathfindingServiceAddress: url })
    expect(await p.service()).toBeUndefined()
    expect(notices).toEqual([{ type: 'pathfinding', what: 'unavailable', url, reason: `${url} serves chain 5, not this node's 31337` }])
  })
})
