import { resolve } from 'node:path'
import type { Anvil } from '../devnet/anvil.ts'
import type { Deployment } from '../chain/deployment.ts'
import { answerAsked, formatFlags, integerFlag, parseFlags, positiveNumberFlag, stringFlag } from './args.ts'
import { hasCode } from '../errors.ts'
import { CliError } from './cliError.ts'
import { nextSignal } from './processSignals.ts'
import type { Command } from './command.ts'
import { formatTable } from './table.ts'

export const chainFlags = {
  port: integerFlag({
    description: 'port of the JSON-RPC server; 0 picks a free one',
    valueName: 'PORT',
    min: 0,
    max: 65535,
    default: 8545,
  }),
  blockTime: positiveNumberFlag({
    // A node counts a block once 5 more are on top (`sluice serve --confirmations`): a chain that mined only when a
    // transaction came would never bury a lone node's own transaction, and its REST call would time out.
    description:
      'mine an empty block every SECONDS as well, so that transactions gain confirmations while none come; a transaction is mined at once either way',
    valueName: 'SECONDS',
    default: 1,
  }),
  maxTokenNetworks: integerFlag({
    description: 'how many token networks the registry accepts',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    default: 1000,
  }),
  deploymentsDir: stringFlag({
    description: 'where to write <chainId>.json, relative to the current directory',
    valueName: 'DIR',
    default: 'deployments',
  }),
}

const usage = `Usage: sluice chain [flags]

Starts a local anvil chain, deploys the Raiden 0.40 contracts, a service token and two test tokens, writes
the deployment file and runs until Ctrl-C. It mines each transaction at once, and an empty block every second
besides (--block-time), so that nodes see their transactions confirmed.

Flags:
${formatFlags(chainFlags)}`

export class PortInUseError extends CliError {
  override name = 'PortInUseError' as const
  override readonly code = 'PORT_IN_USE' as const
  constructor(readonly port: number) {
    super(`port ${port} is already in use (choose another with --port, or --port 0 for a free one)`, 2)
  }
}

function summary(deployment: Deployment, path: string, ms: number, accounts: readonly string[]): string {
  const contracts = Object.entries(deployment.contracts).map(([name, c]) => [name, c.address, String(c.blockNumber)])
  const tokens = Object.entries(deployment.tokens).map(([symbol, address]) => [`token ${symbol}`, address, ''])
  return [
    `Deployed in ${ms.toFixed(0)} ms (contracts ${deployment.contracts_version}, chain id ${deployment.chainId}):`,
    '',
    formatTable(['Contract', 'Address', 'Block'], [...contracts, ['service token', deployment.serviceToken, ''], ...tokens]),
    '',
    `Deployment file: ${path}`,
    `RPC URL: ${deployment.rpcUrl}`,
    '',
    'Funded dev accounts (10000 ETH each; anvil\'s default mnemonic "test test test test test test test test test test test junk"):',
    ...accounts.map((address, i) => `  ${String(i).padStart(2)}  ${address}`),
    '',
    'Press Ctrl-C to stop.',
  ].join('\n')
}

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, chainFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const { port, blockTime, maxTokenNetworks, deploymentsDir } = parsed.values
  // Loaded only now, so that --help and a bad flag answer without loading viem and the contracts.
  const [anvilModule, { deployContracts }, { deploymentPath, writeDeployment }, { createDevnetClient }, { privateKeyToAddress }] = await Promise.all([
    import('../devnet/anvil.ts'),
    import('../devnet/deploy.ts'),
    import('../devnet/deploymentFile.ts'),
    import('../devnet/devnetClient.ts'),
    import('viem/accounts'),
  ])
  const { anvilKeys, startAnvil } = anvilModule
  // Listen before anything starts, so a Ctrl-C during the deployment still stops anvil.
  const stop = nextSignal(['SIGINT', 'SIGTERM'])
  let anvil: Anvil | undefined
  try {
    try {
      anvil = await startAnvil({ port, blockTime, args: ['--mixed-mining'] })
    } catch (e) {
      if (hasCode(e, 'ANVIL_PORT_IN_USE')) throw new PortInUseError(port)
      throw e
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      anvil!.process.once('exit', (code, signal) => resolve({ code, signal })),
    )
    const started = performance.now()
    const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
    const deployment = await deployContracts(client, { rpcUrl: anvil.rpcUrl, maxTokenNetworks: BigInt(maxTokenNetworks) })
    const path = deploymentPath(resolve(deploymentsDir), deployment.chainId)
    await writeDeployment(path, deployment)
    console.log(
      summary(
        deployment,
        path,
        performance.now() - started,
        anvilKeys.map((key) => privateKeyToAddress(key)),
      ),
    )

    const end = await Promise.race([stop.received.then((received) => ({ received })), exited])
    if ('received' in end) {
      console.log(`\n${end.received}: stopping anvil`)
      return 0
    }
    // anvil exits 0 when it was stopped on purpose (e.g. a terminal's Ctrl-C reaches the whole process group).
    if (end.code === 0) {
      console.log('\nanvil stopped')
      return 0
    }
    throw new CliError(`anvil exited unexpectedly (${end.signal ?? `exit code ${end.code}`})`, 1)
  } finally {
    await anvil?.stop()
    stop.dispose()
  }
}

export const chainCommand: Command = { name: 'chain', usage, run }
