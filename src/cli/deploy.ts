import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Address } from 'viem'
import type { Deployment } from '../chain/deployment.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import type { DeployCost } from '../devnet/deployCost.ts'
import type { DeployParameters } from '../devnet/deployPlan.ts'
import { hasCode, SluiceError } from '../errors.ts'
import { answerAsked, formatFlags, integerFlag, parseFlags, stringFlag, switchFlag, type FlagSpec, type ParsedFlags, maxFeePerGasFlag } from './args.ts'
import { CliError, UsageError } from './cliError.ts'
import type { Command } from './command.ts'
import { parseAddress } from './keystoreDirectory.ts'
import { nextSignal } from './processSignals.ts'
import { loadPrivateKey, MissingFlagError, parseUrl, serveFlags, StartupError } from './serve.ts'
import { formatTable } from './table.ts'

/** Raiden's defaults (raiden-contracts' deployer, 0.40), as shown in --help. */
const defaults = {
  settleTimeoutMin: 500,
  settleTimeoutMax: 555_428,
  maxTokenNetworks: 1000,
  initialServiceDepositPrice: 2000n * 10n ** 18n,
  serviceDepositBumpNumerator: 6,
  serviceDepositBumpDenominator: 5,
  serviceDepositDecayConstant: 200 * 86_400,
  serviceDepositMinPrice: 1000n,
  serviceRegistrationDuration: 180 * 86_400,
}

const MAX_UINT256 = 2n ** 256n - 1n

function amountFlag(description: string, fallback?: bigint): FlagSpec<bigint> {
  return {
    description,
    valueName: 'AMOUNT',
    expected: 'a decimal integer below 2^256',
    parse: (raw) => (/^(0|[1-9]\d*)$/.test(raw) && BigInt(raw) <= MAX_UINT256 ? BigInt(raw) : undefined),
    default: fallback as never,
  }
}

function addressFlag(description: string, extra: Partial<FlagSpec> = {}): FlagSpec<Address, false> {
  return { description, valueName: 'ADDRESS', expected: 'an address, 0x and 40 hex digits', parse: parseAddress, default: undefined, ...extra } as FlagSpec<
    Address,
    false
  >
}

