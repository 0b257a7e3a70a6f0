import fc from 'fast-check'
import { maxUint64, maxUint256, bytesToHex, getAddress, sha256, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readTokenBalance, sendProtocolTransaction } from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { balance } from '../../src/protocol/channel/amounts.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { startSecretResolver, type SecretResolver } from './support/secretResolver.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import { pathSegment } from './support/fuzz.ts'

let net: ApiNet
let resolver: SecretResolver
let a: ApiNode
let b: ApiNode
let c: ApiNode
let d: ApiNode
/** A partner that runs no node: payments to it cannot complete. */
const offline = privateKeyToAddress(anvilKeys[9])
const LOG_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
/** Raiden's fields, and (beyond Raiden) the route and the fee. */
const RESULT_KEYS = ['amount', 'fee', 'identifier', 'initiator_address', 'route', 'secret', 'secret_hash', 'target_address', 'token_address']

beforeAll(async () => {
  resolver = await startSecretResolver()
  // LevelDB, as `sluice serve` runs: reads of the history take the time they take there.
  net = await startApiNet({ nodes: 4, node: { resolverEndpoint: resolver.url, durable: true } })
  ;[a, b, c, d] = net.nodes as [ApiNode, ApiNode, ApiNode, ApiNode]
  // A-B and B-C carry payments (A->C is mediated by B); A-offline never completes one; D has no channel.
  await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 1000n })
  await openChannelOnChain(b.node.client, { tokenNetwork: net.tokenNetwork, partner: c.node.address, totalDeposit: 500n })
  await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: offline, totalDeposit: 100n })
  await net.synced()
}, 120_000)

afterAll(async () => {
  await resolver?.close()
  await net?.stopAll()
})

const pay = (from: ApiNode, target: Address | string, body: unknown, token: Address | string = net.token) =>
  from.request('POST', `/payments/${token}/${target}`, body)
const randomSecret = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
const own = (n: ApiNode, partner: Address) => {
  const ch = n.node.client.channel(net.tokenNetwork, partner)!
  return balance(ch.our, ch.partnerEnd)
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function mine(blocks: number) {
  await fetch(net.anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: [`0x${blocks.toString(16)}`] }),
  })
}

/** What a request must not change: the node's channels and transfers, its stored history and events, its tokens on-chain. */
async function snapshot(n: ApiNode) {
  const state = n.node.state
  return {
    channels: JSON.stringify(state.channels, (_, v) => (typeof v === 'bigint' ? v.toString() : v)),
    transfers: [Object.keys(state.initiators).length, Object.keys(state.mediators).length, Object.keys(state.targets).length],
    payments: (await n.node.client.store.payments({})).length,
    events: (await n.node.client.store.events({})).length,
    tokens: await readTokenBalance(n.node.client.chain, { token: net.token }),
  }
}

/** Nothing in flight anywhere (earlier payments' unlocks have been processed). */
async function quiet() {
  await eventually(() => {
    for (const n of [a, b, c]) {
      expect(Object.keys(n.node.state.initiators)).toEqual([])
      for (const ch of Object.values(n.node.state.channels))
        if (ch.partner !== offline) expect([ch.our.locks.length, ch.partnerEnd.locks.length]).toEqual([0, 0])
    }
  })
}

