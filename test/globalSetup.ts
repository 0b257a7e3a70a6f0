import type { TestProject } from 'vitest/node'
import { startAnvil, anvilKeys } from '../src/devnet/anvil.ts'
import { CustomToken } from '../src/contracts/index.ts'
import { anvilClient } from './support/clients.ts'

/** One anvil for the whole run, with a token deployed; browser tests reach it through inject(). */
export default async function setup(project: TestProject) {
  const anvil = await startAnvil()
  const client = anvilClient(anvil.rpcUrl, anvilKeys[0])
  const hash = await client.deployContract({ abi: CustomToken.abi, bytecode: CustomToken.bytecode, args: [10n ** 24n, 18, 'Test', 'TST'] })
  const { contractAddress } = await client.waitForTransactionReceipt({ hash })
  project.provide('rpcUrl', anvil.rpcUrl)
  project.provide('tokenAddress', contractAddress!)
  return async () => {
    await anvil.stop()
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    rpcUrl: string
    tokenAddress: `0x${string}`
  }
}
