import fc from 'fast-check'
import { maxUint256, parseEther, zeroAddress, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintTokens, readTokenBalance, readUserDeposit } from '../../src/chain/index.ts'
import { UserDeposit, bytecode } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { startNode } from '../integration/support/devnet.ts'
import { serveNode, startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

const WITHDRAW_DELAY = 100

let net: ApiNet
/** Uses the deployment's UserDeposit; holds service tokens (minted below). */
let a: ApiNode
/** A deployment without a UserDeposit contract (its address is the zero address). */
let none: ApiNode
/** A UserDeposit of its own whose whole-balance limit is 50. */
let limited: ApiNode
let limitedUdc: Address
let devnet: ReturnType<typeof createDevnetClient>
let serviceToken: Address

beforeAll(async () => {
  net = await startApiNet({ nodes: 1 })
  a = net.nodes[0]!
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  serviceToken = net.deployment.serviceToken
  const hash = await devnet.deployContract({ abi: UserDeposit.abi, bytecode: bytecode.UserDeposit, args: [serviceToken, 50n] })
  limitedUdc = (await waitForReceipt(devnet, hash, { timeout: 20_000 })).contractAddress!
  const withUdc = (address: Address) => ({ ...net.deployment, contracts: { ...net.deployment.contracts, UserDeposit: { address, blockNumber: 0 } } })
  none = await serveNode(await startNode(net, anvilKeys[2], { deployment: withUdc(zeroAddress) }))
  limited = await serveNode(await startNode(net, anvilKeys[3], { deployment: withUdc(limitedUdc) }))
  // The harness mints only the test token; the service token (a CustomToken) is mintable by anyone.
  for (const n of [limited, none]) await mintTokens(n.node.client.chain, n.node.client.queue, { token: serviceToken, amount: 1000n })
})
afterAll(async () => {
  for (const n of [none, limited]) {
    await n?.server.close(100)
    await n?.node.stop()
  }
  await net?.stopAll()
})

const post = (n: ApiNode, body: unknown) => n.request('POST', '/user_deposit', body)
const udcOf = (n: ApiNode) => (n === limited ? limitedUdc : net.deployment.contracts.UserDeposit.address)

/** What a refused request must leave alone: the UDC account, the service tokens and the account nonce. */
async function snapshot(n: ApiNode = a) {
  const udc = await readUserDeposit(n.node.client.chain, { userDeposit: udcOf(n) })
  return {
    udc,
    tokens: await readTokenBalance(n.node.client.chain, { token: serviceToken }),
    nonce: await n.node.client.chain.publicClient.getTransactionCount({ address: n.node.address }),
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

const receipt = (hash: `0x${string}`) => a.node.client.chain.publicClient.getTransactionReceipt({ hash })

describe('POST /user_deposit: request shape (400)', () => {
  it('an empty, malformed, non-object or empty-object body is 400', async () => {
    for (const body of ['', '{', '[]', '"x"', '{}', 'null', '5']) {
      const r = await post(a, body)
      expect(r.status, body).toBe(400)
      expect(typeof r.body.errors, body).toBe('string')
    }
  })

  it('no operation (all fields null) is 400 "Nothing to do"', async () => {
    const r = await post(a, { total_deposit: null, planned_withdraw_amount: null, withdraw_amount: null })
    expect(r.status).toBe(400)
    expect(r.body.errors).toMatch(/Nothing to do/)
  })

  it('two operations in one request are 400, whatever the node (checked before the 404)', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ total_deposit: '10', planned_withdraw_amount: '1' }, /deposit to UDC and plan a withdraw/],
      [{ total_deposit: '10', withdraw_amount: '1' }, /deposit to UDC and withdraw/],
      [{ planned_withdraw_amount: '1', withdraw_amount: '1' }, /withdraw from UDC and plan a withdraw/],
      [{ total_deposit: '10', planned_withdraw_amount: '1', withdraw_amount: '1' }, /at the same time/],
    ]
    for (const n of [a, none]) {
      for (const [body, message] of cases) {
        const r = await post(n, body)
        expect(r.status, JSON.stringify(body)).toBe(400)
        expect(r.body.errors).toMatch(message)
      }
    }
  })

  it('a field that is not an integer, or an unknown field, is 400', async () => {
    for (const body of [
      { total_deposit: '1.5' },
      { total_deposit: 1.5 },
      { withdraw_amount: 'ten' },
      { planned_withdraw_amount: true },
      { total_deposit: '0x10' },
      { amount: '1' },
    ]) {
      expect((await post(a, body)).status, JSON.stringify(body)).toBe(400)
    }
  })
})

