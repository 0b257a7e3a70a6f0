import { parseEventLogs, zeroAddress, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CustomToken, UserDeposit } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { snapshotEach } from '../support/chainSuite.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import { deployServices, depositToUdc, constructorRevertReason, fund, mined, mineTo, udcBalance, type Services } from '../support/services.ts'

let anvil: Anvil
let client: AnvilClient // deployer
let alice: AnvilClient
let bob: AnvilClient
let s: Services

const udc = () => ({ address: s.userDeposit, abi: UserDeposit.abi }) as const
const read = {
  balance: (who: Address) => udcBalance(client, s, who),
  plan: (who: Address) => client.readContract({ ...udc(), functionName: 'withdraw_plans', args: [who] }),
  effective: (who: Address) => client.readContract({ ...udc(), functionName: 'effectiveBalance', args: [who] }),
  tokens: (who: Address) => client.readContract({ address: s.token, abi: CustomToken.abi, functionName: 'balanceOf', args: [who] }),
  whole: () => client.readContract({ ...udc(), functionName: 'whole_balance' }),
}

/** Lets the test send transactions from a contract's address (OneToN / MonitoringService), as anvil allows. */
async function impersonate(address: Address) {
  await client.impersonateAccount({ address })
  await client.setBalance({ address, value: 10n ** 18n })
}

/** UserDeposit.transfer sent from `caller` (a contract address being impersonated). */
function serviceTransfer(caller: Address, sender: Address, receiver: Address, amount: bigint) {
  return client.writeContract({ ...udc(), account: caller, functionName: 'transfer', args: [sender, receiver, amount] })
}

beforeAll(async () => {
  anvil = await startAnvil()
  client = anvilClient(anvil.rpcUrl, anvilKeys[0])
  alice = anvilClient(anvil.rpcUrl, anvilKeys[1])
  bob = anvilClient(anvil.rpcUrl, anvilKeys[2])
  s = await deployServices(client, { wholeBalanceLimit: 10_000n })
})
afterAll(() => anvil.stop())
snapshotEach(() => client)

describe('deployment', () => {
  test('exposes the token, the limit, the wired services and a withdraw delay of 100 blocks', async () => {
    expect(await client.readContract({ ...udc(), functionName: 'token' })).toBe(s.token)
    expect(await client.readContract({ ...udc(), functionName: 'whole_balance_limit' })).toBe(10_000n)
    expect(await client.readContract({ ...udc(), functionName: 'withdraw_delay' })).toBe(100n)
    expect(await client.readContract({ ...udc(), functionName: 'msc_address' })).toBe(s.monitoringService)
    expect(await client.readContract({ ...udc(), functionName: 'one_to_n_address' })).toBe(s.oneToN)
    expect(await read.whole()).toBe(0n)
  })

  test('the constructor refuses a missing token, an address without code, a token without supply and a zero limit', async () => {
    const construct = (token: Address, limit: bigint) => constructorRevertReason(client, UserDeposit, [token, limit])
    expect(await construct(zeroAddress, 1n)).toBe('token at address zero')
    expect(await construct(alice.account.address, 1n)).toBe('token has no code')
    const empty = await deploy(client, CustomToken, [0n, 18, 'Empty', 'E'])
    expect(await construct(empty, 1n)).toBe('token has no total supply')
    expect(await construct(s.token, 0n)).toBe('whole balance limit is zero')
  })

  test('init can run only once', async () => {
    await expectRevert(client.simulateContract({ ...udc(), functionName: 'init', args: [s.monitoringService, s.oneToN] }), 'already initialized')
  })

  test('init refuses zero addresses and addresses without code, checking the MS contract first', async () => {
    const fresh = await deploy(client, UserDeposit, [s.token, 1000n])
    const init = (ms: Address, oneToN: Address) => client.simulateContract({ address: fresh, abi: UserDeposit.abi, functionName: 'init', args: [ms, oneToN] })
    await expectRevert(init(zeroAddress, s.oneToN), 'MS contract at address zero')
    await expectRevert(init(alice.account.address, s.oneToN), 'MS contract has no code')
    await expectRevert(init(s.monitoringService, zeroAddress), 'OneToN at address zero')
    await expectRevert(init(s.monitoringService, bob.account.address), 'OneToN has no code')
    await mined(client, client.writeContract({ address: fresh, abi: UserDeposit.abi, functionName: 'init', args: [s.monitoringService, s.oneToN] }))
    expect(await client.readContract({ address: fresh, abi: UserDeposit.abi, functionName: 'one_to_n_address' })).toBe(s.oneToN)
  })
})