export const deployFlags = {
  rpc: {
    description: 'JSON-RPC endpoint of the chain to deploy on (http or https)',
    valueName: 'URL',
    expected: 'an http(s) URL',
    parse: (raw: string) => parseUrl(raw, ['http:', 'https:']),
    default: undefined,
    aliases: ['--rpc-provider'],
  } as FlagSpec<string, false>,
  key: serveFlags.key,
  keystore: { ...serveFlags.keystore, aliases: ['--private-key'] } as FlagSpec<string, false>,
  keystorePath: serveFlags.keystorePath,
  address: serveFlags.address,
  passwordFile: serveFlags.passwordFile,
  out: stringFlag({
    description: 'the deployment file to write; run again with the same --out to continue or check a deployment',
    valueName: 'FILE',
  }),
  token: {
    ...addressFlag('a token already on the chain to register (a token network for it); repeat for several'),
    repeatable: true,
    aliases: ['--token-address'],
    parse: (raw: string) => {
      const tokens = raw.split(',').map((t) => parseAddress(t.trim()))
      return tokens.every((t) => t !== undefined) ? (tokens as Address[]) : undefined
    },
  } as FlagSpec<Address[], false>,
  testTokens: switchFlag({ description: 'also deploy two mintable test tokens (TTT, TT2: anyone may mint them) and register them, for a testnet' }),
  serviceToken: addressFlag('the token that pays the services (UserDeposit, ServiceRegistry); default: deploy one (SVT, mintable)'),
  settleTimeoutMin: integerFlag({
    description: "the shortest settle timeout a channel may have, in blocks (Raiden's default: about 2 hours of 15 s blocks)",
    valueName: 'BLOCKS',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    default: defaults.settleTimeoutMin,
  }),
  settleTimeoutMax: integerFlag({
    description: 'the longest settle timeout a channel may have, in blocks (about 3 months of 15 s blocks)',
    valueName: 'BLOCKS',
    min: 2,
    max: Number.MAX_SAFE_INTEGER,
    default: defaults.settleTimeoutMax,
  }),
  maxTokenNetworks: integerFlag({
    description: 'how many token networks the registry accepts',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    default: defaults.maxTokenNetworks,
  }),
  userDepositWholeLimit: amountFlag('the most service tokens the UserDeposit holds for all users together (default: no limit)'),
  serviceRegistryController: addressFlag("who may change the ServiceRegistry's price parameters (default: the deployer)"),
  initialServiceDepositPrice: amountFlag(
    "the ServiceRegistry's price of a first registration, in the service token's smallest unit",
    defaults.initialServiceDepositPrice,
  ) as FlagSpec<bigint, true>,
  serviceDepositBumpNumerator: integerFlag({
    description: 'each registration multiplies the price by NUMERATOR/DENOMINATOR',
    min: 1,
    max: 2 ** 40 - 1,
    default: defaults.serviceDepositBumpNumerator,
  }),
  serviceDepositBumpDenominator: integerFlag({
    description: 'see --service-deposit-bump-numerator',
    min: 1,
    max: 2 ** 40 - 1,
    default: defaults.serviceDepositBumpDenominator,
  }),
  serviceDepositDecayConstant: integerFlag({
    description: 'seconds for the price to fall to about 1/e while nobody registers (200 days)',
    valueName: 'SECONDS',
    min: 1,
    max: 2 ** 40 - 1,
    default: defaults.serviceDepositDecayConstant,
  }),
  serviceDepositMinPrice: amountFlag('the price below which it does not fall', defaults.serviceDepositMinPrice) as FlagSpec<bigint, true>,
  serviceRegistrationDuration: integerFlag({
    description: 'seconds a registration lasts (180 days)',
    valueName: 'SECONDS',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    default: defaults.serviceRegistrationDuration,
  }),
  confirmations: integerFlag({
    description: "blocks on top of the last transaction's block before the file is written",
    valueName: 'N',
    min: 0,
    max: 1000,
    default: 5,
  }),
  maxFeePerGas: { ...maxFeePerGasFlag, description: 'the most to pay per unit of gas, in gwei (default: what the chain asks)' },
  publicRpc: {
    description: 'the RPC URL the deployment file names for nodes and pages (default: --rpc; give a public one when --rpc holds an API key)',
    valueName: 'URL',
    expected: 'an http(s) or ws(s) URL',
    parse: (raw: string) => parseUrl(raw, ['http:', 'https:', 'ws:', 'wss:']),
    default: undefined,
  } as FlagSpec<string, false>,
  dryRun: switchFlag({ description: "send nothing: print what would be deployed, its gas and what it costs at today's fees" }),
  json: switchFlag({ description: 'print the result as one line of JSON on stdout (the progress goes to stderr)' }),
}

const usage = `Usage: sluice deploy --rpc URL (--key HEX | --keystore FILE | --keystore-path DIR [--address ADDRESS]) --out FILE [flags]

Deploys the Raiden 0.40 contracts on any chain (SecretRegistry, TokenNetworkRegistry, ServiceRegistry, UserDeposit,
OneToN, MonitoringService, and a service token unless --service-token gives one), registers the tokens given with
--token (and, with --test-tokens, two mintable test tokens it deploys), waits for --confirmations and writes the
deployment file that \`sluice serve\`, \`sluice monitor\` and a page's startNode() take.

Safe to run again: after a crash or a Ctrl-C, the same command with the same --out continues where it stopped and
never deploys a contract twice (what was sent is kept in FILE.progress.json, and each transaction in
FILE.journal.json, until the file is written). Once FILE exists, it checks FILE against the chain (each contract's
code, how they are wired, each token's registration) and says so. --dry-run sends nothing and prints the cost at
today's fees; a deployer with too little ETH is told how much it needs before anything is sent (exit code 2).

Raiden's names work too: --rpc-provider, --private-key (a keystore file) with --password-file, --token-address,
and the deployer's own names for the contracts' parameters below.

Flags:
${formatFlags(deployFlags)}`

/** The deployer holds less ETH than the deployment needs at today's fees: nothing was sent. */
export class NotEnoughEthError extends CliError {
  override name = 'NotEnoughEthError' as const
  override readonly code = 'DEPLOY_NOT_ENOUGH_ETH' as const
  constructor(message: string) {
    super(message, 2)
  }
}

