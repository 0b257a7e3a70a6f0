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
  // Created with a million tokens of 18 decimals; other tests mint TTT (anyone may) on the run's shared chain.
  expect(supply).toBeGreaterThanOrEqual(10n ** 24n)
})
