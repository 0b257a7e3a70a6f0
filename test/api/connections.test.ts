import fc from 'fast-check'
import { getAddress, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from '../../src/api/bigintJson.ts'
import { createChainClient, createTransactionQueue, mintTokens, openChannel, readTokenBalance, registerToken } from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { pathSegment } from './support/fuzz.ts'

const MINTED = 10n ** 21n

let net: ApiNet
let a: ApiNode
let b: ApiNode
let c: ApiNode
let d: ApiNode
let devnet: ReturnType<typeof createDevnetClient>
let token: Address
/** Registered; only b holds some of it. */
let tt2: Address
let tt2Network: Address
/** Accounts without a node: participants of the token network's graph. */
const X = Object.fromEntries([5, 6, 7, 8, 9].map((i) => [i, privateKeyToAddress(anvilKeys[i] as Hex)])) as Record<5 | 6 | 7 | 8 | 9, Address>

beforeAll(async () => {
  net = await startApiNet({ nodes: 4 })
  ;[a, b, c, d] = net.nodes as [ApiNode, ApiNode, ApiNode, ApiNode]
  token = net.token
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  const deployer = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
  tt2 = net.deployment.tokens.TT2
  const queue = createTransactionQueue(deployer)
  ;({ tokenNetwork: tt2Network } = await registerToken(deployer, queue, { registry: net.deployment.contracts.TokenNetworkRegistry.address, token: tt2 }))
  await mintTokens(deployer, queue, { token: tt2, amount: 1000n, to: b.node.address })
  await synced()
})
afterAll(() => net?.stopAll())

const synced = () => net.synced()

/** A channel between two accounts that run no node, opened from the first one's key. */
async function rawChannel(from: 5 | 6 | 7 | 8 | 9, to: 5 | 6 | 7 | 8 | 9, tokenNetwork = net.tokenNetwork) {
  const chain = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[from] as Hex, pollingInterval: 50 })
  await openChannel(chain, createTransactionQueue(chain), { tokenNetwork, partner: X[to], settleTimeout: 40n })
  await synced()
}

const put = (n: ApiNode, t: string, body: unknown) => n.request('PUT', `/connections/${t}`, body)
const del = (n: ApiNode, t: string) => n.request('DELETE', `/connections/${t}`)
const openChannels = (n: ApiNode) =>
  Object.values(n.node.state.channels).filter((ch) => ch.state === 'opened' && ch.tokenNetwork.toLowerCase() === net.tokenNetwork.toLowerCase())
const depositWith = (n: ApiNode, partner: Address) => n.node.client.channel(net.tokenNetwork, partner)?.our.deposit

/** What a refused request must leave alone: the node's channels, its nonce and its tokens. */
async function snapshot(n: ApiNode) {
  return {
    channels: stringify(n.node.state.channels),
    nonce: await n.node.client.chain.publicClient.getTransactionCount({ address: n.node.address }),
    tokens: await readTokenBalance(n.node.client.chain, { token }),
  }
}

/** Mines blocks while `pending` runs, so that settle windows pass; returns its outcome. */
async function mining<T>(pending: Promise<T>, ms = 30_000): Promise<T> {
  let done = false
  const result = pending.finally(() => (done = true))
  const deadline = Date.now() + ms
  while (!done && Date.now() < deadline) {
    await devnet.mine({ blocks: 5 })
    await new Promise((r) => setTimeout(r, 50))
  }
  return result
}

/** Waits a few blocks, enough for the connection manager to have acted if it were going to. */
async function someBlocks() {
  for (let i = 0; i < 3; i++) {
    await devnet.mine({ blocks: 1 })
    await synced()
    await new Promise((r) => setTimeout(r, 150))
  }
}

describe('GET /connections', () => {
  it('is {} without open channels', async () => {
    const r = await a.get('/connections')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({})
  })
})

