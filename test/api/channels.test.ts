import fc from 'fast-check'
import { maxUint256, getAddress, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from '../../src/api/bigintJson.ts'
import {
  createChainClient,
  createTransactionQueue,
  mintTokens,
  readChannelInfo,
  readParticipantInfo,
  readTokenBalance,
  registerToken,
} from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'

const SPEC_FIELDS = [
  'channel_identifier',
  'token_network_address',
  'partner_address',
  'token_address',
  'balance',
  'total_deposit',
  'total_withdraw',
  'state',
  'settle_timeout',
  'reveal_timeout',
]

let net: ApiNet
let a: ApiNode
let b: ApiNode
let devnet: ReturnType<typeof createDevnetClient>
let token: Address
let A: Address
let B: Address
/** Addresses with no node behind them: partners that never answer. */
const C = privateKeyToAddress(anvilKeys[8] as Hex)
const D = privateKeyToAddress(anvilKeys[7] as Hex)
const E = privateKeyToAddress(anvilKeys[6] as Hex)

beforeAll(async () => {
  net = await startApiNet({ nodes: 2 })
  ;[a, b] = net.nodes as [ApiNode, ApiNode]
  A = a.node.address
  B = b.node.address
  token = net.token
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
})
afterAll(() => net?.stopAll())

const path = (t: string, p: string) => `/channels/${t}/${p}`

/** What must not change when a request is refused: A's channels and token networks, its nonce and its tokens. */
async function snapshot(n: ApiNode = a) {
  return {
    state: stringify({ channels: n.node.state.channels, tokenNetworks: n.node.state.tokenNetworks }),
    nonce: await n.node.client.chain.publicClient.getTransactionCount({ address: n.node.address }),
    tokens: await readTokenBalance(n.node.client.chain, { token }),
  }
}

async function withoutGas<T>(n: ApiNode, run: () => Promise<T>): Promise<T> {
  await devnet.setBalance({ address: n.node.address, value: 0n })
  try {
    return await run()
  } finally {
    await devnet.setBalance({ address: n.node.address, value: parseEther('10000') })
  }
}

const synced = () => net.synced()

function expectError(r: { status: number; body: any }, status: number, message?: RegExp) {
  expect(r.status, JSON.stringify(r.body)).toBe(status)
  expect(typeof r.body?.errors).toBe('string')
  if (message) expect(r.body.errors).toMatch(message)
}

describe('GET before any channel', () => {
  it('lists nothing, and a missing channel is 404', async () => {
    expect(await a.get('/channels')).toMatchObject({ status: 200, body: [] })
    expect(await a.get(`/channels/${token}`)).toMatchObject({ status: 200, body: [] })
    expectError(await a.get(path(token, B)), 404, /could not be found/)
  })

  it('an unregistered token has no channels: 200 []', async () => {
    expect(await a.get(`/channels/${net.deployment.serviceToken}`)).toMatchObject({ status: 200, body: [] })
  })

  it('a path address that is not EIP-55 is 404', async () => {
    for (const p of [`/channels/${token.toLowerCase()}`, path(token.toLowerCase(), B), path(token, B.toLowerCase()), path('0x123', B), '/channels/nothex']) {
      expectError(await a.get(p), 404)
      expectError(await a.request('PATCH', p, { state: 'closed' }), 404)
    }
  })
})

describe('PUT /channels refused: nothing changes', () => {
  const open = (body: unknown) => a.request('PUT', '/channels', body)
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    before = await snapshot()
  })

  it('400: malformed JSON, no object, missing, unknown or ill-typed fields, a bad or zero address', async () => {
    const bad: unknown[] = [
      '{',
      '',
      '[]',
      '{}',
      'null',
      { token_address: token },
      { partner_address: B },
      { partner_address: B, token_address: token, extra: 1 },
      { partner_address: B.toLowerCase(), token_address: token },
      { partner_address: B, token_address: token.slice(2) },
      { partner_address: '0x0000000000000000000000000000000000000000', token_address: token },
      { partner_address: 42, token_address: token },
      { partner_address: { a: 1 }, token_address: token },
      { partner_address: B, token_address: token, total_deposit: '1.5' },
      { partner_address: B, token_address: token, total_deposit: 1.5 },
      { partner_address: B, token_address: token, total_deposit: '1e3' },
      { partner_address: B, token_address: token, total_deposit: '0x10' },
      { partner_address: B, token_address: token, total_deposit: true },
      { partner_address: B, token_address: token, settle_timeout: [40] },
    ]
    for (const body of bad) expectError(await open(body), 400)
  })

  it('409: timeouts, unregistered token, token without code, partner is us, bad numbers', async () => {
    const base = { partner_address: B, token_address: token }
    expectError(await open({ ...base, reveal_timeout: 0 }), 409, /reveal_timeout should be larger than zero/)
    expectError(await open({ ...base, settle_timeout: 30, reveal_timeout: 16 }), 409, /double the reveal_timeout/)
    // The node's default reveal timeout (10) counts when none is given.
    expectError(await open({ ...base, settle_timeout: 19 }), 409, /double the reveal_timeout/)
    expectError(await open({ ...base, settle_timeout: 4, reveal_timeout: 1 }), 409, /at least 5/)
    expectError(await open({ ...base, settle_timeout: 100_001 }), 409, /exceeds max of 100000/)
    expectError(await open({ ...base, token_address: net.deployment.serviceToken }), 409, /does not exist/)
    expectError(await open({ ...base, token_address: getAddress('0x00000000000000000000000000000000000000aa') }), 409, /does not contain code/)
    expectError(await open({ ...base, partner_address: A }), 409, /same address/)
    expectError(await open({ ...base, total_deposit: -1 }), 409)
    expectError(await open({ ...base, total_deposit: (maxUint256 + 1n).toString() }), 409)
    expectError(await open({ ...base, settle_timeout: '-40' }), 409)
  })

  it('402: a total_deposit above our token balance, checked before opening', async () => {
    const balance = await readTokenBalance(a.node.client.chain, { token })
    expectError(await open({ partner_address: B, token_address: token, total_deposit: (balance + 1n).toString() }), 402, /Not enough balance/)
  })

  it('402: no ETH for gas', async () => {
    await withoutGas(a, async () => {
      expectError(await open({ partner_address: B, token_address: token }), 402, /insufficient ETH/)
      expectError(await open({ partner_address: B, token_address: token, total_deposit: 10 }), 402, /insufficient ETH/)
    })
  })

  it('left no trace', async () => {
    expect(await snapshot()).toEqual(before)
    expect(a.node.state.channels).toEqual({})
    expect(a.internalErrors).toEqual([])
  })
})