describe('POST /user_deposit without a UserDeposit contract (404)', () => {
  it('each operation is 404 and sends nothing', async () => {
    const nonce = await none.node.client.chain.publicClient.getTransactionCount({ address: none.node.address })
    for (const body of [{ total_deposit: '10' }, { planned_withdraw_amount: '1' }, { withdraw_amount: '1' }]) {
      const r = await post(none, body)
      expect(r.status, JSON.stringify(body)).toBe(404)
      expect(r.body.errors).toMatch(/No UserDeposit contract is configured/)
    }
    expect(await none.node.client.chain.publicClient.getTransactionCount({ address: none.node.address })).toBe(nonce)
  })
})

describe('POST /user_deposit: deposit', () => {
  it('402 without service tokens; nothing changes', async () => {
    const before = await snapshot()
    expect(before.tokens).toBe(0n)
    const r = await post(a, { total_deposit: '10' })
    expect(r.status).toBe(402)
    expect(r.body.errors).toMatch(/Not enough balance to deposit. Available=0 Needed=10/)
    expect(await snapshot()).toEqual(before)
  })

  it('200 with the transaction hash; the UDC holds the new total and the service tokens moved', async () => {
    await mintTokens(a.node.client.chain, a.node.client.queue, { token: serviceToken, amount: 1000n })
    const r = await post(a, { total_deposit: '10' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body)).toEqual(['transaction_hash'])
    expect(r.body.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/)
    expect((await receipt(r.body.transaction_hash)).status).toBe('success')
    const after = await snapshot()
    expect(after.udc.totalDeposit).toBe(10n)
    expect(after.udc.balance).toBe(10n)
    expect(after.tokens).toBe(990n)
    // The total as a JSON integer works too.
    const again = await post(a, { total_deposit: 15 })
    expect(again.status).toBe(200)
    expect((await snapshot()).udc.totalDeposit).toBe(15n)
  })

  it('409 when the total does not increase (same, lower, zero, negative) or overflows uint256; nothing changes', async () => {
    const before = await snapshot()
    for (const total of ['15', '14', '0', 0, '-1', -5, (maxUint256 + 1n).toString()]) {
      const r = await post(a, { total_deposit: total })
      expect(r.status, String(total)).toBe(409)
      expect(typeof r.body.errors).toBe('string')
    }
    expect((await post(a, { total_deposit: '15' })).body.errors).toMatch(/Total deposit did not increase/)
    expect(await snapshot()).toEqual(before)
  })

  it("409 above the contract's whole-balance limit; below it, 200", async () => {
    const before = await snapshot(limited)
    const r = await post(limited, { total_deposit: '51' })
    expect(r.status).toBe(409)
    expect(r.body.errors).toMatch(/would have exceeded the UDC balance limit/)
    expect(await snapshot(limited)).toEqual(before)
    expect((await post(limited, { total_deposit: '50' })).status).toBe(200)
    const over = await post(limited, { total_deposit: '51' })
    expect(over.status).toBe(409)
    expect(over.body.errors).toMatch(/Deposit of 1 would have exceeded the UDC balance limit of 50/)
  })

  it('402 without native currency for gas; nothing changes', async () => {
    const before = await snapshot()
    const r = await withoutGas(a, () => post(a, { total_deposit: '20' }))
    expect(r.status).toBe(402)
    expect(r.body.errors).toMatch(/insufficient ETH for gas/)
    expect(await snapshot()).toEqual(before)
  })
})