describe('deposit', () => {
  test('takes a new total, credits only the difference and pulls it from the payer', async () => {
    const a = alice.account.address
    await fund(alice, s.token, s.userDeposit, 300n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'deposit', args: [a, 100n] }))
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'deposit', args: [a, 250n] }))
    expect(await read.balance(a)).toBe(250n)
    expect(await client.readContract({ ...udc(), functionName: 'total_deposit', args: [a] })).toBe(250n)
    expect(await read.whole()).toBe(250n)
    expect(await read.tokens(a)).toBe(50n)
    expect(await read.tokens(s.userDeposit)).toBe(250n)
  })

  test('anyone can deposit for someone else, paying from their own tokens', async () => {
    await depositToUdc(bob, s, alice.account.address, 40n)
    expect(await read.balance(alice.account.address)).toBe(40n)
    expect(await read.balance(bob.account.address)).toBe(0n)
    expect(await read.tokens(bob.account.address)).toBe(0n)
  })

  test('a total that does not grow is refused, also after the balance was spent', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    await fund(alice, s.token, s.userDeposit, 100n)
    const deposit = (total: bigint) => alice.simulateContract({ ...udc(), functionName: 'deposit', args: [a, total] })
    await expectRevert(deposit(100n), 'deposit not increasing')
    await expectRevert(deposit(99n), 'deposit not increasing')
    // Spending lowers the balance, not the total: the total still has to grow.
    await impersonate(s.oneToN)
    await mined(client, serviceTransfer(s.oneToN, a, bob.account.address, 60n))
    await expectRevert(deposit(100n), 'deposit not increasing')
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'deposit', args: [a, 110n] }))
    expect(await read.balance(a)).toBe(50n)
  })

  test('the sum of all balances may reach the whole balance limit but not exceed it', async () => {
    await depositToUdc(alice, s, alice.account.address, 6_000n)
    await fund(bob, s.token, s.userDeposit, 4_001n)
    await expectRevert(bob.simulateContract({ ...udc(), functionName: 'deposit', args: [bob.account.address, 4_001n] }), 'too much deposit')
    await mined(bob, bob.writeContract({ ...udc(), functionName: 'deposit', args: [bob.account.address, 4_000n] }))
    expect(await read.whole()).toBe(10_000n)
  })

  test('without an allowance the token itself refuses the transfer', async () => {
    await mined(alice, alice.writeContract({ address: s.token, abi: CustomToken.abi, functionName: 'mint', args: [10n] }))
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'deposit', args: [alice.account.address, 10n] }), 'allowance too low')
  })
})

describe('transfer (service payments)', () => {
  test('an ordinary account cannot move deposits', async () => {
    await depositToUdc(alice, s, alice.account.address, 50n)
    await expectRevert(bob.simulateContract({ ...udc(), functionName: 'transfer', args: [alice.account.address, bob.account.address, 10n] }), 'unknown caller')
  })

  test('OneToN and the monitoring contract move balance and emit BalanceReduced for the payer', async () => {
    const [a, b] = [alice.account.address, bob.account.address]
    await depositToUdc(alice, s, a, 50n)
    await impersonate(s.oneToN)
    await impersonate(s.monitoringService)
    const first = await mined(client, serviceTransfer(s.oneToN, a, b, 20n))
    await mined(client, serviceTransfer(s.monitoringService, a, b, 5n))
    expect(await read.balance(a)).toBe(25n)
    expect(await read.balance(b)).toBe(25n)
    expect(await read.whole()).toBe(50n) // money stays inside the deposit contract
    const [event] = parseEventLogs({ abi: UserDeposit.abi, logs: first.logs, eventName: 'BalanceReduced' })
    expect(event?.args).toEqual({ owner: a, newBalance: 30n })
  })

  test('returns false without reverting when the amount is zero or above the balance', async () => {
    const [a, b] = [alice.account.address, bob.account.address]
    await depositToUdc(alice, s, a, 50n)
    const simulate = (amount: bigint) => client.simulateContract({ ...udc(), account: s.oneToN, functionName: 'transfer', args: [a, b, amount] })
    expect((await simulate(0n)).result).toBe(false)
    expect((await simulate(51n)).result).toBe(false)
    expect((await simulate(50n)).result).toBe(true)
    await impersonate(s.oneToN)
    const receipt = await mined(client, serviceTransfer(s.oneToN, a, b, 51n))
    expect(receipt.logs).toHaveLength(0)
    expect(await read.balance(a)).toBe(50n)
  })

  test('paying oneself is refused', async () => {
    await expectRevert(
      client.simulateContract({ ...udc(), account: s.oneToN, functionName: 'transfer', args: [alice.account.address, alice.account.address, 1n] }),
      'sender == receiver',
    )
  })
})

