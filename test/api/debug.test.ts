import fc from 'fast-check'
import { bytesToHex, getAddress, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { pathSegment } from './support/fuzz.ts'
import { chainEventSchema, nodeEventSchema } from '../../src/api/routes/debug.ts'
import { expectAnswer } from './support/answers.ts'

let net: ApiNet
let a: ApiNode
let b: ApiNode
/** A second partner of A (running no node), so that channel filters have something to leave out. */
const other = privateKeyToAddress(anvilKeys[9])
let firstBlock: bigint
let secondBlock: bigint
let registry: Address

beforeAll(async () => {
  net = await startApiNet({ nodes: 2 })
  ;[a, b] = net.nodes as [ApiNode, ApiNode]
  registry = net.deployment.contracts.TokenNetworkRegistry.address
  const opened = await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 100n })
  await b.node.client.waitForBlock(opened.openedBlock)
  await depositOnChain(b.node.client, { tokenNetwork: net.tokenNetwork, partner: a.node.address, totalDeposit: 50n })
  firstBlock = a.node.client.channel(net.tokenNetwork, b.node.address)!.openedBlock
  const second = await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: other })
  secondBlock = second.openedBlock
  await net.synced()
  const paid = await a.request('POST', `/payments/${net.token}/${b.node.address}`, { amount: '5', identifier: '99' })
  expect(paid.status, paid.text).toBe(200)
}, 120_000)

afterAll(() => net?.stopAll())

type Entry = {
  args: Record<string, unknown>
  event: string
  logIndex: number
  transactionIndex: number
  transactionHash: Hex
  address: Address
  blockHash: Hex
  block_number: number
}
const ENTRY_KEYS = ['address', 'args', 'blockHash', 'block_number', 'event', 'logIndex', 'transactionHash', 'transactionIndex']
const LOG_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const events = async (path: string): Promise<Entry[]> => {
  const r = await a.get(`/_debug/blockchain_events${path}`)
  expect(r.status, `${path}: ${r.text}`).toBe(200)
  for (const e of r.body) expectAnswer(chainEventSchema, e, `${path} ${e.event}`)
  return r.body
}

