import { parseEventLogs, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { CustomToken } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { snapshotEach } from '../support/chainSuite.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'

let anvil: Anvil
let client: AnvilClient // deployer: owner of the initial supply
let alice: AnvilClient
let bob: AnvilClient
let token: Address
const BEEF = '0x000000000000000000000000000000000000bEEF' as const

const t = () => ({ address: token, abi: CustomToken.abi }) as const
const balanceOf = (who: Address) => client.readContract({ ...t(), functionName: 'balanceOf', args: [who] })
const allowance = (owner: Address, spender: Address) => client.readContract({ ...t(), functionName: 'allowance', args: [owner, spender] })
async function send(c: AnvilClient, hash: Promise<Hex>) {
  const receipt = await c.waitForTransactionReceipt({ hash: await hash })
  expect(receipt.status).toBe('success')
  return receipt
}

beforeAll(async () => {
  anvil = await startAnvil()
  client = anvilClient(anvil.rpcUrl, anvilKeys[0])
  alice = anvilClient(anvil.rpcUrl, anvilKeys[1])
  bob = anvilClient(anvil.rpcUrl, anvilKeys[2])
  token = await deploy(client, CustomToken, [1000n, 6, 'Test Token', 'TT'])
})
afterAll(() => anvil.stop())
snapshotEach(() => client)

test('a test token mints to anyone through each of its three mint functions', async () => {
  const [a, b] = [client.account.address, BEEF]
  await send(client, client.writeContract({ ...t(), functionName: 'mint', args: [5n] }))
  await send(client, client.writeContract({ ...t(), functionName: 'mint', args: [b, 7n] }))
  await send(client, client.writeContract({ ...t(), functionName: 'mintFor', args: [11n, b] }))
  expect(await balanceOf(a)).toBe(1005n)
  expect(await balanceOf(b)).toBe(18n)
  expect(await client.readContract({ ...t(), functionName: 'totalSupply' })).toBe(1023n)
})

test('minting emits Minted and a Transfer from the zero address', async () => {
  const receipt = await send(alice, alice.writeContract({ ...t(), functionName: 'mintFor', args: [42n, BEEF] }))
  const [minted] = parseEventLogs({ abi: CustomToken.abi, logs: receipt.logs, eventName: 'Minted' })
  const [transfer] = parseEventLogs({ abi: CustomToken.abi, logs: receipt.logs, eventName: 'Transfer' })
  expect(minted?.args).toEqual({ _to: BEEF, _num: 42n })
  expect(transfer?.args).toEqual({ _from: '0x0000000000000000000000000000000000000000', _to: BEEF, _value: 42n })
})

test('name, symbol, version and decimals come from the constructor; the deployer holds the initial supply', async () => {
  expect(await client.readContract({ ...t(), functionName: 'name' })).toBe('Test Token')
  expect(await client.readContract({ ...t(), functionName: 'symbol' })).toBe('TT')
  expect(await client.readContract({ ...t(), functionName: 'version' })).toBe('H0.1')
  expect(await client.readContract({ ...t(), functionName: 'decimals' })).toBe(6)
  expect(await client.readContract({ ...t(), functionName: '_decimals' })).toBe(6)
  expect(await client.readContract({ ...t(), functionName: 'multiplier' })).toBe(10n ** 6n)
  expect(await client.readContract({ ...t(), functionName: 'owner_address' })).toBe(client.account.address)
  expect(await balanceOf(client.account.address)).toBe(1000n)
  expect(await client.readContract({ ...t(), functionName: 'balances', args: [client.account.address] })).toBe(1000n)
})

test('a token can start with no supply', async () => {
  const empty = await deploy(client, CustomToken, [0n, 18, 'Empty', 'E'])
  expect(await client.readContract({ address: empty, abi: CustomToken.abi, functionName: 'totalSupply' })).toBe(0n)
})

test('transfer moves tokens and emits Transfer', async () => {
  const receipt = await send(client, client.writeContract({ ...t(), functionName: 'transfer', args: [alice.account.address, 300n] }))
  expect(await balanceOf(client.account.address)).toBe(700n)
  expect(await balanceOf(alice.account.address)).toBe(300n)
  const [event] = parseEventLogs({ abi: CustomToken.abi, logs: receipt.logs, eventName: 'Transfer' })
  expect(event?.args).toEqual({ _from: client.account.address, _to: alice.account.address, _value: 300n })
})

test('transfer returns false, without reverting or moving anything, for zero or more than the balance', async () => {
  for (const value of [0n, 1001n]) {
    const { result } = await client.simulateContract({ ...t(), functionName: 'transfer', args: [alice.account.address, value] })
    expect(result).toBe(false)
    const receipt = await send(client, client.writeContract({ ...t(), functionName: 'transfer', args: [alice.account.address, value] }))
    expect(receipt.logs).toHaveLength(0)
  }
  expect((await client.simulateContract({ ...t(), functionName: 'transfer', args: [alice.account.address, 1000n] })).result).toBe(true)
  expect(await balanceOf(client.account.address)).toBe(1000n)
  expect(await balanceOf(alice.account.address)).toBe(0n)
})

test('approve sets the allowance (overwriting it) and emits Approval', async () => {
  const [owner, spender] = [client.account.address, alice.account.address]
  const receipt = await send(client, client.writeContract({ ...t(), functionName: 'approve', args: [spender, 50n] }))
  expect(await allowance(owner, spender)).toBe(50n)
  const [event] = parseEventLogs({ abi: CustomToken.abi, logs: receipt.logs, eventName: 'Approval' })
  expect(event?.args).toEqual({ _owner: owner, _spender: spender, _value: 50n })
  await send(client, client.writeContract({ ...t(), functionName: 'approve', args: [spender, 20n] }))
  expect(await allowance(owner, spender)).toBe(20n)
})

test('transferFrom spends the allowance and moves the tokens', async () => {
  const [owner, spender] = [client.account.address, alice.account.address]
  await send(client, client.writeContract({ ...t(), functionName: 'approve', args: [spender, 50n] }))
  const receipt = await send(alice, alice.writeContract({ ...t(), functionName: 'transferFrom', args: [owner, bob.account.address, 30n] }))
  expect(await allowance(owner, spender)).toBe(20n)
  expect(await balanceOf(bob.account.address)).toBe(30n)
  expect(await balanceOf(owner)).toBe(970n)
  const [event] = parseEventLogs({ abi: CustomToken.abi, logs: receipt.logs, eventName: 'Transfer' })
  expect(event?.args).toEqual({ _from: owner, _to: bob.account.address, _value: 30n })
})

test('transferFrom reverts (it does not return false) on zero, a short balance or a short allowance', async () => {
  const owner = client.account.address
  const pull = (value: bigint) => alice.simulateContract({ ...t(), functionName: 'transferFrom', args: [owner, BEEF, value] })
  await expectRevert(pull(1n), 'allowance too low')
  await send(client, client.writeContract({ ...t(), functionName: 'approve', args: [alice.account.address, 5000n] }))
  await expectRevert(pull(0n), 'zero value')
  await expectRevert(pull(1001n), 'balance too low')
  expect((await pull(1000n)).result).toBe(true)
})

test('only the owner can take out ether held by the token', async () => {
  await client.setBalance({ address: token, value: 12345n })
  await expectRevert(alice.simulateContract({ ...t(), functionName: 'transferFunds' }), 'only owner')
  await send(client, client.writeContract({ ...t(), functionName: 'transferFunds' }))
  expect(await client.getBalance({ address: token })).toBe(0n)
})