let channelId: string

describe('PUT /channels opens', () => {
  it('201 with the Channel object of docs/rest-api.md, the deposit made on-chain', async () => {
    const tokensBefore = await readTokenBalance(a.node.client.chain, { token })
    const r = await a.request('PUT', '/channels', { partner_address: B, token_address: token, total_deposit: '1000', settle_timeout: 40, reveal_timeout: '10' })
    expect(r.status, r.text).toBe(201)
    expect(Object.keys(r.body)).toEqual(SPEC_FIELDS)
    expect(r.body).toEqual({
      channel_identifier: '1',
      token_network_address: net.tokenNetwork,
      partner_address: B,
      token_address: token,
      balance: '1000',
      total_deposit: '1000',
      total_withdraw: '0',
      state: 'opened',
      settle_timeout: '40',
      reveal_timeout: '10',
    })
    channelId = r.body.channel_identifier
    const onchain = await readParticipantInfo(a.node.client.chain, { tokenNetwork: net.tokenNetwork, channelId: 1n, participant: A, partner: B })
    expect(onchain.deposit).toBe(1000n)
    expect(await readTokenBalance(a.node.client.chain, { token })).toBe(tokensBefore - 1000n)
  })

  it('GET lists it, by token and by partner; the partner sees it from its side', async () => {
    const one = (await a.get(path(token, B))).body
    expect(one.channel_identifier).toBe(channelId)
    expect((await a.get('/channels')).body).toEqual([one])
    expect((await a.get(`/channels/${token}`)).body).toEqual([one])
    await eventually(async () => {
      const r = await b.get(path(token, A))
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        channel_identifier: channelId,
        partner_address: A,
        balance: '0',
        total_deposit: '0',
        state: 'opened',
        settle_timeout: '40',
      })
    })
  })

  it('a repeated PUT is 200 with the open channel as it is (timeouts too) and sends nothing; a larger total_deposit tops it up; a smaller one is 409', async () => {
    const before = await snapshot()
    const again = await a.request('PUT', '/channels', { partner_address: B, token_address: token, total_deposit: '1000' })
    expect(again.status).toBe(200)
    expect(again.body).toEqual((await a.get(path(token, B))).body)
    expect(await a.request('PUT', '/channels', { partner_address: B, token_address: token, total_deposit: 0, settle_timeout: 100 })).toMatchObject({
      status: 200,
      body: again.body,
    })
    expect(await snapshot()).toEqual(before)
    expectError(await a.request('PUT', '/channels', { partner_address: B, token_address: token, total_deposit: '999' }), 409, /did not increase/)
    expect(await snapshot()).toEqual(before)
    const more = await a.request('PUT', '/channels', { partner_address: B, token_address: token, total_deposit: '1200' })
    expect(more.status).toBe(200)
    expect(more.body).toMatchObject({ channel_identifier: channelId, total_deposit: '1200', balance: '1200' })
  })

  it('two PUTs at once for a new partner open one channel: one 201, one 200', async () => {
    const body = { partner_address: D, token_address: token }
    const replies = await Promise.all([a.request('PUT', '/channels', body), a.request('PUT', '/channels', body)])
    expect(replies.map((r) => r.status).sort()).toEqual([200, 201])
    expect(replies[0]!.body.channel_identifier).toBe(replies[1]!.body.channel_identifier)
    expect((await a.get('/channels')).body).toHaveLength(2)
  })
})