describe('GET /_debug/blockchain_events/...', () => {
  it('network: the TokenNetworkCreated events, with positions that match the chain', async () => {
    const list = await events('/network')
    expect(list).toHaveLength(1)
    const [e] = list as [Entry]
    expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS)
    expect(e).toMatchObject({ event: 'TokenNetworkCreated', address: registry, args: { token_address: net.token, token_network_address: net.tokenNetwork } })
    const receipt = await a.node.client.chain.publicClient.getTransactionReceipt({ hash: e.transactionHash })
    expect(e.blockHash).toBe(receipt.blockHash)
    expect(e.block_number).toBe(Number(receipt.blockNumber))
    expect(e.transactionIndex).toBe(receipt.transactionIndex)
    expect(receipt.logs.some((l) => l.logIndex === e.logIndex && getAddress(l.address) === registry)).toBe(true)
  })

  it('tokens/<token>: every event of the token network contract, oldest first', async () => {
    const list = await events(`/tokens/${net.token}`)
    expect(list.map((e) => e.event)).toEqual(['ChannelOpened', 'ChannelNewDeposit', 'ChannelNewDeposit', 'ChannelOpened'])
    for (const e of list) {
      expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS)
      expect(e.address).toBe(net.tokenNetwork)
      expect(e.blockHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(Number.isInteger(e.logIndex) && Number.isInteger(e.transactionIndex) && Number.isInteger(e.block_number)).toBe(true)
    }
    const positions = list.map((e) => e.block_number * 1000 + e.logIndex)
    expect(positions).toEqual([...positions].sort((x, y) => x - y))
    const [p1, p2] = [a.node.address, b.node.address].sort((x, y) => (x.toLowerCase() < y.toLowerCase() ? -1 : 1))
    expect(list[0]!.args).toEqual({ channel_identifier: '1', participant1: expect.any(String), participant2: expect.any(String), settle_timeout: '40' })
    expect([list[0]!.args.participant1, list[0]!.args.participant2].sort()).toEqual([p1, p2].sort())
    expect(list[1]!.args).toEqual({ channel_identifier: '1', participant: a.node.address, total_deposit: '100' })
    expect(list[2]!.args).toEqual({ channel_identifier: '1', participant: b.node.address, total_deposit: '50' })
    expect(list[3]!.args).toMatchObject({ channel_identifier: '2' })
    expect(list[0]!.block_number).toBe(Number(firstBlock))
    expect(list[3]!.block_number).toBe(Number(secondBlock))
  })

  it('payment_networks/<token>/channels and .../channels/<partner>: all channels, or our channel with the partner', async () => {
    const all = await events(`/tokens/${net.token}`)
    expect(await events(`/payment_networks/${net.token}/channels`)).toEqual(all)
    expect(await events(`/payment_networks/${net.token}/channels/${b.node.address}`)).toEqual(all.slice(0, 3))
    expect(await events(`/payment_networks/${net.token}/channels/${other}`)).toEqual(all.slice(3))
    expect((await b.get(`/_debug/blockchain_events/payment_networks/${net.token}/channels/${a.node.address}`)).body).toEqual(all.slice(0, 3))
  })

  it('from_block and to_block are inclusive bounds', async () => {
    const all = await events(`/tokens/${net.token}`)
    expect(await events(`/tokens/${net.token}?from_block=${secondBlock}`)).toEqual(all.slice(3))
    expect(await events(`/tokens/${net.token}?to_block=${secondBlock - 1n}`)).toEqual(all.slice(0, 3))
    expect(await events(`/tokens/${net.token}?from_block=${firstBlock}&to_block=${firstBlock}`)).toEqual(
      all.filter((e) => e.block_number === Number(firstBlock)),
    )
    expect(await events(`/tokens/${net.token}?from_block=${secondBlock}&to_block=${firstBlock}`)).toEqual([])
    expect(await events(`/tokens/${net.token}?from_block=0&to_block=${2n ** 64n - 1n}`)).toEqual(all)
    expect(await events(`/payment_networks/${net.token}/channels/${b.node.address}?from_block=${secondBlock}`)).toEqual([])
    expect(await events(`/network?to_block=${firstBlock}`)).toHaveLength(1)
    expect(await events(`/network?from_block=${firstBlock}`)).toEqual([])
  })

  it('409 for a block number outside 0..2^64-1; 400 for one that is not an integer or an unknown parameter', async () => {
    const paths = ['/network', `/tokens/${net.token}`, `/payment_networks/${net.token}/channels`, `/payment_networks/${net.token}/channels/${b.node.address}`]
    for (const path of paths) {
      for (const query of ['from_block=-1', `to_block=${2n ** 64n}`, `from_block=${2n ** 300n}`]) {
        const r = await a.get(`/_debug/blockchain_events${path}?${query}`)
        expect(r.status, `${path}?${query}`).toBe(409)
        expect(r.body.errors).toMatch(/block/)
      }
      for (const query of ['from_block=abc', 'to_block=1.5', 'to_block=', 'from_block=0x10', 'limit=1', 'from_block=1&from_block=2']) {
        const r = await a.get(`/_debug/blockchain_events${path}?${query}`)
        expect(r.status, `${path}?${query}`).toBe(400)
        expect(typeof r.body.errors).toBe('string')
      }
    }
  })

  it('404 for a token with no token network, a partner without a channel, or an address not EIP-55', async () => {
    const unknown = getAddress(`0x${'ab'.repeat(20)}`)
    const stranger = getAddress(`0x${'cd'.repeat(20)}`)
    const paths = [
      `/tokens/${unknown}`,
      `/payment_networks/${unknown}/channels`,
      `/payment_networks/${unknown}/channels/${b.node.address}`,
      `/payment_networks/${net.token}/channels/${stranger}`,
      `/tokens/${net.token.toLowerCase()}`,
      `/payment_networks/${net.token}/channels/${b.node.address.toLowerCase()}`,
    ]
    for (const path of paths) {
      const r = await a.get(`/_debug/blockchain_events${path}`)
      expect(r.status, path).toBe(404)
      expect(typeof r.body.errors).toBe('string')
    }
    expect((await a.get(`/_debug/blockchain_events/payment_networks/${net.token}/channels/${stranger}`)).body.errors).toMatch(/channel/)
    expect((await a.get(`/_debug/blockchain_events/tokens/${unknown}`)).body.errors).toMatch(/token network/)
  })
})

