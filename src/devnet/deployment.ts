import { SluiceError } from '../errors.ts'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { getAddress, isAddress, type Address } from 'viem'

/** The contracts version whose ABI and behaviour ours reproduce (protocol.md §0). */
export const contractsVersion = '0.40.0'

/** The contracts a deployment names, in deployment order. */
export const deployedContractNames = [
  'SecretRegistry',
  'TokenNetworkRegistry',
  'ServiceRegistry',
  'UserDeposit',
  'OneToN',
  'MonitoringService',
] as const

export type DeployedContractName = (typeof deployedContractNames)[number]

export type DeployedContract = {
  address: Address
  /** The block the contract was created in; a node syncs the registry's events from here. */
  blockNumber: number
}

/** The deployment file `sluice chain` writes (design.md §7). */
export type Deployment = {
  chainId: number
  contracts_version: typeof contractsVersion
  contracts: Record<DeployedContractName, DeployedContract>
  /** Test tokens by symbol. */
  tokens: Record<string, Address>
  /** The token of UserDeposit, ServiceRegistry and MonitoringService. */
  serviceToken: Address
  rpcUrl: string
}

/** Where `sluice chain` keeps the deployment of a chain: `<dir>/<chainId>.json`. */
export function deploymentPath(dir: string, chainId: number): string {
  return join(dir, `${chainId}.json`)
}

export class DeploymentNotFoundError extends SluiceError {
  override name = 'DeploymentNotFoundError' as const
  override readonly code = 'DEPLOYMENT_NOT_FOUND' as const
  constructor(readonly path: string) {
    super(`no deployment file at ${path}`)
  }
}

export class DeploymentSyntaxError extends SluiceError {
  override name = 'DeploymentSyntaxError' as const
  override readonly code = 'DEPLOYMENT_SYNTAX' as const
  constructor(readonly path: string, cause: unknown) {
    super(`deployment file ${path} is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}

/** A field is missing or has the wrong type; `field` is its dotted path, e.g. `contracts.OneToN.address`. */
export class InvalidDeploymentError extends SluiceError {
  override name = 'InvalidDeploymentError' as const
  override readonly code = 'INVALID_DEPLOYMENT' as const
  constructor(readonly field: string, readonly expected: string, readonly got: unknown, readonly path?: string) {
    super(`${path ? `deployment file ${path}: ` : 'deployment: '}${field} must be ${expected}, got ${describe(got)}`)
  }
}

export type ReadDeploymentErrorType = DeploymentNotFoundError | DeploymentSyntaxError | InvalidDeploymentError

function describe(value: unknown): string {
  if (value === undefined) return 'nothing'
  const json = JSON.stringify(value)
  return json.length > 60 ? `${json.slice(0, 57)}...` : json
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Checks that `value` has the shape of a deployment and returns it with checksummed addresses.
 * Unknown extra fields are ignored, so a newer file still reads.
 */
export function parseDeployment(value: unknown, path?: string): Deployment {
  const fail = (field: string, expected: string, got: unknown): never => {
    throw new InvalidDeploymentError(field, expected, got, path)
  }
  const address = (field: string, v: unknown): Address =>
    typeof v === 'string' && isAddress(v, { strict: false }) ? getAddress(v) : fail(field, 'a 20-byte hex address', v)
  const blockNumber = (field: string, v: unknown): number =>
    Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : fail(field, 'a block number (integer >= 0)', v)

  if (!isRecord(value)) return fail('the file', 'a JSON object', value)
  const { chainId, contracts_version, contracts, tokens, serviceToken, rpcUrl } = value
  if (!Number.isSafeInteger(chainId) || (chainId as number) <= 0) fail('chainId', 'a positive integer', chainId)
  if (contracts_version !== contractsVersion) fail('contracts_version', `"${contractsVersion}"`, contracts_version)
  if (!isRecord(contracts)) return fail('contracts', 'an object', contracts)
  const parsedContracts = {} as Record<DeployedContractName, DeployedContract>
  for (const name of deployedContractNames) {
    const entry = contracts[name]
    if (!isRecord(entry)) return fail(`contracts.${name}`, 'an object with address and blockNumber', entry)
    parsedContracts[name] = {
      address: address(`contracts.${name}.address`, entry.address),
      blockNumber: blockNumber(`contracts.${name}.blockNumber`, entry.blockNumber),
    }
  }
  if (!isRecord(tokens)) return fail('tokens', 'an object of token name to address', tokens)
  const parsedTokens: Record<string, Address> = {}
  for (const [name, token] of Object.entries(tokens)) parsedTokens[name] = address(`tokens.${name}`, token)
  if (typeof rpcUrl !== 'string' || !/^(https?|wss?):\/\/./.test(rpcUrl)) fail('rpcUrl', 'an http(s) or ws(s) URL', rpcUrl)
  return {
    chainId: chainId as number,
    contracts_version: contractsVersion,
    contracts: parsedContracts,
    tokens: parsedTokens,
    serviceToken: address('serviceToken', serviceToken),
    rpcUrl: rpcUrl as string,
  }
}

/** Reads and validates a deployment file; throws one of {@link ReadDeploymentErrorType}. */
export async function readDeployment(path: string): Promise<Deployment> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new DeploymentNotFoundError(path)
    throw e
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw new DeploymentSyntaxError(path, e)
  }
  return parseDeployment(json, path)
}

/**
 * Writes the deployment as indented JSON, creating the directory. It writes a temporary file and renames
 * it, so a reader polling for the file never sees half of it.
 */
export async function writeDeployment(path: string, deployment: Deployment): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(deployment, null, 2)}\n`)
  await rename(temporary, path)
}