describe('POST /payments/<token>/<target>: success', () => {
  it('a direct payment answers 200 with the payment result once it succeeded', async () => {
    const before = own(b, a.node.address)
    const r = await pay(a, b.node.address, { amount: '10', identifier: '4242' })
    expect(r.status, r.text).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(RESULT_KEYS)
    expect(r.body).toMatchObject({
      initiator_address: a.node.address,
      target_address: b.node.address,
      token_address: net.token,
      amount: '10',
      identifier: '4242',
      // Direct: the one hop is the target, and no mediator takes a fee.
      route: [b.node.address],
      fee: '0',
    })
    expect(r.body.secret).toMatch(/^0x[0-9a-f]{64}$/)
    expect(r.body.secret_hash).toBe(sha256(r.body.secret))
    await eventually(() => expect(own(b, a.node.address)).toBe(before + 10n))
  })

  it('a mediated payment A->B->C (amount as a JSON integer, random identifier)', async () => {
    const before = own(c, b.node.address)
    const r = await pay(a, c.node.address, { amount: 7 })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ initiator_address: a.node.address, target_address: c.node.address, amount: '7', route: [b.node.address, c.node.address] })
    expect(BigInt(r.body.identifier)).toBeGreaterThan(0n)
    expect(BigInt(r.body.identifier)).toBeLessThanOrEqual(maxUint64)
    await eventually(() => expect(own(c, b.node.address)).toBe(before + 7n))
  })

  it('GET /tokens/<token>/network: our channels with what each side could pay, exactly; the others as the chain shows them', async () => {
    await quiet()
    const r = await a.get(`/tokens/${net.token}/network`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ token_network_address: net.tokenNetwork, our_address: a.node.address, synced_block: expect.stringMatching(/^\d+$/) })
    const between = (x: Address, y: Address) =>
      r.body.channels.filter(
        (ch: { participant1: string; participant2: string }) =>
          new Set([ch.participant1, ch.participant2]).size === 2 && [ch.participant1, ch.participant2].every((p) => p === x || p === y),
      )
    const [ab] = between(a.node.address, b.node.address)
    // Ours: A first, and both sides' balances as each node itself has them after the payments above.
    expect(ab).toMatchObject({
      participant1: a.node.address,
      participant2: b.node.address,
      state: 'opened',
      balance1: String(own(a, b.node.address)),
      balance2: String(own(b, a.node.address)),
    })
    // Not ours: what the chain says, B's deposit of 500 and nothing on C's side.
    const [bc] = between(b.node.address, c.node.address)
    expect(bc).toMatchObject({ state: 'opened' })
    expect(new Set([bc.balance1, bc.balance2])).toEqual(new Set(['500', '0']))
    expect((await a.get(`/tokens/${net.token}/network`)).body).toEqual(r.body)
    expect((await a.get(`/tokens/${getAddress(offline)}/network`)).status).toBe(404)
  })

  it("uses the caller's secret, with or without its SHA-256 hash", async () => {
    const secret = randomSecret()
    const r = await pay(a, b.node.address, { amount: '3', secret, secret_hash: sha256(secret) })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ secret, secret_hash: sha256(secret) })
    const other = randomSecret()
    const r2 = await pay(a, b.node.address, { amount: '1', secret: other.toUpperCase().replace('0X', '0x') })
    expect(r2.status, r2.text).toBe(200)
    expect(r2.body).toMatchObject({ secret: other, secret_hash: sha256(other) })
  })

  it('accepts a lock_timeout above the reveal timeout (10) and up to the settle timeout (40)', async () => {
    // 11 is accepted too, but its lock expires 10 blocks ahead: the target finds that too close to ask for the
    // secret, so such a payment fails when the lock expires (Raiden's targets do the same).
    for (const lock_timeout of ['12', 40]) {
      const r = await pay(a, b.node.address, { amount: '1', lock_timeout })
      expect(r.status, `${lock_timeout}: ${r.text}`).toBe(200)
    }
  })

  it('with only secret_hash, asks the secret resolver (docs/rest-api.md payload) and sends the secret it answers', async () => {
    const secret = randomSecret()
    const secrethash = sha256(secret)
    resolver.secrets.set(secrethash, secret)
    const block = await a.node.client.chain.publicClient.getBlockNumber()
    const r = await pay(a, c.node.address, { amount: '4', identifier: '777', secret_hash: secrethash })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ secret, secret_hash: secrethash, identifier: '777', target_address: c.node.address })
    const asked = resolver.requests.filter((q) => q.body.secrethash === secrethash)
    expect(asked).toHaveLength(1)
    expect(asked[0]!.contentType).toMatch(/^application\/json/)
    expect(Object.keys(asked[0]!.body).sort()).toEqual([
      'amount',
      'expiration',
      'payment_identifier',
      'payment_recipient',
      'payment_sender',
      'reveal_timeout',
      'secrethash',
      'settle_timeout',
      'token',
    ])
    // Numbers are JSON integers, as docs/rest-api.md types them; addresses EIP-55.
    expect(asked[0]!.body).toMatchObject({
      token: net.token,
      secrethash,
      amount: 4,
      payment_identifier: 777,
      payment_sender: a.node.address,
      payment_recipient: c.node.address,
      reveal_timeout: 10,
      settle_timeout: 40,
    })
    const expiration = asked[0]!.body.expiration as number
    expect(Number.isInteger(expiration)).toBe(true)
    expect(BigInt(expiration)).toBeGreaterThan(block)
  })

  it('joins a request with the identifier of a payment in flight; another amount with it is 409', async () => {
    await quiet()
    const secret = randomSecret()
    const secrethash = sha256(secret)
    resolver.secrets.set(secrethash, secret)
    resolver.hold = true
    try {
      const first = pay(a, b.node.address, { amount: '6', identifier: '9001', secret_hash: secrethash })
      await resolver.requested(secrethash)
      const joined = pay(a, b.node.address, { amount: '6', identifier: '9001', secret_hash: secrethash })
      const before = await snapshot(a)
      const conflict = await pay(a, b.node.address, { amount: '7', identifier: '9001' })
      expect(conflict.status, conflict.text).toBe(409)
      expect(conflict.body.errors).toMatch(/already used for a different payment .*in flight/)
      const sameHash = await pay(a, b.node.address, { amount: '1', identifier: '9002', secret_hash: secrethash })
      expect(sameHash.status, sameHash.text).toBe(409)
      expect(sameHash.body.errors).toMatch(/already used/)
      expect(await snapshot(a)).toEqual(before)
      await sleep(300)
      resolver.hold = false
      resolver.release()
      const [r1, r2] = await Promise.all([first, joined])
      expect(r1.status, r1.text).toBe(200)
      expect(r2.body).toEqual(r1.body)
      expect(r1.body).toMatchObject({ amount: '6', identifier: '9001', secret })
    } finally {
      resolver.hold = false
      resolver.release()
    }
    // One payment: the resolver was asked once, and the history has one entry for it.
    expect(resolver.requests.filter((q) => q.body.secrethash === secrethash)).toHaveLength(1)
    const history = (await a.get(`/payments/${net.token}/${b.node.address}`)).body as { identifier?: string }[]
    expect(history.filter((e) => e.identifier === '9001')).toHaveLength(1)
  })

  it('50 identical and 50 conflicting requests at once with one identifier: one payment; each other request joins it or is 409', async () => {
    await quiet()
    const identifier = '9500'
    const before = own(a, b.node.address)
    const received = own(b, a.node.address)
    // Identical and conflicting requests interleaved, all in flight together: whichever the node takes first is the payment.
    const bodies = Array.from({ length: 100 }, (_, i) => ({ amount: i % 2 === 0 ? '2' : String(3 + (i >> 1)), identifier }))
    const replies = await Promise.all(bodies.map((body) => pay(a, b.node.address, body)))
    const paid = replies.filter((r) => r.status === 200)

    expect(paid.length, replies.map((r) => r.status).join(',')).toBeGreaterThan(0)
    const amount = BigInt(paid[0]!.body.amount)
    // Every request with the winner's amount got the same result; every other request got a 409 naming the conflict.
    for (const [i, r] of replies.entries()) {
      if (BigInt(bodies[i]!.amount) === amount) expect(r.body, r.text).toEqual(paid[0]!.body)
      else expect(r.body, r.text).toMatchObject({ code: 'CONFLICT', errors: expect.stringMatching(/already used for a different payment/) })
    }
    await quiet()
    expect(own(a, b.node.address)).toBe(before - amount)
    expect(own(b, a.node.address)).toBe(received + amount)
    const history = (await a.get(`/payments/${net.token}/${b.node.address}`)).body as { identifier?: string; event: string }[]
    expect(history.filter((e) => e.identifier === identifier)).toEqual([expect.objectContaining({ event: 'EventPaymentSentSuccess', amount: String(amount) })])
  })

  it('the identifier is reserved before the first await: two calls in one tick, the same and another payment, make one payment', async () => {
    await quiet()
    const before = own(a, b.node.address)
    const request = { token: net.token, target: b.node.address, amount: 2n, identifier: 9600n }
    // No await between the calls: the second runs while the first is still reading the payment history.
    const calls = [sendPayment(a.node.client, request), sendPayment(a.node.client, request), sendPayment(a.node.client, { ...request, amount: 3n })]
    const [first, joined, other] = await Promise.allSettled(calls)
    expect(first).toMatchObject({ status: 'fulfilled', value: { amount: 2n, identifier: 9600n } })
    expect(joined).toEqual(first)
    expect(other).toMatchObject({ status: 'rejected', reason: { code: 'CONFLICT' } })
    await quiet()
    expect(own(a, b.node.address)).toBe(before - 2n)
  })

  it('a request retried after the payment completed returns the first result and pays nothing; the identifier for another payment is 409', async () => {
    await quiet()
    const first = await pay(a, b.node.address, { amount: '3', identifier: '9100' })
    expect(first.status, first.text).toBe(200)
    const before = await snapshot(a)
    const again = await pay(a, b.node.address, { amount: '3', identifier: '9100' })
    expect(again.status, again.text).toBe(200)
    expect(again.body).toEqual(first.body)
    for (const other of [
      { amount: '4', identifier: '9100' },
      { amount: '3', identifier: '9100', secret_hash: sha256(randomSecret()) },
    ]) {
      const conflict = await pay(a, b.node.address, other)
      expect(conflict.status, conflict.text).toBe(409)
      expect(conflict.body).toMatchObject({ code: 'CONFLICT', errors: expect.stringMatching(/already used for a different payment/) })
    }
    expect(await snapshot(a)).toEqual(before)
    const history = (await a.get(`/payments/${net.token}/${b.node.address}`)).body as { identifier?: string }[]
    expect(history.filter((e) => e.identifier === '9100')).toHaveLength(1)
  })
})