describe('GET /_debug/node_events', () => {
  it("lists the node's events oldest first, with event, log_time and the fields docs/rest-api.md names", async () => {
    const r = await a.get('/_debug/node_events')
    expect(r.status).toBe(200)
    const list = r.body as Record<string, unknown>[]
    for (const e of list) {
      expectAnswer(nodeEventSchema, e, String(e.event))
      expect(e.event).toMatch(/^Event[A-Z]/)
      expect(e.log_time).toMatch(LOG_TIME)
    }
    const times = list.map((e) => Date.parse(e.log_time as string))
    expect(times).toEqual([...times].sort((x, y) => x - y))
    const sent = list.filter((e) => e.event === 'EventPaymentSentSuccess')
    expect(sent).toHaveLength(1)
    expect(sent[0]).toMatchObject({
      amount: '5',
      identifier: '99',
      payment_network_identifier: registry,
      target: b.node.address,
      token_network_identifier: net.tokenNetwork,
      token_address: net.token,
    })
    const received = ((await b.get('/_debug/node_events')).body as Record<string, unknown>[]).filter((e) => e.event === 'EventPaymentReceivedSuccess')
    expect(received).toEqual([
      expect.objectContaining({
        amount: '5',
        identifier: '99',
        initiator: a.node.address,
        payment_network_identifier: registry,
        token_network_identifier: net.tokenNetwork,
      }),
    ])
  })

  it('pages with limit and offset; 400 for a bad one or an unknown parameter', async () => {
    const all = (await a.get('/_debug/node_events')).body as unknown[]
    expect(all.length).toBeGreaterThanOrEqual(2)
    expect((await a.get('/_debug/node_events?limit=1&offset=1')).body).toEqual(all.slice(1, 2))
    expect((await a.get('/_debug/node_events?offset=1')).body).toEqual(all.slice(1))
    expect((await a.get('/_debug/node_events?limit=0')).body).toEqual([])
    expect((await a.get(`/_debug/node_events?limit=${2n ** 70n}`)).body).toEqual(all)
    for (const query of ['limit=-1', 'offset=-1', 'limit=x', 'offset=1.5', 'from_block=1']) {
      const r = await a.get(`/_debug/node_events?${query}`)
      expect(r.status, query).toBe(400)
      expect(typeof r.body.errors).toBe('string')
    }
  })
})

describe('fuzzing the debug queries', () => {
  it('only 200, 400 or 409: never a 500, never a change of state', async () => {
    const state = () => JSON.stringify(a.node.state, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
    const before = state()
    const path = fc.constantFrom(
      '/_debug/blockchain_events/network',
      `/_debug/blockchain_events/tokens/${net.token}`,
      `/_debug/blockchain_events/payment_networks/${net.token}/channels/${b.node.address}`,
      '/_debug/node_events',
    )
    const value = fc.oneof(fc.string(), fc.bigInt({ min: -(2n ** 100n), max: 2n ** 100n }).map(String), fc.double().map(String))
    await fc.assert(
      fc.asyncProperty(path, fc.dictionary(fc.constantFrom('from_block', 'to_block', 'limit', 'offset', 'x'), value), async (p, query) => {
        const r = await a.get(`${p}?${new URLSearchParams(query)}`)
        expect([200, 400, 409], `${p}?${new URLSearchParams(query)}: ${r.text}`).toContain(r.status)
      }),
      { numRuns: 300 },
    )
    const segment = fc.oneof(
      pathSegment(),
      fc.uint8Array({ minLength: 20, maxLength: 20 }).map((u) => getAddress(bytesToHex(u))),
      fc.constant(net.token),
    )
    await fc.assert(
      fc.asyncProperty(segment, segment, async (token, partner) => {
        const r = await a.get(`/_debug/blockchain_events/payment_networks/${encodeURIComponent(token)}/channels/${encodeURIComponent(partner)}`)
        expect([200, 404], r.text).toContain(r.status)
      }),
      { numRuns: 200 },
    )
    expect(a.internalErrors).toEqual([])
    expect(state()).toEqual(before)
  })
})
