import { afterAll, beforeAll, expect, test } from 'vitest'
import { CustomToken } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'

let anvil: Anvil
let client: AnvilClient
beforeAll(async () => {
  anvil = await startAnvil()
  client = anvilClient(anvil.rpcUrl, anvilKeys[0])
})
afterAll(() => anvil.stop())

test('a test token mints to anyone through each of its three mint functions', async () => {
  const token = await deploy(client, CustomToken, [1000n, 18, 'T', 'T'])
  const [a, b] = [client.account.address, '0x000000000000000000000000000000000000bEEF' as const]
  const read = (who: `0x${string}`) => client.readContract({ address: token, abi: CustomToken.abi, functionName: 'balanceOf', args: [who] })
  await client.waitForTransactionReceipt({ hash: await client.writeContract({ address: token, abi: CustomToken.abi, functionName: 'mint', args: [5n] }) })
  await client.waitForTransactionReceipt({ hash: await client.writeContract({ address: token, abi: CustomToken.abi, functionName: 'mint', args: [b, 7n] }) })
  await client.waitForTransactionReceipt({ hash: await client.writeContract({ address: token, abi: CustomToken.abi, functionName: 'mintFor', args: [11n, b] }) })
  expect(await read(a)).toBe(1005n)
  expect(await read(b)).toBe(18n)
  expect(await client.readContract({ address: token, abi: CustomToken.abi, functionName: 'totalSupply' })).toBe(1023n)
})

test('transferFrom without allowance reverts with a reason', async () => {
  const { expectRevert } = await import('../support/revert.ts')
  const token = await deploy(client, CustomToken, [1000n, 18, 'T', 'T'])
  await expectRevert(
    client.simulateContract({ address: token, abi: CustomToken.abi, functionName: 'transferFrom', args: [client.account.address, '0x000000000000000000000000000000000000bEEF', 1n] }),
    'allowance too low',
  )
})
