import { createPublicClient, http, parseAbi } from 'viem'
import { foundry } from 'viem/chains'
import { expect, inject, test } from 'vitest'

test('Chromium reaches the anvil chain and reads the deployed token', async () => {
  const client = createPublicClient({ chain: foundry, transport: http(inject('rpcUrl')) })
  const supply = await client.readContract({
    address: inject('tokenAddress'),
    abi: parseAbi(['function totalSupply() view returns (uint256)']),
    functionName: 'totalSupply',
  })
  expect(supply).toBe(10n ** 24n)
})
