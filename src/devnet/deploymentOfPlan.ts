import { getAddress, keccak256, type Address, type PublicClient } from 'viem'
import { contractsVersion, deployedContractNames, type DeployedContractName, type Deployment } from '../chain/deployment.ts'
import { CustomToken, codeHashes } from '../contracts/index.ts'
import { stepIds, type DeployPlan, type StepId } from './deployPlan.ts'
import type { DeploymentRun } from './deployRunner.ts'

/**
 * Between a plan's steps and the deployment file (docs/architecture.md, the deployment file): the file a finished
 * run gives, and the check of a file against the chain and the plan (`sluice deploy` run again once all is done).
 */

/** The deployment file of a finished run. A given token is named by its symbol (or its address, if it has none or it is taken). */
export async function deploymentOf(
  client: PublicClient,
  plan: DeployPlan,
  run: DeploymentRun,
  { chainId, rpcUrl }: { chainId: number; rpcUrl: string },
): Promise<Deployment> {
  const address = (id: StepId) => run.addresses.get(id)!
  const contracts = Object.fromEntries(
    deployedContractNames.map((name) => [name, { address: address(name), blockNumber: run.blocks.get(name) ?? 0 }]),
  ) as Deployment['contracts']
  const tokens: Record<string, Address> = {}
  for (const { symbol } of plan.parameters.testTokens) tokens[symbol] = address(stepIds.testToken(symbol))
  for (const token of plan.parameters.tokens) {
    const symbol = await tokenSymbol(client, getAddress(token))
    tokens[symbol && !(symbol in tokens) ? symbol : getAddress(token)] = getAddress(token)
  }
  return { chainId, contracts_version: contractsVersion, contracts, tokens, serviceToken: address(stepIds.serviceToken), rpcUrl }
}

/** A token's symbol(), when it has one that reads as a name (letters, digits, a few signs). */
export async function tokenSymbol(client: PublicClient, token: Address): Promise<string | undefined> {
  try {
    const symbol = await client.readContract({ address: token, abi: CustomToken.abi, functionName: 'symbol' })
    return /^[\w.+-]{1,32}$/.test(symbol) ? symbol : undefined
  } catch {
    return undefined
  }
}

/** Each step's address as a deployment file gives it; `missing` names what the plan has and the file lacks. */
export function addressesIn(plan: DeployPlan, deployment: Deployment): { addresses: Map<StepId, Address>; missing: string[] } {
  const addresses = new Map<StepId, Address>(plan.given)
  const missing: string[] = []
  for (const name of deployedContractNames) addresses.set(name, deployment.contracts[name].address)
  if (!plan.given.has(stepIds.serviceToken)) addresses.set(stepIds.serviceToken, deployment.serviceToken)
  for (const { symbol } of plan.parameters.testTokens) {
    const token = deployment.tokens[symbol]
    if (token) addresses.set(stepIds.testToken(symbol), token)
    else missing.push(`tokens.${symbol}`)
  }
  const inFile = new Set(Object.values(deployment.tokens).map((t) => t.toLowerCase()))
  for (const token of plan.parameters.tokens) if (!inFile.has(token.toLowerCase())) missing.push(`the token ${getAddress(token)}`)
  return { addresses, missing }
}

/**
 * What is wrong with a deployment file, read against the chain and the plan: the chain id, every contract's code
 * (its hash), how they are wired (the registry's secret registry and settle timeouts, UserDeposit's services, ...),
 * each token's registration. Empty when all is right.
 */
export async function checkDeployment(client: PublicClient, chainId: number, plan: DeployPlan, deployment: Deployment): Promise<string[]> {
  if (deployment.chainId !== chainId) return [`the file is for chain ${deployment.chainId}, the RPC endpoint serves chain ${chainId}`]
  const { addresses, missing } = addressesIn(plan, deployment)
  const problems = missing.map((m) => `${m} is not in the file`)
  const givenServiceToken = plan.given.get(stepIds.serviceToken)
  if (givenServiceToken && getAddress(deployment.serviceToken) !== givenServiceToken)
    problems.push(`serviceToken is ${deployment.serviceToken}, not the given ${givenServiceToken}`)
  const addressOf = (id: StepId) => addresses.get(id)!
  for (const step of plan.steps) {
    if (step.kind === 'call') {
      if (!step.needs.every((n) => addresses.has(n))) continue
      const { done, problems: wrong } = await step.state(client, addressOf)
      if (!done) problems.push(`${step.id} is not done on the chain`)
      problems.push(...wrong)
      continue
    }
    const address = addresses.get(step.id)
    if (!address) continue
    const code = await client.getCode({ address })
    if (!code || code === '0x') {
      problems.push(`${where(step.id)} ${address} has no code on chain ${chainId}`)
      continue
    }
    if (keccak256(code) !== codeHashes[step.contract]) {
      problems.push(`${where(step.id)} ${address} is not ${step.contract}'s code`)
      continue
    }
    problems.push(...(await step.check(client, address, addressOf).catch((e: Error) => [`${step.id}: ${e.message.split('\n')[0]}`])))
  }
  return problems
}

/** Where the file names a step's contract: `contracts.OneToN.address`, `serviceToken`, `tokens.TTT`. */
function where(id: StepId): string {
  if ((deployedContractNames as readonly string[]).includes(id)) return `contracts.${id as DeployedContractName}.address`
  if (id === stepIds.serviceToken) return 'serviceToken'
  return `tokens.${id.replace(/^token /, '')}`
}
