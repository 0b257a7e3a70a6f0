import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAddress } from 'viem'
import { afterAll, describe, expect, test } from 'vitest'
import { InvalidDeploymentError, parseDeployment, type Deployment } from '../../../src/chain/deployment.ts'
import { DeploymentNotFoundError, DeploymentSyntaxError, deploymentPath, readDeployment, writeDeployment } from '../../../src/devnet/deploymentFile.ts'

const dir = mkdtempSync(join(tmpdir(), 'sluice-deployment-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const address = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const valid: Deployment = {
  chainId: 31337,
  contracts_version: '0.40.0',
  contracts: {
    TokenNetworkRegistry: { address: address(2), blockNumber: 2 },
    SecretRegistry: { address: address(1), blockNumber: 1 },
    UserDeposit: { address: address(5), blockNumber: 5 },
    ServiceRegistry: { address: address(4), blockNumber: 4 },
    OneToN: { address: address(6), blockNumber: 6 },
    MonitoringService: { address: address(7), blockNumber: 7 },
  },
  tokens: { TTT: address(9), TT2: address(10) },
  serviceToken: address(3),
  rpcUrl: 'http://127.0.0.1:8545',
}

/** A copy of the valid deployment with one field replaced (or removed, for undefined) at a dotted path. */
function withField(path: string, value: unknown): unknown {
  const copy = structuredClone(valid) as unknown as Record<string, unknown>
  const keys = path.split('.')
  let target = copy
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>
  if (value === undefined) delete target[keys.at(-1)!]
  else target[keys.at(-1)!] = value
  return copy
}

describe('parseDeployment', () => {
  test('accepts a valid deployment and checksums its addresses', () => {
    const lower = withField('tokens.TTT', '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266')
    expect(parseDeployment(lower).tokens.TTT).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266')
    expect(parseDeployment(valid)).toEqual(valid)
  })

  test('ignores fields it does not know', () => {
    expect(parseDeployment({ ...valid, comment: 'hi' })).toEqual(valid)
  })

  test.each([
    ['chainId', '31337', 'chainId must be a positive integer, got "31337"'],
    ['chainId', undefined, 'chainId must be a positive integer, got nothing'],
    ['contracts_version', '0.50.0', 'contracts_version must be "0.40.0", got "0.50.0"'],
    ['contracts', [], 'contracts must be an object, got []'],
    ['contracts.OneToN', undefined, 'contracts.OneToN must be an object with address and blockNumber, got nothing'],
    ['contracts.UserDeposit.address', '0x1234', 'contracts.UserDeposit.address must be a 20-byte hex address, got "0x1234"'],
    ['contracts.SecretRegistry.blockNumber', -1, 'contracts.SecretRegistry.blockNumber must be a block number (integer >= 0), got -1'],
    ['contracts.SecretRegistry.blockNumber', '1', 'contracts.SecretRegistry.blockNumber must be a block number (integer >= 0), got "1"'],
    ['tokens', null, 'tokens must be an object of token name to address, got null'],
    ['tokens.TT2', 42, 'tokens.TT2 must be a 20-byte hex address, got 42'],
    ['serviceToken', undefined, 'serviceToken must be a 20-byte hex address, got nothing'],
    ['rpcUrl', 'localhost:8545', 'rpcUrl must be an http(s) or ws(s) URL, got "localhost:8545"'],
  ])('rejects %s = %j with a message naming the field', (field, value, message) => {
    let error: unknown
    try {
      parseDeployment(withField(field, value))
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(InvalidDeploymentError)
    expect(error).toMatchObject({ name: 'InvalidDeploymentError', field })
    expect((error as Error).message).toBe(`deployment: ${message}`)
  })

  test('rejects a value that is not an object', () => {
    expect(() => parseDeployment([valid])).toThrow('deployment: the file must be a JSON object, got [')
  })
})

describe('readDeployment and writeDeployment', () => {
  test('write creates the directory, leaves no temporary file, and reads back the same deployment', async () => {
    const path = deploymentPath(join(dir, 'nested', 'deployments'), 31337)
    expect(path).toBe(join(dir, 'nested', 'deployments', '31337.json'))
    await writeDeployment(path, valid)
    expect(readdirSync(join(dir, 'nested', 'deployments'))).toEqual(['31337.json'])
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(valid)
    expect(await readDeployment(path)).toEqual(valid)
  })

  test('a missing file is a DeploymentNotFoundError', async () => {
    const path = join(dir, 'none.json')
    await expect(readDeployment(path)).rejects.toThrow(new DeploymentNotFoundError(path))
    await expect(readDeployment(path)).rejects.toMatchObject({ name: 'DeploymentNotFoundError', path })
  })

  test('a file that is not JSON is a DeploymentSyntaxError', async () => {
    const path = join(dir, 'broken.json')
    writeFileSync(path, '{"chainId": 31337,')
    await expect(readDeployment(path)).rejects.toMatchObject({ name: 'DeploymentSyntaxError', path })
    await expect(readDeployment(path)).rejects.toBeInstanceOf(DeploymentSyntaxError)
    await expect(readDeployment(path)).rejects.toThrow(/^deployment file .*broken\.json is not valid JSON: /)
  })

  test('an invalid field names the file and the field', async () => {
    const path = join(dir, 'bad.json')
    writeFileSync(path, JSON.stringify(withField('contracts.MonitoringService.address', 'nope')))
    await expect(readDeployment(path)).rejects.toThrow(`deployment file ${path}: contracts.MonitoringService.address must be a 20-byte hex address, got "nope"`)
    await expect(readDeployment(path)).rejects.toMatchObject({ name: 'InvalidDeploymentError', field: 'contracts.MonitoringService.address', path })
  })
})