/** The contracts' parameters from the flags, checked as their constructors would check them. */
export function deployParameters(flags: ParsedFlags<typeof deployFlags>): DeployParameters {
  if (flags.settleTimeoutMax <= flags.settleTimeoutMin)
    throw new UsageError(`--settle-timeout-max (${flags.settleTimeoutMax}) must be above --settle-timeout-min (${flags.settleTimeoutMin})`)
  if (flags.serviceDepositBumpNumerator < flags.serviceDepositBumpDenominator)
    throw new UsageError('--service-deposit-bump-numerator must be at least --service-deposit-bump-denominator (the price goes up with each registration)')
  if (flags.initialServiceDepositPrice < flags.serviceDepositMinPrice)
    throw new UsageError('--initial-service-deposit-price must be at least --service-deposit-min-price')
  if (flags.initialServiceDepositPrice > 2n ** 90n) throw new UsageError('--initial-service-deposit-price must be at most 2^90')
  if (flags.userDepositWholeLimit === 0n) throw new UsageError('--user-deposit-whole-limit must be above 0')
  const tokens = [...new Map((flags.token ?? []).map((t) => [t.toLowerCase(), t])).values()]
  return {
    settleTimeoutMin: BigInt(flags.settleTimeoutMin),
    settleTimeoutMax: BigInt(flags.settleTimeoutMax),
    maxTokenNetworks: BigInt(flags.maxTokenNetworks),
    userDepositWholeLimit: flags.userDepositWholeLimit ?? MAX_UINT256,
    serviceRegistry: {
      ...(flags.serviceRegistryController ? { controller: flags.serviceRegistryController } : {}),
      initialPrice: flags.initialServiceDepositPrice,
      priceBumpNumerator: BigInt(flags.serviceDepositBumpNumerator),
      priceBumpDenominator: BigInt(flags.serviceDepositBumpDenominator),
      decayConstant: BigInt(flags.serviceDepositDecayConstant),
      minPrice: flags.serviceDepositMinPrice,
      registrationDuration: BigInt(flags.serviceRegistrationDuration),
    },
    ...(flags.serviceToken ? { serviceToken: flags.serviceToken } : {}),
    testTokens: flags.testTokens
      ? [
          { symbol: 'TTT', name: 'Test Token' },
          { symbol: 'TT2', name: 'Test Token 2' },
        ]
      : [],
    registerTestTokens: true,
    tokens,
  }
}

