import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { getContractAddress, parseEther, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient, type ChainClient } from '../../src/chain/chainClient.ts'
import { encryptKeystore } from '../../src/chain/keystore.ts'
import { mintTokens } from '../../src/chain/erc20.ts'
import { createTransactionQueue } from '../../src/chain/transactionQueue.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { readDeployment } from '../../src/devnet/deploymentFile.ts'
import { openChannel } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startNode, type Devnet } from '../integration/support/devnet.ts'
import { startFaultyRpc } from '../support/faultyRpc.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { runSluice, startSluice } from './sluiceProcess.ts'

const tempDir = tempDirs('sluice-deploy-')
const anvils: Anvil[] = []
afterAll(async () => {
  await Promise.all(anvils.map((a) => a.stop()))
})

/** A chain of the test's own: `sluice deploy` counts on the deployer's nonce, which no other test may move. */
async function privateChain(...args: string[]): Promise<Anvil> {
  const anvil = await startAnvil({ args })
  anvils.push(anvil)
  return anvil
}

async function rpc(anvil: Anvil, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await res.json()) as { result: unknown }).result
}

const deployArgs = (anvil: Anvil, out: string, key: Hex = anvilKeys[0]) => ['deploy', '--rpc', anvil.rpcUrl, '--key', key, '--out', out]
const nonces = async (anvil: Anvil, address: Address) => ({
  mined: Number(await rpc(anvil, 'eth_getTransactionCount', [address, 'latest'])),
  pending: Number(await rpc(anvil, 'eth_getTransactionCount', [address, 'pending'])),
})
/** What the progress file holds: step id -> nonce. */
function recorded(out: string): Record<string, number> {
  try {
    const steps = (JSON.parse(readFileSync(`${out}.progress.json`, 'utf8')) as { steps: Record<string, { nonce: number }> }).steps
    return Object.fromEntries(Object.entries(steps).map(([id, r]) => [id, r.nonce]))
  } catch {
    return {}
  }
}

/** SecretRegistry, service token, TTT, TT2, the registry, ServiceRegistry, UserDeposit, OneToN, MonitoringService; init; two registrations. */
const STEPS = 12
const deployer = privateKeyToAddress(anvilKeys[0])