describe('planned withdrawal', () => {
  test('planWithdraw lowers the effective balance, records plan block + 100 and announces the rest', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    const receipt = await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [30n] }))
    expect(await read.plan(a)).toEqual([30n, receipt.blockNumber + 100n])
    expect(await read.effective(a)).toBe(70n)
    expect(await read.balance(a)).toBe(100n)
    const [event] = parseEventLogs({ abi: UserDeposit.abi, logs: receipt.logs, eventName: 'WithdrawPlanned' })
    expect(event?.args).toEqual({ withdrawer: a, plannedBalance: 70n })
  })

  test('planning zero or more than the balance is refused', async () => {
    await depositToUdc(alice, s, alice.account.address, 100n)
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'planWithdraw', args: [0n] }), 'withdrawing zero')
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'planWithdraw', args: [101n] }), 'withdrawing too much')
  })

  test('a new plan replaces the old one and restarts the delay', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [30n] }))
    await client.mine({ blocks: 50 })
    const second = await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [10n] }))
    expect(await read.plan(a)).toEqual([10n, second.blockNumber + 100n])
    expect(await read.effective(a)).toBe(90n)
  })

  test('effective balance is zero when payments took the balance below the plan', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [80n] }))
    await impersonate(s.oneToN)
    await mined(client, serviceTransfer(s.oneToN, a, bob.account.address, 30n))
    expect(await read.effective(a)).toBe(0n)
  })

  test('withdraw is refused at plan block + 99 and works at exactly plan block + 100', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    const plan = await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [30n] }))
    const allowed = plan.blockNumber + 100n
    // anvil runs eth_call with block.number = the latest block.
    await mineTo(client, allowed - 1n)
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [30n] }), 'withdrawing too early')
    // A transaction sent now is mined in the first allowed block.
    const receipt = await mined(alice, alice.writeContract({ ...udc(), functionName: 'withdraw', args: [30n] }))
    expect(receipt.blockNumber).toBe(allowed)
    expect(await read.balance(a)).toBe(70n)
    expect(await read.tokens(a)).toBe(30n)
    expect(await read.whole()).toBe(70n)
    expect(await read.plan(a)).toEqual([0n, 0n])
    const [event] = parseEventLogs({ abi: UserDeposit.abi, logs: receipt.logs, eventName: 'BalanceReduced' })
    expect(event?.args).toEqual({ owner: a, newBalance: 70n })
  })

  test('withdrawing more than planned is refused, and less uses the plan up', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [30n] }))
    await client.mine({ blocks: 100 })
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [31n] }), 'withdrawing more than planned')
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'withdraw', args: [10n] }))
    expect(await read.plan(a)).toEqual([0n, 0n])
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [10n] }), 'withdrawing more than planned')
  })

  test('withdraw pays only what is left when services took part of the planned amount', async () => {
    const a = alice.account.address
    await depositToUdc(alice, s, a, 100n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [90n] }))
    await impersonate(s.monitoringService)
    await mined(client, serviceTransfer(s.monitoringService, a, bob.account.address, 40n))
    await client.mine({ blocks: 100 })
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'withdraw', args: [90n] }))
    expect(await read.tokens(a)).toBe(60n)
    expect(await read.balance(a)).toBe(0n)
    expect(await read.whole()).toBe(40n)
  })

  test('withdrawToBeneficiary sends the tokens elsewhere, but never to the zero address', async () => {
    const [a, b] = [alice.account.address, bob.account.address]
    await depositToUdc(alice, s, a, 100n)
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [25n] }))
    await client.mine({ blocks: 100 })
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdrawToBeneficiary', args: [25n, zeroAddress] }), 'beneficiary is zero')
    await mined(alice, alice.writeContract({ ...udc(), functionName: 'withdrawToBeneficiary', args: [25n, b] }))
    expect(await read.tokens(b)).toBe(25n)
    expect(await read.tokens(a)).toBe(0n)
    expect(await read.balance(a)).toBe(75n)
  })

  test('withdrawing nothing without a plan fails because the token refuses a zero transfer', async () => {
    await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [0n] }), "tokens didn't transfer")
  })
})

test('invariant 19: deposits must grow within the limit, only services move them, withdrawals wait for the plan', async () => {
  const [a, b] = [alice.account.address, bob.account.address]
  await depositToUdc(alice, s, a, 500n)
  await fund(alice, s.token, s.userDeposit, 10_000n)
  // deposit needs an increasing total and respects the whole limit
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'deposit', args: [a, 500n] }), 'deposit not increasing')
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'deposit', args: [a, 10_001n] }), 'too much deposit')
  // transfer only from MSC/OneToN
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'transfer', args: [a, b, 1n] }), 'unknown caller')
  expect((await client.simulateContract({ ...udc(), account: s.monitoringService, functionName: 'transfer', args: [a, b, 1n] })).result).toBe(true)
  // planWithdraw lowers effectiveBalance
  const plan = await mined(alice, alice.writeContract({ ...udc(), functionName: 'planWithdraw', args: [200n] }))
  expect(await read.effective(a)).toBe(300n)
  // withdraw before plan block + delay, more than planned, to the zero address
  await mineTo(client, plan.blockNumber + 99n)
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [200n] }), 'withdrawing too early')
  await client.mine({ blocks: 1 })
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdraw', args: [201n] }), 'withdrawing more than planned')
  await expectRevert(alice.simulateContract({ ...udc(), functionName: 'withdrawToBeneficiary', args: [200n, zeroAddress] }), 'beneficiary is zero')
  await mined(alice, alice.writeContract({ ...udc(), functionName: 'withdraw', args: [200n] }))
  expect(await read.balance(a)).toBe(300n)
})
