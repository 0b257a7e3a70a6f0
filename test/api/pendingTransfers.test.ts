import fc from 'fast-check'
import { bytesToHex, getAddress, sha256, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../integration/support/eventually.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { startSecretResolver, type SecretResolver } from './support/secretResolver.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { pathSegment } from './support/fuzz.ts'

let net: ApiNet
let resolver: SecretResolver
let a: ApiNode
let b: ApiNode
let c: ApiNode
let ab: bigint
let bc: bigint

beforeAll(async () => {
  resolver = await startSecretResolver()
  net = await startApiNet({ nodes: 3, node: { resolverEndpoint: resolver.url } })
  ;[a, b, c] = net.nodes as [ApiNode, ApiNode, ApiNode]
  ab = (await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 1000n })).id
  bc = (await openChannelOnChain(b.node.client, { tokenNetwork: net.tokenNetwork, partner: c.node.address, totalDeposit: 1000n })).id
  await net.synced()
}, 120_000)

afterAll(async () => {
  await resolver?.close()
  await net?.stopAll()
})

const ENTRY_KEYS = [
  'channel_identifier',
  'initiator',
  'locked_amount',
  'payment_identifier',
  'role',
  'target',
  'token_address',
  'token_network_address',
  'transferred_amount',
]
const randomSecret = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
const list = async (n: ApiNode, path = '') => {
  const r = await n.get(`/pending_transfers${path}`)
  expect(r.status, `${path}: ${r.text}`).toBe(200)
  return r.body
}

describe('GET /pending_transfers', () => {
  it('is [] with nothing in flight', async () => {
    for (const n of [a, b, c]) {
      const r = await n.get('/pending_transfers')
      expect(r.status).toBe(200)
      expect(r.text).toBe('[]')
    }
    expect(await list(a, `/${net.token}`)).toEqual([])
    expect(await list(a, `/${net.token}/${b.node.address}`)).toEqual([])
  })

  it('shows a mediated payment in flight from each role, by token and by channel, then nothing once it is paid', async () => {
    // A direct payment first, so that A has transferred something in A-B.
    const first = await a.request('POST', `/payments/${net.token}/${b.node.address}`, { amount: '5' })
    expect(first.status, first.text).toBe(200)
    await eventually(async () => expect(await list(b)).toEqual([]))

    // The resolver holds the secret back: the transfer stays pending at A (initiator), B (mediator) and C (target).
    const secret = randomSecret()
    const secrethash = sha256(secret)
    resolver.secrets.set(secrethash, secret)
    resolver.hold = true
    let paying: ReturnType<typeof a.request> | undefined
    try {
      paying = a.request('POST', `/payments/${net.token}/${c.node.address}`, { amount: '7', identifier: '555', secret_hash: secrethash })
      await resolver.requested(secrethash)
      const common = {
        initiator: a.node.address,
        target: c.node.address,
        locked_amount: '7',
        payment_identifier: '555',
        token_address: net.token,
        token_network_address: net.tokenNetwork,
      }
      const atA = await list(a)
      expect(atA).toEqual([{ ...common, role: 'initiator', channel_identifier: ab.toString(), transferred_amount: '5' }])
      expect(Object.keys(atA[0]).sort()).toEqual(ENTRY_KEYS)
      const atB = await list(b)
      // The mediator reports its incoming side (channel A-B, what A has transferred in it).
      expect(atB).toEqual([{ ...common, role: 'mediator', channel_identifier: ab.toString(), transferred_amount: '5' }])
      const atC = await list(c)
      expect(atC).toEqual([{ ...common, role: 'target', channel_identifier: bc.toString(), transferred_amount: '0' }])

      // Filters: the token, and our channel with a partner.
      expect(await list(a, `/${net.token}`)).toEqual(atA)
      expect(await list(a, `/${net.token}/${b.node.address}`)).toEqual(atA)
      expect(await list(b, `/${net.token}/${a.node.address}`)).toEqual(atB)
      expect(await list(b, `/${net.token}/${c.node.address}`)).toEqual([])
      expect(await list(c, `/${net.token}/${b.node.address}`)).toEqual(atC)
    } finally {
      resolver.hold = false
      resolver.release()
    }
    const paid = await paying!
    expect(paid.status, paid.text).toBe(200)
    await eventually(async () => {
      for (const n of [a, b, c]) expect(await list(n)).toEqual([])
    })
  })

  it('404 for a token with no token network, a partner we have no channel with, or an address not EIP-55', async () => {
    const unknownToken = getAddress(`0x${'ab'.repeat(20)}`)
    const cases: [ApiNode, string, RegExp][] = [
      [a, `/${unknownToken}`, /token/],
      [a, `/${unknownToken}/${b.node.address}`, /token/],
      [a, `/${net.token}/${c.node.address}`, /channel/],
      [c, `/${net.token}/${a.node.address}`, /channel/],
      [a, `/${net.token.toLowerCase()}`, /EIP55/],
      [a, `/${net.token}/${b.node.address.toLowerCase()}`, /EIP55/],
      [a, `/${net.token}/nobody`, /address/],
    ]
    for (const [n, path, message] of cases) {
      const r = await n.get(`/pending_transfers${path}`)
      expect(r.status, path).toBe(404)
      expect(r.body.errors, path).toMatch(message)
    }
    expect((await a.request('POST', '/pending_transfers')).status).toBe(405)
  })

  it('fuzzed paths: only 200 or 404, never a 500, never a change of state', async () => {
    const segment = fc.oneof(
      pathSegment(),
      fc.constantFrom(net.token, b.node.address, c.node.address).chain((x) => fc.constantFrom(x, x.toLowerCase(), x.slice(0, 41), `${x}0`)),
      fc.uint8Array({ minLength: 20, maxLength: 20 }).map((u) => getAddress(bytesToHex(u))),
    )
    const state = () => JSON.stringify(a.node.state, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
    const before = state()
    await fc.assert(
      fc.asyncProperty(segment, fc.option(segment), async (token, partner) => {
        const path = `/pending_transfers/${encodeURIComponent(token)}${partner === null ? '' : `/${encodeURIComponent(partner)}`}`
        const r = await a.get(path)
        expect([200, 404], `${path}: ${r.text}`).toContain(r.status)
        if (r.status === 200) expect(r.body).toEqual([])
      }),
      { numRuns: 200 },
    )
    expect(a.internalErrors).toEqual([])
    expect(state()).toEqual(before)
  })
})