describe('PATCH refused: nothing changes', () => {
  const patch = (body: unknown, p = path(token, B)) => a.request('PATCH', p, body)
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    before = await snapshot()
  })

  it('400: malformed JSON, nothing to do, unknown fields, a state other than closed', async () => {
    for (const body of [
      '{',
      '',
      '[]',
      '{}',
      '"closed"',
      { state: null },
      { state: null, total_deposit: null },
      { foo: 1 },
      { state: 'inlimbo' },
      { state: 1 },
      { total_deposit: '12.5' },
      { reveal_timeout: false },
    ])
      expectError(await patch(body), 400)
    expectError(await patch({ state: 'opened' }), 400, /invalid channel state/)
    expectError(await patch({ state: 'settled' }), 400, /invalid channel state/)
  })

  it('409: fields together, no such channel, no increase, over the balance, bad reveal timeouts, negative or huge numbers', async () => {
    expectError(await patch({ state: 'closed', total_deposit: 2000 }), 409, /at the same time/)
    expectError(await patch({ total_deposit: 2000, total_withdraw: 1 }), 409, /at the same time/)
    expectError(await patch({ reveal_timeout: 12, state: 'closed' }), 409, /at the same time/)
    expectError(await patch({ reveal_timeout: 12, total_withdraw: 1, total_deposit: 5000 }), 409, /at the same time/)
    // No channel with C: 409 for a PATCH (GET would be 404), whatever the field.
    for (const body of [{ state: 'closed' }, { state: 'opened' }, { total_deposit: 5 }, { total_withdraw: 5 }, { reveal_timeout: 5 }])
      expectError(await patch(body, path(token, C)), 409, /not found/)
    expectError(await patch({ total_deposit: 5 }, path(net.deployment.serviceToken, B)), 409, /not found/)
    expectError(await patch({ total_deposit: '1200' }), 409, /did not increase/)
    expectError(await patch({ total_deposit: '1' }), 409, /did not increase/)
    expectError(await patch({ total_deposit: -5 }), 409)
    expectError(await patch({ total_deposit: (maxUint256 + 1n).toString() }), 409)
    expectError(await patch({ total_withdraw: 0 }), 409, /did not increase/)
    expectError(await patch({ total_withdraw: 1201 }), 409, /bigger than the current balance/)
    expectError(await patch({ total_withdraw: '-1' }), 409)
    expectError(await patch({ reveal_timeout: 0 }), 409, /larger than zero/)
    expectError(await patch({ reveal_timeout: 21 }), 409, /double the reveal_timeout/)
  })

  it('402: a deposit above our token balance; no ETH for gas to close, withdraw or deposit', async () => {
    const balance = await readTokenBalance(a.node.client.chain, { token })
    expectError(await patch({ total_deposit: (1200n + balance + 1n).toString() }), 402, /Not enough balance/)
    await withoutGas(a, async () => {
      expectError(await patch({ state: 'closed' }), 402, /insufficient ETH/)
      expectError(await patch({ total_withdraw: 10 }), 402, /insufficient ETH/)
      expectError(await patch({ total_deposit: 1300 }), 402, /insufficient ETH/)
    })
  })

  it('left no trace', async () => {
    expect(await snapshot()).toEqual(before)
    expect(a.internalErrors).toEqual([])
  })
})

