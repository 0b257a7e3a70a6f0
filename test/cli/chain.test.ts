import { existsSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { createPublicClient, http, maxUint256, type Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { afterAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { readDeployment } from '../../src/devnet/deploymentFile.ts'
import { TokenNetworkRegistry, UserDeposit } from '../../src/contracts/index.ts'
import { anvilClient } from '../support/clients.ts'
import { expectRevert } from '../support/revert.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { childProcesses, isAlive, runSluice, startSluice, type SluiceProcess } from './sluiceProcess.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

const tempDir = tempDirs('sluice-chain-')

/** Starts `sluice chain` and waits until it is ready; returns the process, its RPC URL and its anvil. */
async function startChain(args: string[], cwd = tempDir()) {
  const sluice = startSluice(['chain', ...args], cwd)
  await sluice.waitForOutput(/Press Ctrl-C to stop/)
  const rpcUrl = /RPC URL: (\S+)/.exec(sluice.stdout())![1]!
  const anvil = childProcesses(sluice.child.pid!).find((p) => p.name === 'anvil')
  if (!anvil) throw new Error('no anvil child process')
  return { sluice, rpcUrl, anvilPid: anvil.pid, cwd }
}

async function stop(sluice: SluiceProcess, signal: NodeJS.Signals) {
  sluice.child.kill(signal)
  return sluice.exited
}

const publicClient = (rpcUrl: string) => createPublicClient({ chain: foundry, transport: http(rpcUrl), cacheTime: 0 })

describe('sluice chain', () => {
  test('deploys everything, writes the deployment file, serves RPC, and stops on Ctrl-C leaving no anvil behind', async () => {
    const { sluice, rpcUrl, anvilPid, cwd } = await startChain(['--port', '0'])
    expect(Number(new URL(rpcUrl).port)).toBeGreaterThan(0)

    const path = join(cwd, 'deployments', '31337.json')
    const raw = JSON.parse(readFileSync(path, 'utf8'))
    // The exact shape of docs/architecture.md (the deployment file), key for key.
    expect(Object.keys(raw)).toEqual(['chainId', 'contracts_version', 'contracts', 'tokens', 'serviceToken', 'rpcUrl'])
    expect(Object.keys(raw.contracts).sort()).toEqual([
      'MonitoringService',
      'OneToN',
      'SecretRegistry',
      'ServiceRegistry',
      'TokenNetworkRegistry',
      'UserDeposit',
    ])
    for (const entry of Object.values(raw.contracts)) expect(Object.keys(entry as object)).toEqual(['address', 'blockNumber'])
    expect(Object.keys(raw.tokens)).toEqual(['TTT', 'TT2'])
    expect(raw).toMatchObject({ chainId: 31337, contracts_version: '0.40.0', rpcUrl })
    expect(await readDeployment(path)).toEqual(raw)

    const client = publicClient(rpcUrl)
    const addresses: Address[] = [
      ...Object.values(raw.contracts).map((c) => (c as { address: Address }).address),
      ...(Object.values(raw.tokens) as Address[]),
      raw.serviceToken,
    ]
    expect(new Set(addresses).size).toBe(9)
    for (const address of addresses) expect((await client.getCode({ address }))?.length ?? 0).toBeGreaterThan(2)
    // The contracts are wired to each other.
    const registry = { address: raw.contracts.TokenNetworkRegistry.address, abi: TokenNetworkRegistry.abi } as const
    expect(await client.readContract({ ...registry, functionName: 'secret_registry_address' })).toBe(raw.contracts.SecretRegistry.address)
    expect(await client.readContract({ address: raw.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'msc_address' })).toBe(
      raw.contracts.MonitoringService.address,
    )

    const out = sluice.stdout()
    for (const [name, c] of Object.entries(raw.contracts) as [string, { address: string; blockNumber: number }][])
      expect(out).toMatch(new RegExp(`${name}\\s+${c.address}\\s+${c.blockNumber}\\n`))
    expect(out).toContain(`token TTT             ${raw.tokens.TTT}`)
    expect(out).toContain(raw.serviceToken)
    expect(out).toContain(`Deployment file: ${path}`)
    for (const key of anvilKeys) expect(out).toContain(privateKeyToAddress(key))

    expect(isAlive(anvilPid)).toBe(true)
    expect(await stop(sluice, 'SIGINT')).toEqual({ code: 0, signal: null })
    expect(isAlive(anvilPid)).toBe(false)
    expect(sluice.stderr()).toBe('')
  })

  test('writes into --deployments-dir relative to the working directory, and stops on SIGTERM', async () => {
    const { sluice, anvilPid, cwd } = await startChain(['--port=0', '--deployments-dir', 'out/chains'])
    expect(existsSync(join(cwd, 'out', 'chains', '31337.json'))).toBe(true)
    expect(existsSync(join(cwd, 'deployments'))).toBe(false)
    expect(await stop(sluice, 'SIGTERM')).toEqual({ code: 0, signal: null })
    expect(isAlive(anvilPid)).toBe(false)
  })

  test('mines an empty block every second by default, so that transactions gain confirmations while none come', async () => {
    const { sluice, rpcUrl, cwd } = await startChain(['--port', '0'])
    expect(existsSync(join(cwd, 'deployments', '31337.json'))).toBe(true)
    const client = publicClient(rpcUrl)
    const before = await client.getBlockNumber()
    await new Promise((r) => setTimeout(r, 2600))
    expect(await client.getBlockNumber()).toBeGreaterThanOrEqual(before + 2n)
    expect((await stop(sluice, 'SIGINT')).code).toBe(0)
  })

  test('--block-time 60 still mines a transaction at once, not at the next interval', async () => {
    const { sluice, rpcUrl } = await startChain(['--port', '0', '--block-time', '60'])
    const sender = anvilClient(rpcUrl, anvilKeys[1])
    const hash = await sender.sendTransaction({ to: privateKeyToAddress(anvilKeys[2]), value: 1n })
    // Well under the 60 s interval: anvil mined it as it came.
    expect((await waitForReceipt(sender, hash, { timeout: 10_000 })).status).toBe('success')
    expect((await stop(sluice, 'SIGINT')).code).toBe(0)
  })

  test('--max-token-networks 1 lets the registry take one token network and refuse the second', async () => {
    const { sluice, rpcUrl, cwd } = await startChain(['--port', '0', '--max-token-networks', '1'])
    const { contracts, tokens } = await readDeployment(join(cwd, 'deployments', '31337.json'))
    const client = anvilClient(rpcUrl, anvilKeys[0])
    const registry = { address: contracts.TokenNetworkRegistry.address, abi: TokenNetworkRegistry.abi } as const
    expect(await client.readContract({ ...registry, functionName: 'max_token_networks' })).toBe(1n)

    const hash = await client.writeContract({ ...registry, functionName: 'createERC20TokenNetwork', args: [tokens.TTT!, maxUint256, maxUint256] })
    expect((await waitForReceipt(client, hash, { timeout: 20_000 })).status).toBe('success')
    expect(await client.readContract({ ...registry, functionName: 'token_network_created' })).toBe(1n)
    await expectRevert(
      client.simulateContract({ ...registry, functionName: 'createERC20TokenNetwork', args: [tokens.TT2!, maxUint256, maxUint256] }),
      'TNR: registry full',
    )
    expect((await stop(sluice, 'SIGINT')).code).toBe(0)
  })

  test('exits 1 with a one-line error when anvil dies under it', async () => {
    const { sluice, anvilPid } = await startChain(['--port', '0'])
    process.kill(anvilPid, 'SIGKILL')
    expect(await sluice.exited).toEqual({ code: 1, signal: null })
    expect(sluice.stderr()).toBe('sluice chain: anvil exited unexpectedly (SIGKILL)\n')
  })

  describe('a port in use', () => {
    let server: Server
    afterAll(() => server?.close())

    test('exits 2 with a one-line error', async () => {
      server = createServer()
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      const port = (server.address() as { port: number }).port
      const { code, stdout, stderr } = await runSluice(['chain', '--port', String(port)], tempDir())
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toMatch(new RegExp(`^sluice chain: port ${port} is already in use[^\\n]*\\n$`))
    })
  })

  test.concurrent.each([
    [['--bogus'], /unknown flag --bogus/],
    [['--port', 'abc'], /--port must be an integer from 0 to 65535, got "abc"/],
    [['--port', '65536'], /--port must be an integer from 0 to 65535, got "65536"/],
    [['--block-time', '0'], /--block-time must be a positive number, got "0"/],
    [['--block-time', 'fast'], /--block-time must be a positive number, got "fast"/],
    [['--port'], /--port needs a value/],
    [['--block-time', '--port', '0'], /--block-time needs a value/],
    [['--max-token-networks', '0'], /--max-token-networks must be an integer >= 1, got "0"/],
    [['now'], /unexpected argument "now"/],
  ])('%j exits 2 with a one-line error', async (args, message) => {
    const { code, stdout, stderr } = await runSluice(['chain', ...args], tempDir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.endsWith('\n') && stderr.split('\n').length).toBe(2)
    expect(stderr).toMatch(/^sluice chain: /)
    expect(stderr).toMatch(message)
  })
})