describe('PUT /connections/<token>: refused requests change nothing', () => {
  it('400 for a malformed body', async () => {
    const before = await snapshot(a)
    for (const body of [
      '',
      '{',
      '[]',
      {},
      { initial_channel_target: 3 },
      { funds: '1.5' },
      { funds: 'x' },
      { funds: 10, initial_channel_target: 'two' },
      { funds: 10, joinable_funds_target: 'half' },
      { funds: 10, other: 1 },
    ]) {
      const r = await put(a, token, body)
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(typeof r.body.errors).toBe('string')
    }
    expect(await snapshot(a)).toEqual(before)
  })

  it('404 for a token address that is not EIP-55', async () => {
    expect((await put(a, token.toLowerCase(), { funds: '10' })).status).toBe(404)
    expect((await put(a, 'nothing', { funds: '10' })).status).toBe(404)
  })

  it('409 for invalid input: funds 0 or negative, unregistered token, more funds than held, joinable_funds_target outside 0..1, nothing per channel', async () => {
    const before = await snapshot(a)
    const cases: [string, unknown, RegExp][] = [
      [token, { funds: '0' }, /funds must be greater than zero/],
      [token, { funds: '-5' }, /funds/],
      [X[9], { funds: '10' }, /not registered/],
      [net.deployment.serviceToken, { funds: '10' }, /not registered/],
      [token, { funds: (MINTED + 1n).toString() }, /Insufficient balance for token/],
      [tt2, { funds: '10' }, /Insufficient balance for token/],
      [token, { funds: '10', joinable_funds_target: 1.5 }, /joinable_funds_target/],
      [token, { funds: '10', joinable_funds_target: -0.1 }, /joinable_funds_target/],
      [token, { funds: '2', initial_channel_target: 3 }, /too few funds/],
      [token, { funds: '10', joinable_funds_target: 1 }, /too few funds/],
    ]
    for (const [t, body, message] of cases) {
      const r = await put(a, t, body)
      expect(r.status, JSON.stringify(body)).toBe(409)
      expect(r.body.errors).toMatch(message)
    }
    expect(await snapshot(a)).toEqual(before)
  })
})