describe('PATCH acts', () => {
  const patch = (body: unknown) => a.request('PATCH', path(token, B), body)

  it('reveal_timeout: changes only the local channel', async () => {
    const nonce = await a.node.client.chain.publicClient.getTransactionCount({ address: A })
    const r = await patch({ reveal_timeout: '15' })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ reveal_timeout: '15', settle_timeout: '40', state: 'opened' })
    expect((await a.get(path(token, B))).body.reveal_timeout).toBe('15')
    expect(await a.node.client.chain.publicClient.getTransactionCount({ address: A })).toBe(nonce)
    expect((await patch({ reveal_timeout: 20 })).body.reveal_timeout).toBe('20')
    expect((await patch({ reveal_timeout: 10 })).body.reveal_timeout).toBe('10')
  })

  it('total_deposit: returns once the new total is synced; a repeat is 409', async () => {
    const r = await patch({ total_deposit: 2000 })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ total_deposit: '2000', balance: '2000' })
    expect((await readParticipantInfo(a.node.client.chain, { tokenNetwork: net.tokenNetwork, channelId: 1n, participant: A, partner: B })).deposit).toBe(2000n)
    expectError(await patch({ total_deposit: 2000 }), 409, /did not increase/)
  })

  it('balance is deposit - withdrawn - sent + received', async () => {
    // B deposits through its own API, then the two pay each other.
    expect((await b.request('PATCH', path(token, A), { total_deposit: 500 })).status).toBe(200)
    await synced()
    await sendPayment(a.node.client, { token: net.token, target: B, amount: 70n })
    await sendPayment(b.node.client, { token: net.token, target: A, amount: 30n })
    await eventually(async () => expect((await a.get(path(token, B))).body.balance).toBe(String(2000 - 70 + 30)))
    await eventually(async () => expect((await b.get(path(token, A))).body).toMatchObject({ balance: String(500 - 30 + 70), total_deposit: '500' }))
  })

  it('total_withdraw: the partner co-signs, and the call returns once the withdraw is on-chain', async () => {
    const tokensBefore = await readTokenBalance(a.node.client.chain, { token })
    const r = await patch({ total_withdraw: '100' })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ total_withdraw: '100', total_deposit: '2000', balance: String(2000 - 100 - 70 + 30) })
    expect(await readTokenBalance(a.node.client.chain, { token })).toBe(tokensBefore + 100n)
    expect(
      (await readParticipantInfo(a.node.client.chain, { tokenNetwork: net.tokenNetwork, channelId: 1n, participant: A, partner: B })).withdrawnAmount,
    ).toBe(100n)
    expectError(await patch({ total_withdraw: '100' }), 409, /did not increase/)
  })

  it('total_withdraw with a partner that never confirms: 409 once the request expires, nothing withdrawn', async () => {
    const opened = await a.request('PUT', '/channels', { partner_address: C, token_address: token, total_deposit: 100 })
    expect(opened.status).toBe(201)
    const pending = a.request('PATCH', path(token, C), { total_withdraw: 10 })
    // The request expires 2 * reveal_timeout blocks after it was made; blocks come only when mined.
    let done = false
    void pending.finally(() => (done = true))
    while (!done) {
      await devnet.mine({ blocks: 5 })
      await new Promise((r) => setTimeout(r, 100))
    }
    expectError(await pending, 409, /expired/)
    expect((await a.get(path(token, C))).body).toMatchObject({ total_withdraw: '0', balance: '100', state: 'opened' })
  })

  it('state closed: returns once the close is mined and synced', async () => {
    const r = await patch({ state: 'closed' })
    expect(r.status, r.text).toBe(200)
    expect(Object.keys(r.body)).toEqual(SPEC_FIELDS)
    expect(r.body).toMatchObject({ channel_identifier: channelId, state: 'closed', total_withdraw: '100' })
    expect((await readChannelInfo(a.node.client.chain, { tokenNetwork: net.tokenNetwork, channelId: 1n, participant1: A, participant2: B })).state).toBe(
      'closed',
    )
    // B answers the close with A's latest proof (it received 70).
    await eventually(() => expect(a.node.client.channel(net.tokenNetwork, B)!.our.onchainNonce).toBeGreaterThan(0n))
    // Closed is still unsettled: listed.
    expect((await a.get('/channels')).body.map((c: any) => c.state).sort()).toEqual(['closed', 'opened', 'opened'])
  })

  it('a closed channel refuses every change with 409, and a new PUT with 409 (not open)', async () => {
    const before = await snapshot()
    expectError(await patch({ state: 'closed' }), 409, /closed/)
    expectError(await patch({ total_deposit: 5000 }), 409, /closed/)
    expectError(await patch({ total_withdraw: 500 }), 409, /closed/)
    expectError(await patch({ reveal_timeout: 12 }), 409, /closed/)
    expectError(await a.request('PUT', '/channels', { partner_address: B, token_address: token }), 409, /not in an open state/)
    expect(await snapshot()).toEqual(before)
  })

  it('once settled the channel leaves the listings, and a new one can be opened', async () => {
    await devnet.mine({ blocks: 40 + 10 + 2 })
    await eventually(async () => expect((await a.get(path(token, B))).status).toBe(404), 30_000)
    expect((await a.get('/channels')).body.map((c: any) => c.partner_address).sort()).toEqual([C, D].sort())
    const r = await a.request('PUT', '/channels', { partner_address: B, token_address: token })
    expect(r.status, r.text).toBe(201)
    expect(BigInt(r.body.channel_identifier)).toBeGreaterThan(BigInt(channelId))
  })
})