describe('POST /payments/<token>/<target>: failures change nothing', () => {
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    await quiet()
    before = await snapshot(a)
  })

  it('400: malformed JSON, wrong types and formats, missing amount, unknown fields', async () => {
    const secret = randomSecret()
    const bodies: unknown[] = [
      '{"amount": ',
      'amount=1',
      '',
      '[]',
      '{}',
      '"1"',
      { identifier: '1' },
      { amount: null },
      { amount: '1.5' },
      { amount: 1.5 },
      { amount: '1e3' },
      { amount: '0x10' },
      { amount: true },
      { amount: ['1'] },
      { amount: '1', identifier: 'abc' },
      { amount: '1', lock_timeout: '2.0' },
      { amount: '1', secret: '0x123' },
      { amount: '1', secret: secret.slice(2) },
      { amount: '1', secret: `0x${'zz'.repeat(32)}` },
      { amount: '1', secret_hash: 12 },
      { amount: '1', secret_hash: {} },
      { amount: '1', paths: [] },
      { amount: '1', initiator_address: a.node.address },
    ]
    for (const body of bodies) {
      const r = await pay(a, b.node.address, body)
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(400)
      expect(typeof r.body.errors, JSON.stringify(body)).toBe('string')
    }
    expect(await snapshot(a)).toEqual(before)
  })

  it('404: token or target address not EIP-55', async () => {
    const paths = [
      [net.token.toLowerCase(), b.node.address],
      [net.token, b.node.address.toLowerCase()],
      [net.token, 'bob'],
      ['0x12', b.node.address],
    ] as const
    for (const [token, target] of paths) {
      const r = await pay(a, target, { amount: '1' }, token)
      expect(r.status, `${token}/${target}`).toBe(404)
      expect(typeof r.body.errors).toBe('string')
    }
    expect(await snapshot(a)).toEqual(before)
  })

  it('409: invalid amount, target is us, unknown token, invalid identifier, mismatched secret, lock_timeout out of range', async () => {
    const secret = randomSecret()
    const unknownToken = getAddress(`0x${'ab'.repeat(20)}`)
    const cases: [string, Address | string, unknown, RegExp][] = [
      [net.token, b.node.address, { amount: '0' }, /amount/],
      [net.token, b.node.address, { amount: '-1' }, /amount/],
      [net.token, b.node.address, { amount: -5 }, /amount/],
      [net.token, b.node.address, { amount: (maxUint256 + 1n).toString() }, /amount/],
      [net.token, b.node.address, `{"amount": ${maxUint256 + 1n}}`, /amount/],
      [net.token, a.node.address, { amount: '1' }, /target/],
      [net.token, `0x${'0'.repeat(40)}`, { amount: '1' }, /zero address/],
      [unknownToken, b.node.address, { amount: '1' }, /token/],
      [net.token, b.node.address, { amount: '1', identifier: '0' }, /identifier/],
      [net.token, b.node.address, { amount: '1', identifier: (maxUint64 + 1n).toString() }, /identifier/],
      [net.token, b.node.address, { amount: '1', secret, secret_hash: sha256(randomSecret()) }, /secret/],
      [net.token, b.node.address, { amount: '1', lock_timeout: '10' }, /lock_timeout/],
      [net.token, b.node.address, { amount: '1', lock_timeout: '41' }, /lock_timeout/],
      [net.token, b.node.address, { amount: '1', lock_timeout: '0' }, /lock_timeout/],
      [net.token, b.node.address, { amount: '1', lock_timeout: (maxUint256 + 1n).toString() }, /lock_timeout/],
    ]
    for (const [token, target, body, message] of cases) {
      const r = await pay(a, target, body, token)
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(409)
      expect(r.body.errors, JSON.stringify(body)).toMatch(message)
    }
    expect(await snapshot(a)).toEqual(before)
  })

  it('409: no path to the target, or no channel at all', async () => {
    const noPath = await pay(a, d.node.address, { amount: '1' })
    expect(noPath.status, noPath.text).toBe(409)
    expect(noPath.body.errors).toMatch(/no route/)
    const beforeD = await snapshot(d)
    const noChannel = await pay(d, a.node.address, { amount: '1' })
    expect(noChannel.status, noChannel.text).toBe(409)
    expect(noChannel.body.errors).toMatch(/no open channel/)
    expect(await snapshot(d)).toEqual(beforeD)
    expect(await snapshot(a)).toEqual(before)
  })

  it('402: the balance is too low to start (the direct channel, or every channel)', async () => {
    const tooMuch = await pay(a, b.node.address, { amount: '1000000000' })
    expect(tooMuch.status, tooMuch.text).toBe(402)
    expect(tooMuch.body.errors).toMatch(/insufficient balance/)
    // C has only what it received in B-C: a mediated route through it does not exist either.
    const beforeC = await snapshot(c)
    const fromC = await pay(c, b.node.address, { amount: '1000000000' })
    expect(fromC.status, fromC.text).toBe(402)
    expect(await snapshot(c)).toEqual(beforeC)
    // A's channels could carry 1000000000 to nobody: over A-B's balance but through a route that does not exist.
    const mediated = await pay(a, c.node.address, { amount: '1000000000' })
    expect(mediated.status, mediated.text).toBe(402)
    expect(await snapshot(a)).toEqual(before)
  })

  it('409: the secret is already registered on-chain', async () => {
    const secret = randomSecret()
    const secrethash = sha256(secret)
    await sendProtocolTransaction(
      { type: 'registerSecret', secret, secrethash },
      { queue: d.node.client.queue, signer: d.node.client.chain, secretRegistry: net.deployment.contracts.SecretRegistry.address },
    )
    // At once (read from the chain), and once the node has synced the registration (from its state).
    for (let i = 0; i < 2; i++) {
      for (const body of [
        { amount: '1', secret },
        { amount: '1', secret_hash: secrethash },
      ]) {
        const r = await pay(a, b.node.address, body)
        expect(r.status, r.text).toBe(409)
        expect(r.body.errors).toMatch(/registered on-chain/)
      }
      await a.node.client.waitForBlock(await a.node.client.chain.publicClient.getBlockNumber())
      expect(a.node.state.registeredSecrets[secrethash]).toBeDefined()
    }
    expect(await snapshot(a)).toEqual(before)
  })
})

