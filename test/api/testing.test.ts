import fc from 'fast-check'
import { maxUint256, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readTokenBalance } from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { serveNode, startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { isDotSegment } from './support/fuzz.ts'

let net: ApiNet
let a: ApiNode
/** The same node served in the production environment. */
let production: ApiNode
let devnet: ReturnType<typeof createDevnetClient>
let token: Address
/** An address with no node and no code. */
const C = privateKeyToAddress(anvilKeys[8] as Hex)

beforeAll(async () => {
  net = await startApiNet({ nodes: 1 })
  a = net.nodes[0]!
  token = net.token
  production = await serveNode(a.node, { environment: 'production' })
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
})
afterAll(async () => {
  await production?.server.close(100)
  await net?.stopAll()
})

const mint = (n: ApiNode, t: string, body: unknown) => n.request('POST', `/_testing/tokens/${t}/mint`, body)
const balanceOf = (owner: Address, t: Address = token) => readTokenBalance(a.node.client.chain, { token: t, owner })

/** What a refused request must leave alone: the node's nonce and the token balances involved. */
async function snapshot() {
  return {
    nonce: await a.node.client.chain.publicClient.getTransactionCount({ address: a.node.address }),
    ours: await balanceOf(a.node.address),
    theirs: await balanceOf(C),
    supply: await devnet.readContract({
      address: token,
      abi: [{ type: 'function', name: 'totalSupply', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] }],
      functionName: 'totalSupply',
    }),
  }
}

describe('POST /_testing/tokens/<token>/mint', () => {
  it('200 with the transaction hash; the receiver holds the minted tokens', async () => {
    const before = await balanceOf(C)
    const r = await mint(a, token, { to: C, value: '1234' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body)).toEqual(['transaction_hash'])
    expect(r.body.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/)
    expect((await a.node.client.chain.publicClient.getTransactionReceipt({ hash: r.body.transaction_hash })).status).toBe('success')
    expect(await balanceOf(C)).toBe(before + 1234n)
  })

  it('mints the service token to the node itself, value as a JSON integer', async () => {
    const svt = net.deployment.serviceToken
    const before = await balanceOf(a.node.address, svt)
    expect((await mint(a, svt, { to: a.node.address, value: 5 })).status).toBe(200)
    expect(await balanceOf(a.node.address, svt)).toBe(before + 5n)
  })

  it('501 in the production environment; nothing is minted', async () => {
    const before = await snapshot()
    const r = await mint(production, token, { to: C, value: '1' })
    expect(r.status).toBe(501)
    expect(r.body.errors).toMatch(/disabled in production/)
    expect(await snapshot()).toEqual(before)
  })

  it('400 for a malformed body: JSON, to, value (0, negative, above uint256, fraction, hex)', async () => {
    const before = await snapshot()
    const bodies: unknown[] = [
      '',
      '{',
      {},
      { to: C },
      { value: '1' },
      { to: C, value: '0' },
      { to: C, value: 0 },
      { to: C, value: '-1' },
      { to: C, value: (maxUint256 + 1n).toString() },
      { to: C, value: 1.5 },
      { to: C, value: '0x10' },
      { to: C.toLowerCase(), value: '1' },
      { to: C.slice(2), value: '1' },
      { to: '0x0000000000000000000000000000000000000000', value: '1' },
      { to: 5, value: '1' },
      { to: C, value: '1', extra: true },
    ]
    for (const body of bodies) {
      const r = await mint(a, token, body)
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(typeof r.body.errors).toBe('string')
    }
    expect(await snapshot()).toEqual(before)
  })

  it('400 when minting fails: a contract without a mint function, an address without code, a refused amount', async () => {
    const before = await snapshot()
    for (const target of [net.deployment.contracts.TokenNetworkRegistry.address, C, net.tokenNetwork]) {
      const r = await mint(a, target, { to: C, value: '1' })
      expect(r.status, target).toBe(400)
      expect(r.body.errors).toMatch(/no mint\(address,uint256\), mintFor\(uint256,address\) or increaseSupply/)
    }
    // The total supply would overflow: the token refuses it.
    expect((await mint(a, token, { to: C, value: maxUint256.toString() })).status).toBe(400)
    expect(await snapshot()).toEqual(before)
  })

  it('402 without native currency for gas; nothing is minted', async () => {
    const before = await snapshot()
    await devnet.setBalance({ address: a.node.address, value: 0n })
    try {
      const r = await mint(a, token, { to: C, value: '1' })
      expect(r.status).toBe(402)
      expect(r.body.errors).toMatch(/insufficient ETH for gas/)
    } finally {
      await devnet.setBalance({ address: a.node.address, value: parseEther('10000') })
    }
    expect(await snapshot()).toEqual(before)
  })

  it('404 for a token address that is not EIP-55; 405 for another method', async () => {
    expect((await mint(a, token.toLowerCase(), { to: C, value: '1' })).status).toBe(404)
    expect((await mint(a, 'nothing', { to: C, value: '1' })).status).toBe(404)
    const r = await a.request('GET', `/_testing/tokens/${token}/mint`)
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toBe('POST')
  })

  it('fuzzing bodies and token paths: never a 500; a refused request changes nothing', async () => {
    const address = fc.oneof(
      fc.constantFrom(C, token, C.toLowerCase(), net.deployment.contracts.UserDeposit.address, '0x0000000000000000000000000000000000000000'),
      fc.string(),
      fc.stringMatching(/^0x[0-9a-fA-F]{0,42}$/),
    )
    const value = fc.oneof(
      fc.bigInt({ min: -(2n ** 260n), max: 2n ** 260n }).map((n) => n.toString()),
      fc.integer(),
      fc.double(),
      fc.jsonValue(),
    )
    const body = fc.oneof(fc.record({ to: address, value }, { requiredKeys: [] }), fc.jsonValue(), fc.string())
    const tokenPath = fc.oneof(
      fc.constant(token as string),
      fc.constant(C as string),
      address.filter((s) => !isDotSegment(s)).map((s) => encodeURIComponent(String(s))),
    )
    await fc.assert(
      fc.asyncProperty(tokenPath, body, async (t, b) => {
        const before = await snapshot()
        const r = await mint(a, t, typeof b === 'string' ? b : JSON.stringify(b))
        expect([200, 400, 402, 404]).toContain(r.status)
        if (r.status !== 200) {
          expect(typeof r.body.errors).toBe('string')
          expect(await snapshot()).toEqual(before)
        }
      }),
      { numRuns: 60 },
    )
    expect(a.internalErrors).toEqual([])
    expect(production.internalErrors).toEqual([])
  })
})