describe('deposit limits of a token network', () => {
  let tt2: Address
  beforeAll(async () => {
    tt2 = net.deployment.tokens.TT2
    const deployer = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
    const queue = createTransactionQueue(deployer)
    await registerToken(deployer, queue, {
      registry: net.deployment.contracts.TokenNetworkRegistry.address,
      token: tt2,
      limits: { channelParticipantDepositLimit: 100n, tokenNetworkDepositLimit: 130n },
    })
    await mintTokens(deployer, queue, { token: tt2, amount: 10_000n, to: A })
    await synced()
  })

  it('409 above the participant limit or the network limit, before anything is sent', async () => {
    const before = await snapshot()
    expectError(await a.request('PUT', '/channels', { partner_address: B, token_address: tt2, total_deposit: 101 }), 409, /participant deposit limit/)
    expect(await snapshot()).toEqual(before)
    const opened = await a.request('PUT', '/channels', { partner_address: B, token_address: tt2, total_deposit: 60 })
    expect(opened.status, opened.text).toBe(201)
    const after = await snapshot()
    expectError(await a.request('PATCH', path(tt2, B), { total_deposit: 101 }), 409, /participant deposit limit/)
    // 60 held, +80 > 130: the network's limit is checked first, as on the Raiden node.
    expectError(await a.request('PATCH', path(tt2, B), { total_deposit: 140 }), 409, /token network deposit limit/)
    expectError(await a.request('PUT', '/channels', { partner_address: E, token_address: tt2, total_deposit: 80 }), 409, /token network deposit limit/)
    expect(await snapshot()).toEqual(after)
    expect((await a.request('PATCH', path(tt2, B), { total_deposit: 100 })).body).toMatchObject({ total_deposit: '100' })
  })
})