describe('POST /payments/<token>/<target>: payments that fail are 409', () => {
  it('the target is offline: the lock expires and the payment fails', async () => {
    const pending = pay(a, offline, { amount: '3', identifier: '31337' })
    await eventually(() => expect(Object.values(a.node.state.initiators).some((p) => p.paymentId === 31337n)).toBe(true))
    await mine(25)
    const r = await pending
    expect(r.status, r.text).toBe(409)
    expect(r.body.errors).toMatch(/lock expired/)
  })

  it('a resolver that answers 503 is asked again until it gives the secret', async () => {
    const secret = randomSecret()
    const secrethash = sha256(secret)
    resolver.secrets.set(secrethash, secret)
    resolver.unavailable = 2
    const r = await pay(a, c.node.address, { amount: '3', secret_hash: secrethash })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ secret, secret_hash: secrethash })
    expect(resolver.requests.filter((q) => q.body.secrethash === secrethash)).toHaveLength(3)
    expect(resolver.unavailable).toBe(0)
  })

  it('the resolver does not know the secret: the payment fails when the lock expires', async () => {
    const secrethash = sha256(randomSecret())
    const pending = pay(a, b.node.address, { amount: '2', secret_hash: secrethash })
    await resolver.requested(secrethash)
    await mine(25)
    const r = await pending
    expect(r.status, r.text).toBe(409)
    expect(r.body.errors).toMatch(/resolver/)
  })
})

