import type { TestProject } from 'vitest/node'
import { startAnvil, anvilKeys } from '../src/devnet/anvil.ts'
import { deployContracts } from '../src/devnet/deploy.ts'
import type { Deployment } from '../src/chain/deployment.ts'
import { anvilClient } from './support/clients.ts'

/**
 * One anvil for the whole run with every contract deployed by the same code as `sluice chain`; tests in both
 * projects reach it through inject('deployment') (and the older shortcuts rpcUrl and tokenAddress).
 */
export default async function setup(project: TestProject) {
  const anvil = await startAnvil()
  try {
    const deployment = await deployContracts(anvilClient(anvil.rpcUrl, anvilKeys[0]), { rpcUrl: anvil.rpcUrl })
    project.provide('deployment', deployment)
    project.provide('rpcUrl', anvil.rpcUrl)
    project.provide('tokenAddress', deployment.tokens.TTT)
  } catch (e) {
    await anvil.stop()
    throw e
  }
  return async () => {
    await anvil.stop()
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    deployment: Deployment
    rpcUrl: string
    /** The first test token (TTT) of the deployment. */
    tokenAddress: `0x${string}`
  }
}