describe('fuzzing: never a 500, never a change', () => {
  // Now: TTT channels with B and D are open with deposit 0, with C holds 100; the TT2 channel with B is at its
  // deposit limit. E has no channel. Requests that would legitimately act are left out with fc.pre.
  const garbage = () =>
    fc.oneof(
      fc.constantFrom<unknown>('', '0x', null, true, false, [], {}, '1.5', '1e3', '0x10', ' 12 ', '1_000', '-0', '00', 'closed'),
      fc.string(),
      fc.double(),
      fc.array(fc.integer(), { maxLength: 2 }),
      fc.object({ maxDepth: 1 }),
    )
  const addressLike = (...valid: unknown[]) =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...valid) },
      { weight: 1, arbitrary: fc.constantFrom<unknown>(D.toLowerCase(), C.toLowerCase(), '0x0000000000000000000000000000000000000000') },
      { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: 44 }).map((h) => `0x${h}`) },
      { weight: 1, arbitrary: garbage() },
    )
  const integerLike = (low: bigint, high: bigint) =>
    fc.oneof(
      { weight: 4, arbitrary: fc.bigInt({ min: low, max: high }).map(String) },
      { weight: 2, arbitrary: fc.bigInt({ min: low, max: high }).map(Number) },
      { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }).map(String) },
      { weight: 1, arbitrary: fc.constantFrom<unknown>('0', 0, -1, (maxUint256 + 1n).toString(), maxUint256.toString()) },
      { weight: 1, arbitrary: garbage() },
    )
  /** Absent in `absent` cases out of `absent + 1`, so that bodies are often well-formed. */
  const sometimes = <T>(arb: fc.Arbitrary<T>, absent = 1) => fc.oneof({ weight: absent, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb })
  const junk = sometimes(fc.anything(), 10)

  /** A value the API reads as a positive integer (a JSON integer or a decimal string). */
  const positiveInteger = (v: unknown) => (typeof v === 'string' || typeof v === 'number') && /^[1-9]\d*$/.test(typeof v === 'string' ? v : JSON.stringify(v))

  /** What each request below must leave alone. */
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    before = await snapshot()
  })

  /** A PUT that would legitimately act: a TT2 channel with D, a top-up we can pay of a TTT channel with deposit 0 (B, D). Left out. */
  const acts = (body: Record<string, unknown>) =>
    (body.token_address === net.deployment.tokens.TT2 && body.partner_address === D) ||
    ((body.partner_address === D || body.partner_address === B) &&
      body.token_address === token &&
      positiveInteger(body.total_deposit) &&
      BigInt(String(body.total_deposit)) <= before.tokens)

  it('PUT /channels with arbitrary bodies', async () => {
    const bodies = fc.record(
      {
        partner_address: addressLike(D, B, A),
        token_address: addressLike(
          token,
          token,
          token,
          net.deployment.tokens.TT2,
          net.deployment.serviceToken,
          net.deployment.contracts.SecretRegistry.address,
          getAddress('0x00000000000000000000000000000000000000aa'),
        ),
        total_deposit: sometimes(integerLike(0n, 2n * 10n ** 21n)),
        settle_timeout: sometimes(integerLike(0n, 120_000n)),
        reveal_timeout: sometimes(integerLike(0n, 100n)),
        junk,
      },
      { requiredKeys: [] },
    )
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        fc.pre(!acts(body))
        const r = await a.request('PUT', '/channels', body)
        expect([200, 400, 402, 409], `${JSON.stringify(body)} -> ${r.text}`).toContain(r.status)
        if (r.status === 200) expect(r.body.partner_address).toMatch(new RegExp(`^(${B}|${D})$`))
        else expect(typeof r.body?.errors, r.text).toBe('string')
      }),
      { numRuns: 300 },
    )
    // Each status has its own test above (a property holds for every input; coverage is shown by built cases).
    expect(await snapshot()).toEqual(before)
    expect(a.internalErrors).toEqual([])
  })

  it('PATCH with arbitrary bodies and paths', async () => {
    const acting = [path(token, D), path(token, C), path(token, B), path(net.deployment.tokens.TT2, B)]
    const bodies = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record(
          {
            state: sometimes(fc.oneof(fc.constantFrom<unknown>('closed', 'opened', 'settled', 'CLOSED'), garbage())),
            total_deposit: sometimes(integerLike(0n, 2n * 10n ** 21n)),
            total_withdraw: sometimes(integerLike(0n, 200n)),
            reveal_timeout: sometimes(integerLike(0n, 30n)),
            junk,
          },
          { requiredKeys: [] },
        ),
      },
      { weight: 1, arbitrary: fc.anything() },
      { weight: 1, arbitrary: fc.string() },
    )
    const paths = fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(...acting, path(token, A), path(token, E), path(net.deployment.serviceToken, D), path(token, D.toLowerCase())) },
      { weight: 1, arbitrary: fc.tuple(fc.string(), fc.string()).map(([x, y]) => `/channels/${encodeURIComponent(x)}/${encodeURIComponent(y)}`) },
    )
    await fc.assert(
      fc.asyncProperty(paths, bodies, async (p, body) => {
        // One well-formed field alone on an open channel may act (close, raise a deposit, a withdraw or the reveal timeout).
        if (body && typeof body === 'object' && !Array.isArray(body) && acting.includes(p)) {
          const given = Object.entries(JSON.parse(JSON.stringify(body)) as Record<string, unknown>).filter(([, v]) => v !== null)
          const [field, v] = given[0] ?? []
          fc.pre(!(given.length === 1 && (field === 'state' ? v === 'closed' : field !== 'junk' && positiveInteger(v))))
        }
        const r = await a.request('PATCH', p, typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body))
        expect(r.status, `${p} ${JSON.stringify(body)} -> ${r.text}`).not.toBe(500)
        expect(typeof r.body?.errors, r.text).toBe('string')
      }),
      { numRuns: 250 },
    )
    expect(await snapshot()).toEqual(before)
    expect(a.internalErrors).toEqual([])
  })

  it('GET with arbitrary paths', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string(), fc.constantFrom<string>(token, B, D, A)), { maxLength: 3 }), async (parts) => {
        const r = await a.get(`/channels/${parts.map(encodeURIComponent).join('/')}`)
        expect(r.status, r.text).not.toBe(500)
        expect([200, 404, 405]).toContain(r.status)
      }),
      { numRuns: 100 },
    )
    expect(await snapshot()).toEqual(before)
    expect(a.internalErrors).toEqual([])
  })
})