describe('POST /user_deposit: plan and withdraw', () => {
  it('withdraw without a plan is 409', async () => {
    const r = await post(a, { withdraw_amount: '1' })
    expect(r.status).toBe(409)
    expect(r.body.errors).toMatch(/more than planned/)
  })

  it('plan: 409 for zero, a negative amount, or more than the balance; nothing changes', async () => {
    const before = await snapshot()
    for (const amount of ['0', '-1', '16', maxUint256.toString()]) {
      const r = await post(a, { planned_withdraw_amount: amount })
      expect(r.status, amount).toBe(409)
    }
    expect((await post(a, { planned_withdraw_amount: '0' })).body.errors).toMatch(/greater than zero/)
    expect((await post(a, { planned_withdraw_amount: '16' })).body.errors).toMatch(/bigger than the current balance of 15/)
    expect(await snapshot()).toEqual(before)
  })

  it('plan: 402 without gas; nothing changes', async () => {
    const before = await snapshot()
    expect((await withoutGas(a, () => post(a, { planned_withdraw_amount: '4' }))).status).toBe(402)
    expect(await snapshot()).toEqual(before)
  })

  it('plan: 200 with planned_withdraw_block_number as a JSON integer, 100 blocks after the planning block', async () => {
    const r = await post(a, { planned_withdraw_amount: '4' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['planned_withdraw_block_number', 'transaction_hash'])
    expect(Number.isInteger(r.body.planned_withdraw_block_number)).toBe(true)
    expect(r.text).toMatch(/"planned_withdraw_block_number":\d+/)
    const mined = await receipt(r.body.transaction_hash)
    expect(BigInt(r.body.planned_withdraw_block_number)).toBe(mined.blockNumber + BigInt(WITHDRAW_DELAY))
    expect((await snapshot()).udc.withdrawPlan).toEqual({ amount: 4n, withdrawBlock: mined.blockNumber + BigInt(WITHDRAW_DELAY) })
  })

  it('withdraw: 409 for zero, negative, more than planned, or too early; nothing changes', async () => {
    const before = await snapshot()
    const cases: [string, RegExp][] = [
      ['0', /greater than zero/],
      ['-3', /greater than zero/],
      ['5', /Withdrawing more than planned/],
      ['4', /Withdrawing too early. Planned withdraw at block \d+. Current block: \d+/],
    ]
    for (const [amount, message] of cases) {
      const r = await post(a, { withdraw_amount: amount })
      expect(r.status, amount).toBe(409)
      expect(r.body.errors).toMatch(message)
    }
    expect(await snapshot()).toEqual(before)
  })

  it('withdraw: 402 without gas once due, then 200; the tokens come back', async () => {
    const plan = (await snapshot()).udc.withdrawPlan!
    const head = await devnet.getBlockNumber()
    await devnet.mine({ blocks: Number(plan.withdrawBlock - head) })
    const before = await snapshot()
    expect((await withoutGas(a, () => post(a, { withdraw_amount: '4' }))).status).toBe(402)
    expect(await snapshot()).toEqual(before)
    const r = await post(a, { withdraw_amount: '4' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body)).toEqual(['transaction_hash'])
    const after = await snapshot()
    expect(after.udc.balance).toBe(11n)
    expect(after.udc.withdrawPlan).toBeUndefined()
    expect(after.tokens).toBe(before.tokens + 4n)
  })
})

describe('POST /user_deposit: fuzzing', () => {
  const value = fc.oneof(
    fc.bigInt({ min: -(2n ** 260n), max: 2n ** 260n }).map((n) => n.toString()),
    fc.integer(),
    fc.double(),
    fc.string(),
    fc.constantFrom(null, true, false, [], {}, '', ' 1', '1 ', '+1', '01', '1e3', '0x1'),
  )
  const body = fc.oneof(
    fc.record({ total_deposit: value, planned_withdraw_amount: value, withdraw_amount: value }, { requiredKeys: [] }),
    fc.dictionary(fc.string(), value),
    fc.jsonValue(),
    fc.string(),
  )

  it('never a 500; a refused request changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = await snapshot()
        const r = await post(a, typeof b === 'string' ? b : JSON.stringify(b))
        expect(r.status).not.toBe(500)
        expect([200, 400, 402, 404, 409]).toContain(r.status)
        expect(typeof r.body?.errors === 'string' || r.status === 200).toBe(true)
        if (r.status !== 200) expect(await snapshot()).toEqual(before)
      }),
      { numRuns: 60 },
    )
    for (const n of [a, none, limited]) expect(n.internalErrors).toEqual([])
  })
})
