import { getAddress, isAddress, type Address } from 'viem'
import { SluiceError } from '../errors.ts'

/**
 * The deployment: which contracts of a chain a node uses, as data (a host reads it from a file or a URL).
 * Browser-safe; the file's reading and writing are src/devnet/deploymentFile.ts.
 */

/** The contracts version whose ABI and behaviour ours reproduce (docs/protocol.md §0). */
export const contractsVersion = '0.40.0'

/** The contracts a deployment names, in deployment order. */
export const deployedContractNames = ['SecretRegistry', 'TokenNetworkRegistry', 'ServiceRegistry', 'UserDeposit', 'OneToN', 'MonitoringService'] as const

export type DeployedContractName = (typeof deployedContractNames)[number]

export type DeployedContract = {
  address: Address
  /** The block the contract was created in; a node syncs the registry's events from here. */
  blockNumber: number
}

/** The deployment file `sluice chain` writes (docs/architecture.md, the deployment file). */
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

/** A field is missing or has the wrong type; `field` is its dotted path, e.g. `contracts.OneToN.address`. */
export class InvalidDeploymentError extends SluiceError {
  override name = 'InvalidDeploymentError' as const
  override readonly code = 'INVALID_DEPLOYMENT' as const
  constructor(
    readonly field: string,
    readonly expected: string,
    readonly got: unknown,
    readonly path?: string,
  ) {
    super(`${path ? `deployment file ${path}: ` : 'deployment: '}${field} must be ${expected}, got ${describe(got)}`)
  }
}

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