describe('sluice deploy', () => {
  let anvil: Anvil
  beforeAll(async () => {
    // As `sluice chain`: each transaction mined at once, and a block a second besides, for the confirmations.
    anvil = await privateChain('--block-time', '1', '--mixed-mining')
  })

  describe('on a fresh chain', () => {
    const dir = tempDir()
    const out = join(dir, 'deployments', 'testnet.json')
    const nodes: SluiceNode[] = []
    afterAll(() => Promise.all(nodes.map((n) => n.stop())))

    test('--test-tokens --json: deploys everything, waits for the confirmations, writes the file serve and startNode read', async () => {
      const { code, stdout, stderr } = await runSluice([...deployArgs(anvil, out), '--test-tokens', '--confirmations', '2', '--json'], dir)
      expect(code).toBe(0)
      expect(stdout.trim().split('\n')).toHaveLength(1)
      const result = JSON.parse(stdout) as { file: string; verified: boolean; sent: number; alreadyDone: string[]; deployment: unknown }
      const deployment = await readDeployment(out)
      expect(result).toEqual({ file: out, verified: true, sent: STEPS, alreadyDone: [], deployment })
      expect(Object.keys(deployment.tokens)).toEqual(['TTT', 'TT2'])
      expect(deployment).toMatchObject({ chainId: 31337, contracts_version: '0.40.0', rpcUrl: anvil.rpcUrl })
      // The progress went to stderr, a line a transaction sent and mined; nothing is left beside the file.
      expect(stderr).toMatch(/^Deploying on chain 31337 from 0x\w{40}: 12 transactions, 17,401,000 gas\.\nAbout [\d.]+ ETH at today's fees; /m)
      expect(stderr.match(/: sent 0x[0-9a-f]{64} \(nonce \d+\)/g)).toHaveLength(STEPS)
      expect(readdirSync(join(dir, 'deployments'))).toEqual(['testnet.json'])
      // Written once the last transaction had its two confirmations.
      const last = Math.max(...Object.values(deployment.contracts).map((c) => c.blockNumber))
      expect(Number(await rpc(anvil, 'eth_blockNumber'))).toBeGreaterThanOrEqual(last + 2)
      expect(await nonces(anvil, deployer)).toEqual({ mined: STEPS, pending: STEPS })
    })

    test('two nodes built from the file open a channel and pay', async () => {
      const deployment = await readDeployment(out)
      const token = deployment.tokens.TTT!
      const net = { anvil, deployment, channelName: `sluice-deploy-${process.pid}`, dataDir: dir } as unknown as Devnet
      const [keyA, keyB] = [anvilKeys[1], anvilKeys[2]]
      const minter: ChainClient = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: keyA, pollingInterval: 50 })
      await mintTokens(minter, createTransactionQueue(minter), { token, amount: 1000n })
      // Raiden's bounds (settle timeout at least 500 blocks): the nodes' defaults fit them.
      const options = { defaultSettleTimeout: 500, defaultRevealTimeout: 50 }
      const a = await startNode(net, keyA, options)
      const b = await startNode(net, keyB, options)
      nodes.push(a, b)
      const { channel } = await openChannel(a.client, { token, partner: b.address, totalDeposit: 100n })
      expect(channel.settleTimeout).toBe(500n)
      await b.client.waitForBlock(channel.openedBlock)
      expect(await sendPayment(a.client, { token, target: b.address, amount: 7n })).toMatchObject({ amount: 7n })
      await eventually(() => expect(b.client.channel(channel.tokenNetwork, a.address)?.partnerEnd.balanceProof?.transferredAmount).toBe(7n))
    })

    test('run again once done, it checks the file against the chain, sends nothing, and leaves the file as it was', async () => {
      const before = readFileSync(out, 'utf8')
      const { code, stdout, stderr } = await runSluice([...deployArgs(anvil, out), '--test-tokens'], dir)
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
      expect(stdout).toBe(
        `${out} is complete and matches chain 31337: 9 contracts with the expected code, wired as given, 2 tokens registered, UserDeposit initialised. Nothing was sent.\n`,
      )
      expect(readFileSync(out, 'utf8')).toBe(before)
      expect(await nonces(anvil, deployer)).toEqual({ mined: STEPS, pending: STEPS })
    })

    test('a file with an address changed is refused with one line naming what is wrong (exit 2)', async () => {
      const file = JSON.parse(readFileSync(out, 'utf8'))
      const tampered = join(dir, 'tampered.json')
      // The SecretRegistry's address is now the OneToN's.
      writeFileSync(tampered, JSON.stringify({ ...file, contracts: { ...file.contracts, SecretRegistry: file.contracts.OneToN } }))
      const { code, stdout, stderr } = await runSluice([...deployArgs(anvil, tampered), '--test-tokens'], dir)
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr.split('\n')).toHaveLength(2)
      expect(stderr).toContain(`sluice deploy: ${tampered} does not match chain 31337 at ${anvil.rpcUrl}: `)
      expect(stderr).toContain(`contracts.SecretRegistry.address ${file.contracts.OneToN.address} is not SecretRegistry's code`)
      expect(stderr).toContain(
        `TokenNetworkRegistry.secret_registry_address is ${file.contracts.SecretRegistry.address}, expected ${file.contracts.OneToN.address}`,
      )
      // Flags that disagree with the chain are refused too: the registry was made with Raiden's bounds.
      const other = await runSluice([...deployArgs(anvil, out), '--test-tokens', '--settle-timeout-min', '20'], dir)
      expect(other.code).toBe(2)
      expect(other.stderr).toContain('TokenNetworkRegistry.settlement_timeout_min is 500, expected 20')
      expect(await nonces(anvil, deployer)).toEqual({ mined: STEPS, pending: STEPS })
    })
  })

  test('killed half-way (twice, with transactions in the pool) and run again: continues, deploys nothing twice, writes the same file', async () => {
    // Blocks only when the test mines them: the runs are killed while their transactions wait in the pool.
    const chain = await privateChain('--no-mining')
    const dir = tempDir()
    const out = join(dir, 'chain.json')
    const args = [...deployArgs(chain, out), '--test-tokens', '--confirmations', '0']

    // First run: killed once the first wave (SecretRegistry, the service token, TTT, TT2) is broadcast, unmined.
    const first = startSluice(args, dir)
    await eventually(() => expect(Object.keys(recorded(out))).toHaveLength(4), 20_000)
    first.child.kill('SIGKILL')
    await first.exited
    expect(await nonces(chain, deployer)).toEqual({ mined: 0, pending: 4 })

    // Second run: waits for those four, sends the second wave once they are mined, and is killed in turn.
    const second = startSluice(args, dir)
    await second.waitForOutput(new RegExp(`waiting for the transactions of ${deployer} sent before \\(nonces 0\\.\\.3\\) to be mined`))
    await rpc(chain, 'evm_mine')
    await eventually(() => expect(Object.keys(recorded(out))).toHaveLength(7), 20_000)
    second.child.kill('SIGKILL')
    await second.exited
    expect(second.stdout()).not.toMatch(/SecretRegistry: sent/)
    // Its three transactions are mined while no run is there.
    await rpc(chain, 'evm_mine')
    expect(await nonces(chain, deployer)).toEqual({ mined: 7, pending: 7 })

    // Third run, on a chain that mines again: the rest.
    const mining = setInterval(() => void rpc(chain, 'evm_mine').catch(() => {}), 100)
    let third: Awaited<ReturnType<typeof runSluice>>
    try {
      third = await runSluice([...args, '--json'], dir)
    } finally {
      clearInterval(mining)
    }
    expect(third.code).toBe(0)
    const result = JSON.parse(third.stdout) as { sent: number; alreadyDone: string[] }
    expect(result.sent).toBe(STEPS - 7)
    expect(result.alreadyDone.sort()).toEqual(
      ['SecretRegistry', 'ServiceRegistry', 'TokenNetworkRegistry', 'UserDeposit', 'service token', 'token TT2', 'token TTT'].sort(),
    )

    // Every step sent once: twelve nonces, each creation at the address its nonce gives, each contract once.
    expect(await nonces(chain, deployer)).toEqual({ mined: STEPS, pending: STEPS })
    const deployment = await readDeployment(out)
    const created = [...Object.values(deployment.contracts).map((c) => c.address), deployment.serviceToken, ...Object.values(deployment.tokens)]
    const atNonces = Array.from({ length: STEPS }, (_, nonce) => getContractAddress({ from: deployer, nonce: BigInt(nonce) }))
    expect(new Set(created).size).toBe(9)
    for (const address of created) expect(atNonces).toContain(address)
    const withCode = await Promise.all(atNonces.map(async (address) => ((await rpc(chain, 'eth_getCode', [address, 'latest'])) as string) !== '0x'))
    expect(withCode.filter(Boolean)).toHaveLength(9)
    // Each contract's block is the one its code appeared in, though two runs were killed before seeing it mined.
    for (const [name, { address, blockNumber }] of Object.entries(deployment.contracts)) {
      expect(await rpc(chain, 'eth_getCode', [address, `0x${blockNumber.toString(16)}`]), name).not.toBe('0x')
      expect(await rpc(chain, 'eth_getCode', [address, `0x${(blockNumber - 1).toString(16)}`]), name).toBe('0x')
    }
    expect(existsSync(`${out}.progress.json`)).toBe(false)

    // Once more: the same file, checked, nothing sent.
    const before = readFileSync(out, 'utf8')
    const fourth = await runSluice(args, dir)
    expect(fourth.code).toBe(0)
    expect(fourth.stdout).toContain('is complete and matches chain 31337')
    expect(readFileSync(out, 'utf8')).toBe(before)
  })

  test('Ctrl-C stops a deployment with exit code 130 and a line that says to run it again, which continues it', async () => {
    const chain = await privateChain('--no-mining')
    const dir = tempDir()
    const out = join(dir, 'chain.json')
    const args = [...deployArgs(chain, out), '--confirmations', '0']
    const first = startSluice(args, dir)
    await eventually(() => expect(Object.keys(recorded(out))).toHaveLength(2), 20_000)
    first.child.kill('SIGINT')
    expect(await first.exited).toEqual({ code: 130, signal: null })
    expect(first.stderr()).toBe('sluice deploy: SIGINT: stopped; run the same command again to continue (nothing will be deployed twice)\n')
    expect(existsSync(`${out}.lock`)).toBe(false)
    const mining = setInterval(() => void rpc(chain, 'evm_mine').catch(() => {}), 100)
    try {
      const again = await runSluice([...args, '--json'], dir)
      expect(again.code).toBe(0)
      expect(JSON.parse(again.stdout)).toMatchObject({ sent: 6, alreadyDone: ['SecretRegistry', 'service token'] })
    } finally {
      clearInterval(mining)
    }
    expect(await nonces(chain, deployer)).toEqual({ mined: 8, pending: 8 })
  })

  test('the endpoint down half-way: the run says in one line to run it again (or waits it out), and the next run finishes it', async () => {
    const chain = await privateChain('--no-mining')
    const endpoint = await startFaultyRpc(chain.rpcUrl)
    try {
      const dir = tempDir()
      const out = join(dir, 'chain.json')
      const args = ['deploy', '--rpc', endpoint.url, '--key', anvilKeys[0], '--out', out, '--confirmations', '0']
      const first = startSluice(args, dir)
      await eventually(() => expect(Object.keys(recorded(out))).toHaveLength(2), 20_000)
      await endpoint.setMode('refuse')
      // The queue waits for the receipts through an endpoint that refuses: it gives up (this queue) or keeps trying.
      const ended = await Promise.race([first.exited, new Promise((r) => setTimeout(r, 5_000))])
      if (ended) {
        expect(ended).toEqual({ code: 1, signal: null })
        expect(first.stderr()).toMatch(
          /^sluice deploy: deploying (SecretRegistry|service token) failed: .*; run the same command again to continue \(nothing will be deployed twice\)\n$/,
        )
      }
      await endpoint.setMode('up')
      const mining = setInterval(() => void rpc(chain, 'evm_mine').catch(() => {}), 100)
      try {
        if (!ended) expect((await first.exited).code).toBe(0)
        const again = await runSluice(args, dir)
        expect(again.code).toBe(0)
      } finally {
        clearInterval(mining)
      }
      // SecretRegistry, service token, the registry, ServiceRegistry, UserDeposit, OneToN, MonitoringService, init: once each.
      expect(await nonces(chain, deployer)).toEqual({ mined: 8, pending: 8 })
      expect(existsSync(out)).toBe(true)
    } finally {
      await endpoint.close()
    }
  })

  describe('transactions dropped from the pool after a crash', () => {
    let chain: Anvil
    let dir: string
    let out: string
    let sentBeforeCrash: Record<string, { nonce: number; hash: Hex }>
    let secondRun: string
    beforeAll(async () => {
      chain = await privateChain('--no-mining')
      dir = tempDir()
      out = join(dir, 'chain.json')
      const first = startSluice([...deployArgs(chain, out), '--confirmations', '0'], dir)
      // The first wave: the SecretRegistry and the service token.
      await eventually(() => expect(Object.keys(recorded(out))).toHaveLength(2), 20_000)
      first.child.kill('SIGKILL')
      await first.exited
      sentBeforeCrash = JSON.parse(readFileSync(`${out}.progress.json`, 'utf8')).steps
      await rpc(chain, 'anvil_dropAllTransactions')
      expect(await nonces(chain, deployer)).toEqual({ mined: 0, pending: 0 })
      const mining = setInterval(() => void rpc(chain, 'evm_mine').catch(() => {}), 100)
      try {
        const again = await runSluice([...deployArgs(chain, out), '--confirmations', '0'], dir)
        expect(again.stderr).toBe('')
        expect(again.code).toBe(0)
        secondRun = again.stdout
      } finally {
        clearInterval(mining)
      }
    })

    test('are sent again at their nonces: each contract once, where the first run said it would be', async () => {
      // SecretRegistry, service token, the registry, ServiceRegistry, UserDeposit, OneToN, MonitoringService, init.
      expect(await nonces(chain, deployer)).toEqual({ mined: 8, pending: 8 })
      const deployment = await readDeployment(out)
      expect(deployment.contracts.SecretRegistry.address).toBe(getContractAddress({ from: deployer, nonce: BigInt(sentBeforeCrash.SecretRegistry!.nonce) }))
      expect(deployment.serviceToken).toBe(getContractAddress({ from: deployer, nonce: BigInt(sentBeforeCrash['service token']!.nonce) }))
    })

    // The queue writes each transaction to its journal (FILE.journal.json) before broadcasting it and, started again,
    // broadcasts those the chain lost: the run waits for them instead of sending the steps anew.
    test('are broadcast again by the queue from its journal, and the run waits for them instead of sending the steps anew', () => {
      expect(secondRun).toContain(`waiting for the transactions of ${deployer} sent before (nonces 0..1) to be mined`)
      expect(secondRun).not.toMatch(/^(SecretRegistry|service token): (sent|its transaction)/m)
      expect(secondRun).toMatch(/^TokenNetworkRegistry: sent /m)
    })
  })

  test("--dry-run sends nothing and prints each step with its gas, and the ETH it costs at today's fees", async () => {
    const dir = tempDir()
    const out = join(dir, 'dry.json')
    const key = anvilKeys[5]
    const { code, stdout, stderr } = await runSluice([...deployArgs(anvil, out, key), '--test-tokens', '--dry-run'], dir)
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    expect(stdout).toMatch(/^Dry run on chain 31337 \(nothing is sent\): 0 steps done already, 12 to send:\n/)
    expect(stdout).toMatch(/^SecretRegistry +175,000$/m)
    expect(stdout).toMatch(/^register TT2 +3,090,000$/m)
    expect(stdout).toMatch(/^total +17,401,000$/m)
    expect(stdout).toMatch(
      new RegExp(
        `^About [\\d.]+ ETH at today's fees; the deployer ${privateKeyToAddress(key)} must hold [\\d.]+ ETH \\(at most [\\d.]+ gwei a gas\\) and holds 10000 ETH\\.$`,
        'm',
      ),
    )
    expect(readdirSync(dir)).toEqual([])
    expect(await nonces(anvil, privateKeyToAddress(key))).toEqual({ mined: 0, pending: 0 })
  })

  test("--dry-run --json, with the key in a keystore (--private-key and --password-file, as Raiden's deployer takes it)", async () => {
    const dir = tempDir()
    const key = generatePrivateKey()
    writeFileSync(join(dir, 'key.json'), JSON.stringify(await encryptKeystore(key, 'secret', { n: 16, r: 1, p: 1 })))
    writeFileSync(join(dir, 'password.txt'), 'secret\n')
    const args = ['deploy', '--rpc-provider', anvil.rpcUrl, '--private-key', 'key.json', '--password-file', 'password.txt', '--out', 'out.json']
    const { code, stdout, stderr } = await runSluice([...args, '--dry-run', '--json', '--max-fee-per-gas', '0.000001'], dir)
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({
      dryRun: true,
      chainId: 31337,
      deployer: privateKeyToAddress(key),
      balance: '0',
      gas: '9627000',
      feePerGas: '1000',
      needed: String(9_627_000n * 1000n + (3_927_000n * 20n * 1000n) / 100n),
      enough: false,
      done: [],
    })
    expect(result.steps.map((s: { id: string }) => s.id)).toEqual([
      'SecretRegistry',
      'service token',
      'TokenNetworkRegistry',
      'ServiceRegistry',
      'UserDeposit',
      'OneToN',
      'MonitoringService',
      'UserDeposit.init',
    ])
  })

  test('too little ETH: one line with the amount needed and exit code 2, before anything is sent', async () => {
    const dir = tempDir()
    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    await rpc(anvil, 'anvil_setBalance', [address, `0x${parseEther('0.001').toString(16)}`])
    const { code, stdout, stderr } = await runSluice([...deployArgs(anvil, 'out.json', key), '--test-tokens'], dir)
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(
      new RegExp(
        `^sluice deploy: ${address} holds 0\\.001 ETH on chain 31337; the deployment needs ([\\d.]+) ETH at today's fees \\(12 transactions, 17,401,000 gas at up to [\\d.]+ gwei\\): send it [\\d.]+ ETH more\\. Nothing was sent\\.\\n$`,
      ),
    )
    expect(await nonces(anvil, address)).toEqual({ mined: 0, pending: 0 })
    expect(readdirSync(dir)).toEqual([])
  })

  test('a --token without code on the chain: exit 2 before anything is sent', async () => {
    const dir = tempDir()
    const token = privateKeyToAddress(generatePrivateKey())
    const { code, stderr } = await runSluice([...deployArgs(anvil, 'out.json', anvilKeys[6]), '--token', token], dir)
    expect(code).toBe(2)
    expect(stderr).toBe(`sluice deploy: --token ${token} has no code on chain 31337: is it a token of this chain?\n`)
    expect(await nonces(anvil, privateKeyToAddress(anvilKeys[6]))).toEqual({ mined: 0, pending: 0 })
  })

  test.concurrent.each([
    [[], /--rpc is required/],
    [['--rpc', 'http://127.0.0.1:1'], /--out is required/],
    [['--rpc', 'http://127.0.0.1:1', '--out', 'x.json'], /--key or --keystore is required/],
    [['--rpc', '127.0.0.1:8545'], /--rpc must be an http\(s\) URL, got "127.0.0.1:8545"/],
    [['--settle-timeout-min', '600000', '--rpc', 'http://a', '--out', 'x'], /--settle-timeout-max \(555428\) must be above --settle-timeout-min \(600000\)/],
    [
      ['--service-deposit-bump-numerator', '4', '--rpc', 'http://a', '--out', 'x'],
      /--service-deposit-bump-numerator must be at least --service-deposit-bump-denominator/,
    ],
    [['--token', '0x1234'], /--token must be an address, 0x and 40 hex digits, got "0x1234"/],
    [['--token-address', '0x1234'], /--token-address must be an address/],
    [['--max-fee-per-gas', 'cheap'], /--max-fee-per-gas must be a positive number of gwei, e.g. 2 or 0.5, got "cheap"/],
    [['--max-fee-per-gas', '0'], /--max-fee-per-gas must be a positive number of gwei/],
    [['--user-deposit-whole-limit', '-1'], /--user-deposit-whole-limit must be a decimal integer below 2\^256/],
    [['--rpc', 'http://a', '--out', 'x', '--key', anvilKeys[0], '--keystore', 'k.json'], /give either --key or --keystore, not both/],
    [['--out', 'x', '--key', anvilKeys[0], '--rpc', 'http://127.0.0.1:1'], /^sluice deploy: --rpc http:\/\/127\.0\.0\.1:1: eth_chainId failed/],
    [['now'], /unexpected argument "now"/],
  ])('%j exits 2 with a one-line error', async (args, message) => {
    const { code, stdout, stderr } = await runSluice(['deploy', ...args], tempDir())
    expect(stderr).toMatch(message)
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.split('\n')).toHaveLength(2)
  })
})