describe('joining a token network', () => {
  let second: Address

  it('with no participant in the graph: 204 and no channel; the channel is opened once a participant appears', async () => {
    const tt2Channels = () => Object.values(b.node.state.channels).filter((ch) => ch.tokenNetwork.toLowerCase() === tt2Network.toLowerCase())
    const nonce = await b.node.client.chain.publicClient.getTransactionCount({ address: b.node.address })
    const r = await put(b, tt2, { funds: '100', initial_channel_target: 1 })
    expect(r.status).toBe(204)
    expect(r.text).toBe('')
    expect(tt2Channels()).toEqual([])
    expect(await b.node.client.chain.publicClient.getTransactionCount({ address: b.node.address })).toBe(nonce)
    await rawChannel(5, 6, tt2Network)
    // X5 and X6 have one channel each: the smaller address first; 100 * 0.6 / 1 deposited.
    const first = [X[5], X[6]].sort((p, q) => (p.toLowerCase() < q.toLowerCase() ? -1 : 1))[0]!
    await eventually(() => expect(tt2Channels().map((ch) => [ch.partner, ch.our.deposit])).toEqual([[first, 60n]]))
    expect((await b.get('/connections')).body).toEqual({ [tt2]: { sum_deposits: '60', channels: '1' } })
  })

  it('402 when the node cannot pay the gas reserve of the channels to open; nothing changes', async () => {
    await rawChannel(7, 8)
    await rawChannel(8, 9)
    const before = await snapshot(a)
    await devnet.setBalance({ address: a.node.address, value: 1000n })
    try {
      const r = await put(a, token, { funds: '1000', initial_channel_target: 2 })
      expect(r.status).toBe(402)
      expect(r.body.errors).toMatch(/insufficient ETH for gas/)
    } finally {
      await devnet.setBalance({ address: a.node.address, value: parseEther('10000') })
    }
    expect(await snapshot(a)).toEqual(before)
  })

  it('opens initial_channel_target channels with the best-connected participants, each with funds * (1 - joinable) / target', async () => {
    // X8 has two channels; X7 and X9 one each, so the smaller address comes second.
    second = [X[7], X[9]].sort((p, q) => (p.toLowerCase() < q.toLowerCase() ? -1 : 1))[0]!
    const r = await put(a, token, { funds: '1000', initial_channel_target: 2 })
    expect(r.status).toBe(204)
    expect(r.text).toBe('')
    expect(
      openChannels(a)
        .map((ch) => ch.partner)
        .sort(),
    ).toEqual([X[8], second].sort())
    expect(depositWith(a, X[8])).toBe(300n)
    expect(depositWith(a, second)).toBe(300n)
    expect(await readTokenBalance(a.node.client.chain, { token })).toBe(MINTED - 600n)
    const g = await a.get('/connections')
    expect(g.body).toEqual({ [token]: { sum_deposits: '600', channels: '2' } })
  })

  it('a repeated request with the target met sends nothing', async () => {
    const before = await snapshot(a)
    expect((await put(a, token, { funds: '1000', initial_channel_target: 2 })).status).toBe(204)
    expect(await snapshot(a)).toEqual(before)
  })

  it('joins a channel another node opens with us: up to its deposit, from the joinable funds', async () => {
    await openChannelOnChain(b.node.client, { tokenNetwork: net.tokenNetwork, partner: a.node.address, totalDeposit: 50n })
    await eventually(() => expect(depositWith(a, b.node.address)).toBe(50n))
  })

  it('a channel opened without a deposit is joined once the opener deposits, at most the per-channel amount', async () => {
    await openChannelOnChain(c.node.client, { tokenNetwork: net.tokenNetwork, partner: a.node.address })
    await someBlocks()
    expect(depositWith(a, c.node.address)).toBe(0n)
    await depositOnChain(c.node.client, { tokenNetwork: net.tokenNetwork, partner: a.node.address, totalDeposit: 500n })
    // min(500, 1000 - 650 still to deposit, 300 per channel)
    await eventually(() => expect(depositWith(a, c.node.address)).toBe(300n))
    expect((await a.get('/connections')).body).toEqual({ [token]: { sum_deposits: '950', channels: '4' } })
  })

  it('with fewer participants than the target, opens what it can, and the rest as new participants appear', async () => {
    // d: ten channels of 100 wanted; the graph has X7, X8, X9, a, b and c.
    const r = await put(d, token, { funds: '1000', initial_channel_target: 10, joinable_funds_target: 0 })
    expect(r.status).toBe(204)
    const first = openChannels(d).map((ch) => ch.partner)
    expect(first.sort()).toEqual([X[7], X[8], X[9], a.node.address, b.node.address, c.node.address].sort())
    for (const partner of first) expect(depositWith(d, partner)).toBe(100n)
    await rawChannel(5, 6)
    await eventually(() => expect(openChannels(d).map((ch) => ch.partner)).toEqual(expect.arrayContaining([X[5], X[6]])))
    await eventually(() => expect(openChannels(d).every((ch) => ch.our.deposit === 100n)).toBe(true))
    expect(openChannels(d)).toHaveLength(8)
    expect((await d.get('/connections')).body).toEqual({ [token]: { sum_deposits: '800', channels: '8' } })
  })
})