/** JSON for scripts: bigints as decimal strings. */
function json(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
}

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, deployFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const flags = parsed.values
  if (!flags.rpc) throw new MissingFlagError('--rpc')
  if (!flags.out) throw new MissingFlagError('--out')
  const parameters = deployParameters(flags)
  const rpc = flags.rpc
  const out = resolve(flags.out)
  const privateKey = await loadPrivateKey(flags)
  // The progress lines: on stdout for a person, on stderr when stdout carries the JSON.
  const say = (line: string) => (flags.json ? console.error(line) : console.log(line))

  const [
    { createChainClient },
    { createTransactionQueue },
    deploymentFile,
    plans,
    runner,
    check,
    { deployCost },
    { fileJournal },
    progressFiles,
    { lock },
    { removeFile },
    { formatEther, formatGwei },
  ] = await Promise.all([
    import('../chain/chainClient.ts'),
    import('../chain/transactionQueue.ts'),
    import('../devnet/deploymentFile.ts'),
    import('../devnet/deployPlan.ts'),
    import('../devnet/deployRunner.ts'),
    import('../devnet/deploymentOfPlan.ts'),
    import('../devnet/deployCost.ts'),
    import('../devnet/fileJournal.ts'),
    import('../devnet/deployProgress.ts'),
    import('../devnet/deployLock.ts'),
    import('../devnet/jsonFile.ts'),
    import('viem'),
  ])
  const eth = (wei: bigint) => `${formatEther(wei)} ETH`
  const gwei = (wei: bigint) => `${formatGwei(wei)} gwei`
  const costLine = (c: DeployCost) =>
    `About ${eth(c.likely)} at today's fees; the deployer ${c.deployer} must hold ${eth(c.needed)} (at most ${gwei(c.feePerGas)} a gas) and holds ${eth(c.balance)}${c.balance < c.needed ? `: ${eth(c.needed - c.balance)} short` : ''}.`

  const chain = await createChainClient({ rpcUrl: rpc, privateKey, pollingInterval: 500 }).catch((e: unknown) => {
    throw hasCode(e, 'CHAIN_RPC') ? new StartupError(`--rpc ${rpc}: ${(e as Error).message}`) : e
  })
  const client = chain.publicClient
  const plan = plans.deployPlan(parameters, { deployer: chain.address, chainId: chain.chainId })

  const progressPath = `${out}.progress.json`
  try {
    // Once the file exists, the deployment is done: check it against the chain, send nothing.
    if (existsSync(out)) {
      const deployment = await deploymentFile.readDeployment(out).catch((e: unknown) => {
        throw hasCode(e, 'DEPLOYMENT_SYNTAX', 'INVALID_DEPLOYMENT') ? new StartupError(`${(e as Error).message} (to deploy anew, choose another --out)`) : e
      })
      const problems = await check.checkDeployment(client, chain.chainId, plan, deployment)
      if (problems.length > 0) throw new StartupError(`${out} does not match chain ${chain.chainId} at ${rpc}: ${problems.join('; ')}`)
      // Left by a run stopped between writing the file and removing its progress.
      await progressFiles.fileProgress(`${out}.progress.json`).remove()
      if (flags.json) console.log(json({ file: out, verified: true, sent: 0, deployment }))
      else
        console.log(
          `${out} is complete and matches chain ${chain.chainId}: ${plan.steps.filter((s) => s.kind === 'create').length} contracts with the expected code, wired as given, ${plan.parameters.tokens.length + plan.parameters.testTokens.length} tokens registered, UserDeposit initialised. Nothing was sent.`,
        )
      return 0
    }

    for (const [flag, token] of [
      ...(parameters.serviceToken ? [['--service-token', parameters.serviceToken] as const] : []),
      ...parameters.tokens.map((t) => ['--token', t] as const),
    ]) {
      const code = await client.getCode({ address: token })
      if (!code || code === '0x') throw new StartupError(`${flag} ${token} has no code on chain ${chain.chainId}: is it a token of this chain?`)
    }
  } catch (e) {
    throw explain(e, { progressPath, rpc })
  }

  const files = flags.dryRun ? undefined : await lock(`${out}.lock`)
  const signal = nextSignal(['SIGINT', 'SIGTERM'])
  let queue: TransactionQueue | undefined
  try {
    const store = progressFiles.fileProgress(progressPath)
    const progress = flags.dryRun ? { load: store.load, save: async () => {}, remove: async () => {} } : store
    const journalPath = `${out}.journal.json`
    const journal = fileJournal(journalPath)
    // No confirmations for the queue: each wave goes once the last is mined, and the run waits for them once, at the end.
    queue = createTransactionQueue(chain, { journal, ...(flags.maxFeePerGas !== undefined ? { maxFeePerGas: flags.maxFeePerGas } : {}) })
    let cost: DeployCost | undefined
    const started = performance.now()
    const running = runner.runDeployment({
      chain,
      queue,
      journal,
      plan,
      progress,
      confirmations: flags.confirmations,
      log: say,
      beforeSending: async (left) => {
        cost = await deployCost(client, chain.address, left, { maxFeePerGas: flags.maxFeePerGas })
        if (flags.dryRun) return 'stop'
        if (cost.balance < cost.needed)
          throw new NotEnoughEthError(
            `${chain.address} holds ${eth(cost.balance)} on chain ${chain.chainId}; the deployment needs ${eth(cost.needed)} at today's fees (${left.length} transactions, ${cost.gas.toLocaleString('en-US')} gas at up to ${gwei(cost.feePerGas)}): send it ${eth(cost.needed - cost.balance)} more. Nothing was sent.`,
          )
        say(`Deploying on chain ${chain.chainId} from ${chain.address}: ${left.length} transactions, ${cost.gas.toLocaleString('en-US')} gas.`)
        say(costLine(cost))
        return 'send'
      },
    })
    running.catch(() => {})
    const ended = await Promise.race([running, signal.received])
    if (typeof ended === 'string') {
      console.error(`sluice deploy: ${ended}: stopped; run the same command again to continue (nothing will be deployed twice)`)
      return 130
    }
    const deployRun = ended

    if (flags.dryRun) {
      if (deployRun.left.length === 0) {
        say('Every step is done on the chain: a run without --dry-run waits for the confirmations and writes the file.')
        if (flags.json) console.log(json({ dryRun: true, chainId: chain.chainId, deployer: chain.address, steps: [] }))
        return 0
      }
      const c = cost!
      if (flags.json) console.log(json({ dryRun: true, chainId: chain.chainId, ...c, enough: c.balance >= c.needed, done: deployRun.alreadyDone }))
      else {
        console.log(`Dry run on chain ${chain.chainId} (nothing is sent): ${deployRun.alreadyDone.length} steps done already, ${c.steps.length} to send:`)
        console.log('')
        console.log(formatTable(['Step', 'Gas'], [...c.steps.map((s) => [s.id, s.gas.toLocaleString('en-US')]), ['total', c.gas.toLocaleString('en-US')]]))
        console.log('')
        console.log(costLine(c))
      }
      return 0
    }

    const deployment = await check.deploymentOf(client, plan, deployRun, { chainId: chain.chainId, rpcUrl: flags.publicRpc ?? rpc })
    await deploymentFile.writeDeployment(out, deployment)
    // Done and confirmed: what was kept to resume it is of no more use (a later run checks the file against the chain).
    await queue.stop()
    await progress.remove()
    await removeFile(journalPath)
    const ms = performance.now() - started
    if (flags.json) console.log(json({ file: out, verified: true, sent: deployRun.sent, alreadyDone: deployRun.alreadyDone, deployment }))
    else console.log(summary(deployment, out, ms, deployRun.sent, deployRun.alreadyDone.length))
    return 0
  } catch (e) {
    throw explain(e, { progressPath, rpc })
  } finally {
    signal.dispose()
    if (queue) await queue.stop()
    await files?.release()
  }
}