describe('GET /payments', () => {
  let all: Record<string, string>[]
  beforeAll(async () => {
    await quiet()
    const r = await a.get('/payments')
    expect(r.status).toBe(200)
    all = r.body
  })

  it('lists sent successes and failures oldest first, each shaped as docs/rest-api.md says', async () => {
    const keys: Record<string, string[]> = {
      EventPaymentSentSuccess: ['amount', 'event', 'fee', 'identifier', 'log_time', 'route', 'target', 'token_address'],
      EventPaymentSentFailed: ['event', 'log_time', 'reason', 'target', 'token_address'],
      EventPaymentReceivedSuccess: ['amount', 'event', 'identifier', 'initiator', 'log_time', 'token_address'],
    }
    expect(all.length).toBeGreaterThanOrEqual(10)
    for (const e of all) {
      expect(Object.keys(e).sort(), JSON.stringify(e)).toEqual(keys[e.event!])
      expect(e.log_time).toMatch(LOG_TIME)
      expect(e.token_address).toBe(net.token)
    }
    const times = all.map((e) => Date.parse(e.log_time!))
    expect(times).toEqual([...times].sort((x, y) => x - y))
    expect(all[0]).toEqual({
      event: 'EventPaymentSentSuccess',
      amount: '10',
      target: b.node.address,
      identifier: '4242',
      log_time: all[0]!.log_time,
      token_address: net.token,
      route: [b.node.address],
      fee: '0',
    })
    const ids = all.map((e) => e.identifier)
    expect(ids.indexOf('4242')).toBeLessThan(ids.indexOf('777'))
    expect(all.find((e) => e.identifier === '777')).toMatchObject({ event: 'EventPaymentSentSuccess', amount: '4', target: c.node.address })
    const failed = all.filter((e) => e.event === 'EventPaymentSentFailed')
    expect(failed).toHaveLength(2)
    expect(failed[0]).toMatchObject({ target: offline, reason: expect.stringMatching(/lock expired/) })
    expect(failed[1]).toMatchObject({ target: b.node.address, reason: expect.stringMatching(/resolver/) })
  })

  it('filters by token, and by partner (target of sent, initiator of received and mediated payments)', async () => {
    expect((await a.get(`/payments/${net.token}`)).body).toEqual(all)
    const withB = (await a.get(`/payments/${net.token}/${b.node.address}`)).body
    expect(withB).toEqual(all.filter((e) => e.target === b.node.address))
    expect(withB.length).toBeGreaterThan(0)
    expect((await a.get(`/payments/${net.token}/${c.node.address}`)).body).toEqual(all.filter((e) => e.target === c.node.address))
    // B received from A, and mediated A's payments to C (beyond Raiden, with what it kept: nothing here); C received
    // from A through B.
    const atB = (await b.get(`/payments/${net.token}/${a.node.address}`)).body
    expect(atB[0]).toEqual({
      event: 'EventPaymentReceivedSuccess',
      amount: '10',
      initiator: a.node.address,
      identifier: '4242',
      log_time: expect.stringMatching(LOG_TIME),
      token_address: net.token,
    })
    const kinds = new Set(atB.map((e: Record<string, string>) => e.event))
    expect(kinds).toEqual(new Set(['EventPaymentReceivedSuccess', 'EventPaymentMediated']))
    expect(atB.every((e: Record<string, string>) => e.initiator === a.node.address)).toBe(true)
    expect(atB.find((e: Record<string, string>) => e.event === 'EventPaymentMediated' && e.identifier === '777')).toEqual({
      event: 'EventPaymentMediated',
      amount: '4',
      fee: '0',
      initiator: a.node.address,
      target: c.node.address,
      identifier: '777',
      log_time: expect.stringMatching(LOG_TIME),
      token_address: net.token,
    })
    const atC = (await c.get('/payments')).body
    expect(atC.find((e: Record<string, string>) => e.identifier === '777')).toMatchObject({
      event: 'EventPaymentReceivedSuccess',
      amount: '4',
      initiator: a.node.address,
    })
    expect((await c.get(`/payments/${net.token}/${b.node.address}`)).body).toEqual([])
    expect((await d.get('/payments')).body).toEqual([])
  })

  it('pages with limit and offset', async () => {
    const get = async (query: string) => {
      const r = await a.get(`/payments${query}`)
      expect(r.status, `${query}: ${r.text}`).toBe(200)
      return r.body
    }
    expect(await get('?limit=2&offset=1')).toEqual(all.slice(1, 3))
    expect(await get('?offset=3')).toEqual(all.slice(3))
    expect(await get('?limit=3')).toEqual(all.slice(0, 3))
    expect(await get('?limit=0')).toEqual([])
    expect(await get(`?offset=${all.length}`)).toEqual([])
    expect(await get(`?limit=${2n ** 70n}&offset=0`)).toEqual(all)
    expect(await get(`?offset=${2n ** 70n}`)).toEqual([])
    const withB = all.filter((e) => e.target === b.node.address)
    expect((await a.get(`/payments/${net.token}/${b.node.address}?limit=2&offset=1`)).body).toEqual(withB.slice(1, 3))
  })

  it('400 for a bad limit or offset or an unknown parameter; 409 for a token with no token network; 404 for a bad address', async () => {
    for (const query of [
      '?limit=-1',
      '?offset=-1',
      '?limit=abc',
      '?offset=1.5',
      '?limit=',
      '?limit=1e2',
      '?foo=1',
      '?limit=1&limit=2',
      `?limit=${2n ** 256n}`,
    ]) {
      const r = await a.get(`/payments${query}`)
      expect(r.status, query).toBe(400)
      expect(typeof r.body.errors).toBe('string')
    }
    const unknown = await a.get(`/payments/${getAddress(`0x${'cd'.repeat(20)}`)}`)
    expect(unknown.status).toBe(409)
    expect(unknown.body.errors).toMatch(/token network/)
    expect((await a.get(`/payments/${getAddress(`0x${'cd'.repeat(20)}`)}/${b.node.address}`)).status).toBe(409)
    expect((await a.get(`/payments/${net.token.toLowerCase()}`)).status).toBe(404)
    expect((await a.get(`/payments/${net.token}/${b.node.address.toLowerCase()}`)).status).toBe(404)
    expect((await a.request('DELETE', `/payments/${net.token}/${b.node.address}`)).status).toBe(405)
    expect((await a.request('POST', `/payments/${net.token}`, { amount: '1' })).status).toBe(405)
  })
})