describe('DELETE /connections/<token>', () => {
  it('404 for a token that is not registered, or an address that is not EIP-55; nothing changes', async () => {
    const before = await snapshot(a)
    for (const t of [X[9], net.deployment.serviceToken]) {
      const r = await del(a, t)
      expect(r.status).toBe(404)
      expect(r.body.errors).toMatch(/not registered/)
    }
    expect((await del(a, token.toLowerCase())).status).toBe(404)
    expect(await snapshot(a)).toEqual(before)
  })

  it('a registered token without channels: 200 []', async () => {
    const r = await del(a, tt2)
    expect(r.status).toBe(200)
    expect(r.body).toEqual([])
  })

  it('402 when the node cannot pay to close and settle; nothing changes', async () => {
    const before = await snapshot(d)
    await devnet.setBalance({ address: d.node.address, value: 1000n })
    try {
      const r = await del(d, token)
      expect(r.status).toBe(402)
      expect(r.body.errors).toMatch(/insufficient ETH for gas/)
    } finally {
      await devnet.setBalance({ address: d.node.address, value: parseEther('10000') })
    }
    expect(await snapshot(d)).toEqual(before)
  })

  it('closes every open channel of the token, waits until each is settled, and answers the partners', async () => {
    const partners = openChannels(a).map((ch) => getAddress(ch.partner))
    expect(partners).toHaveLength(5) // X8, the second, b, c, and d's channel (joined with what was left)
    const r = await mining(del(a, token))
    expect(r.status).toBe(200)
    expect([...r.body].sort()).toEqual([...partners].sort())
    for (const p of r.body as string[]) expect(getAddress(p)).toBe(p)
    // Settled: gone from the state, and every deposit is back.
    expect(
      Object.values(a.node.state.channels).filter((ch) => ch.tokenNetwork.toLowerCase() === net.tokenNetwork.toLowerCase() && ch.state !== 'settled'),
    ).toEqual([])
    expect(await readTokenBalance(a.node.client.chain, { token })).toBe(MINTED)
    expect((await a.get('/connections')).body).toEqual({})
  })

  it('forgets the settings: a channel opened with us later is not joined', async () => {
    await openChannelOnChain(b.node.client, { tokenNetwork: net.tokenNetwork, partner: a.node.address, totalDeposit: 10n })
    await someBlocks()
    expect(depositWith(a, b.node.address)).toBe(0n)
  })
})

describe('fuzzing', () => {
  // Built inside the tests: the token addresses exist only once the net runs.
  const address = () =>
    fc.oneof(
      fc.constantFrom<string>(tt2, tt2.toLowerCase(), X[9], '0x0000000000000000000000000000000000000000'),
      pathSegment(),
      fc.stringMatching(/^0x[0-9a-fA-F]{0,42}$/),
    )
  const value = fc.oneof(
    fc.bigInt({ min: -(2n ** 260n), max: 2n ** 260n }).map((n) => n.toString()),
    fc.integer(),
    fc.double(),
    fc.jsonValue(),
  )
  const body = () =>
    fc.oneof(fc.record({ funds: value, initial_channel_target: value, joinable_funds_target: value }, { requiredKeys: [] }), fc.jsonValue(), fc.string())

  it('PUT bodies and paths (a token the node holds none of): never a 500, never a change', async () => {
    await fc.assert(
      fc.asyncProperty(address(), body(), async (t, b) => {
        const before = await snapshot(c)
        const r = await put(c, encodeURIComponent(t), typeof b === 'string' ? b : JSON.stringify(b))
        expect([400, 404, 409]).toContain(r.status)
        expect(typeof r.body.errors).toBe('string')
        expect(await snapshot(c)).toEqual(before)
      }),
      { numRuns: 60 },
    )
  })

  it('DELETE paths: never a 500, never a change', async () => {
    await fc.assert(
      fc.asyncProperty(address(), async (t) => {
        const before = await snapshot(c)
        const r = await del(c, encodeURIComponent(t))
        expect([200, 404]).toContain(r.status)
        if (r.status === 200) expect(r.body).toEqual([])
        expect(await snapshot(c)).toEqual(before)
      }),
      { numRuns: 40 },
    )
    for (const n of net.nodes) expect(n.internalErrors).toEqual([])
  })
})