/** A deployment's failure as one line, with what to do. */
function explain(e: unknown, { progressPath, rpc }: { progressPath: string; rpc: string }): unknown {
  if (e instanceof CliError || !(e instanceof Error)) return e
  const again = 'run the same command again to continue (nothing will be deployed twice)'
  if (hasCode(e, 'DEPLOY_RESUME_MISMATCH'))
    return new StartupError(`${progressPath}: ${e.message}: give the same flags to continue it, or choose another --out`)
  if (hasCode(e, 'DEPLOY_CONFLICT')) return new StartupError(`the chain does not hold what ${progressPath} recorded: ${e.message}`)
  if (hasCode(e, 'DEPLOY_PROGRESS_FILE', 'JOURNAL_FILE', 'DEPLOY_LOCKED')) return new StartupError(e.message)
  if (hasCode(e, 'DEPLOY_CONTRACTS', 'DEPLOY_PENDING', 'CHAIN_STALLED')) return new CliError(`${e.message}; ${again}`, 1)
  if (hasCode(e, 'CHAIN_RPC')) return new CliError(`--rpc ${rpc}: ${e.message}; ${again}`, 1)
  // A read of the chain that failed (viem's error): the endpoint's answer, in one line.
  const short = (e as { shortMessage?: string }).shortMessage
  if (!(e instanceof SluiceError) && short) return new CliError(`--rpc ${rpc}: ${short}; ${again}`, 1)
  return e
}

function summary(deployment: Deployment, path: string, ms: number, sent: number, alreadyDone: number): string {
  const contracts = Object.entries(deployment.contracts).map(([name, c]) => [name, c.address, String(c.blockNumber)])
  const tokens = Object.entries(deployment.tokens).map(([symbol, address]) => [`token ${symbol}`, address, ''])
  return [
    `Deployed in ${(ms / 1000).toFixed(1)} s (${sent} transactions sent${alreadyDone > 0 ? `, ${alreadyDone} steps were done already` : ''}; contracts ${deployment.contracts_version}, chain id ${deployment.chainId}):`,
    '',
    formatTable(['Contract', 'Address', 'Block'], [...contracts, ['service token', deployment.serviceToken, ''], ...tokens]),
    '',
    `Deployment file: ${path}`,
  ].join('\n')
}

export const deployCommand: Command = { name: 'deploy', usage, run }
