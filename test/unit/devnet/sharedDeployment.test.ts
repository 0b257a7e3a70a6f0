import { createPublicClient, http } from 'viem'
import { expect, inject, test } from 'vitest'
import { parseDeployment } from '../../../src/chain/deployment.ts'

test("the run's shared chain (test/globalSetup.ts) provides a valid, live deployment", async () => {
  const deployment = inject('deployment')
  expect(parseDeployment(deployment)).toEqual(deployment)
  expect(deployment.rpcUrl).toBe(inject('rpcUrl'))
  expect(inject('tokenAddress')).toBe(deployment.tokens.TTT)
  const client = createPublicClient({ transport: http(deployment.rpcUrl) })
  expect(await client.getChainId()).toBe(deployment.chainId)
  for (const { address } of Object.values(deployment.contracts)) expect(((await client.getCode({ address })) ?? '0x').length).toBeGreaterThan(2)
})