describe('fuzzing: never a 500, never a change of state', () => {
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    await quiet()
    before = await snapshot(a)
  })

  const integerish = fc.oneof(
    fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }).map((n) => n.toString()),
    fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }).map((n) => ({ raw: n.toString() })),
    fc.double().map((n) => ({ raw: JSON.stringify(n) })),
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom('1.5', '1e3', '0x10', ' 1', '01', '-0', ''),
  )
  const hexish = fc.oneof(
    fc.uint8Array({ minLength: 0, maxLength: 40 }).map((u) => bytesToHex(u)),
    fc.string(),
    fc.integer(),
    fc.constant(null),
  )
  /** An amount the payment can never carry: not positive, above A's balance, or not an amount at all. */
  const hopelessAmount = fc.oneof(
    fc.bigInt({ min: -(2n ** 300n), max: 0n }).map((n) => n.toString()),
    fc.bigInt({ min: 10n ** 9n, max: 2n ** 300n }).map((n) => ({ raw: n.toString() })),
    fc.bigInt({ min: 10n ** 9n, max: 2n ** 300n }).map((n) => n.toString()),
    // Not a decimal the channel could carry ("5" would pay).
    fc.string().filter((s) => !/^[1-9]\d{0,8}$/.test(s)),
    fc
      .double()
      .filter((n) => !Number.isInteger(n) || n <= 0 || n >= 1e9)
      .map((n) => ({ raw: JSON.stringify(n) })),
    fc.constant(null),
  )
  const toText = (body: Record<string, unknown>) =>
    `{${Object.entries(body)
      .map(([k, v]) => `${JSON.stringify(k)}:${v && typeof v === 'object' && 'raw' in v ? (v as { raw: string }).raw : JSON.stringify(v)}`)
      .join(',')}}`

  it('POST bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          { amount: hopelessAmount, identifier: integerish, lock_timeout: integerish, secret: hexish, secret_hash: hexish, route: fc.anything() },
          { requiredKeys: [] },
        ),
        async (body) => {
          const r = await pay(a, b.node.address, toText(body))
          expect([400, 402, 409], `${toText(body)}: ${r.text}`).toContain(r.status)
          expect(typeof r.body.errors).toBe('string')
        },
      ),
      { numRuns: 300 },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.json(),
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        async (text) => {
          const r = await pay(a, b.node.address, text)
          expect([400, 402, 409], `${text}: ${r.text}`).toContain(r.status)
        },
      ),
      { numRuns: 200 },
    )
    expect(a.internalErrors).toEqual([])
    expect(await snapshot(a)).toEqual(before)
  })

  it('paths and query values', async () => {
    const segment = fc.oneof(
      pathSegment(),
      fc
        .constantFrom(net.token, b.node.address, a.node.address)
        .chain((x) => fc.constantFrom(x, x.toLowerCase(), x.toUpperCase().replace('0X', '0x'), x.slice(0, 41), `${x}0`)),
      fc.uint8Array({ minLength: 20, maxLength: 20 }).map((u) => getAddress(bytesToHex(u))),
    )
    await fc.assert(
      fc.asyncProperty(segment, segment, async (token, target) => {
        // The one valid pair would pay: A->B itself is tested above.
        fc.pre(!(token === net.token && target === b.node.address))
        const r = await pay(a, encodeURIComponent(target), { amount: '1' }, encodeURIComponent(token))
        expect([404, 409], `${token}/${target}: ${r.text}`).toContain(r.status)
      }),
      { numRuns: 200 },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('limit', 'offset', 'from', 'x'), fc.oneof(fc.string(), fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String))),
        async (query) => {
          const r = await a.get(`/payments?${new URLSearchParams(query)}`)
          expect([200, 400], `${new URLSearchParams(query)}: ${r.text}`).toContain(r.status)
        },
      ),
      { numRuns: 200 },
    )
    expect(a.internalErrors).toEqual([])
    expect(await snapshot(a)).toEqual(before)
  })
})
