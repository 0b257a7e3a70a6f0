// `npm run bench:gas`: the gas each on-chain call of a channel's life costs, on a fresh anvil with the contracts
// deployed exactly as `sluice chain` deploys them. Prints a Markdown table and writes it to bench/gas.md.
// Every signature is a real one, made with src/protocol through the test fixtures, and the run is
// deterministic (fixed keys, messages and secrets), so the numbers only move when the contracts do.
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { TransactionReceipt } from 'viem'
import { SecretRegistry, UserDeposit, solcVersion } from '../src/contracts/index.ts'
import { anvilKeys, startAnvil } from '../src/devnet/anvil.ts'
import { deployContracts } from '../src/devnet/deploy.ts'
import { depositToUdc, type Services } from '../test/support/services.ts'
import {
  DEFAULT_SETTLE_TIMEOUT,
  closeChannel,
  createTokenNetwork,
  deposit,
  mined,
  mineTo,
  mintAndApprove,
  openFundedChannel,
  party,
  passSettleWindow,
  secretFor,
  sendTokenNetwork,
  settleChannel,
  settleSide,
  settledChannelWithLocks,
  signBalanceProof,
  tokenNetworkEvents,
  unlock,
  updateNonClosingBalanceProof,
  withdraw,
  withdrawInput,
  blockNumber,
  type ChainFixture,
  type Party,
} from '../test/support/tokenNetwork.ts'

/** `call` is the function name, optionally followed by a variant in parentheses: `unlock (10 locks)`. */
type Row = { call: string; gas: bigint; scenario: string }

async function measure(): Promise<Row[]> {
  const rows: Row[] = []
  const record = (call: string, receipt: TransactionReceipt, scenario: string) => rows.push({ call, gas: receipt.gasUsed, scenario })

  const anvil = await startAnvil()
  try {
    const controller = party(anvil.rpcUrl, anvilKeys[0])
    const deployment = await deployContracts(controller.client, { rpcUrl: anvil.rpcUrl })
    const registry = deployment.contracts.TokenNetworkRegistry.address
    const token = deployment.tokens.TTT
    const fx: ChainFixture = {
      secretRegistry: deployment.contracts.SecretRegistry.address,
      registry,
      token,
      tokenNetwork: await createTokenNetwork(controller.client, registry, token),
      anvil,
      controller,
      parties: anvilKeys.slice(1).map((key) => party(anvil.rpcUrl, key)),
      chainId: BigInt(deployment.chainId),
      stop: () => anvil.stop(),
    }
    const [alice, bob, carol, dave, erin, frank, grace, heidi, ivan] = fx.parties as [Party, Party, Party, Party, Party, Party, Party, Party, Party]

    // A first channel holds tokens already, so no measured call pays for the token network's first token balance.
    await openFundedChannel(fx, carol, dave, 10n, 10n)

    // A channel's life: open, deposit, withdraw, close, update, settle.
    const opened = await sendTokenNetwork(fx, alice, 'openChannel', [alice.address, bob.address, DEFAULT_SETTLE_TIMEOUT])
    record('openChannel', opened, 'a new pair of participants')
    const channelId = tokenNetworkEvents(opened, 'ChannelOpened')[0]!.args.channel_identifier
    record('setTotalDeposit (first)', await deposit(fx, channelId, alice, 1_000n, bob), "a participant's first deposit")
    record('setTotalDeposit (second)', await deposit(fx, channelId, alice, 1_500n, bob), 'the same participant raises its deposit')
    await deposit(fx, channelId, bob, 1_000n, alice)
    record('setTotalWithdraw', await withdraw(fx, channelId, alice, bob, 100n), 'both participants signed the withdraw')
    const aliceSent = await signBalanceProof(fx, alice, channelId, { nonce: 3n, transferred: 500n })
    const bobSent = await signBalanceProof(fx, bob, channelId, { nonce: 2n, transferred: 200n })
    record('closeChannel', await closeChannel(fx, channelId, bob, alice, aliceSent), "bob closes with alice's balance proof (nonce 3)")
    record(
      'updateNonClosingBalanceProof',
      await updateNonClosingBalanceProof(fx, channelId, bob, alice, bobSent),
      "alice submits bob's balance proof, counter-signed",
    )
    await passSettleWindow(fx, channelId, alice.address, bob.address)
    const settled = await settleChannel(fx, channelId, settleSide(alice, aliceSent), settleSide(bob, bobSent))
    record('settleChannel', settled.receipt, 'both sides have a balance proof and no locks; pays both')

    await mintAndApprove(fx, erin, 1_000n)
    record(
      'openChannelWithDeposit',
      await sendTokenNetwork(fx, erin, 'openChannelWithDeposit', [erin.address, alice.address, DEFAULT_SETTLE_TIMEOUT, 1_000n]),
      'opens and makes the first deposit in one call',
    )

    const coop = await openFundedChannel(fx, frank, grace, 500n, 500n)
    const frankShare = await withdrawInput(fx, coop, frank, grace, 600n)
    const graceShare = await withdrawInput(fx, coop, grace, frank, 400n)
    record(
      'cooperativeSettle',
      await sendTokenNetwork(fx, frank, 'cooperativeSettle', [coop, frankShare, graceShare]),
      'both withdraw everything (600 + 400), four signatures',
    )

    for (const count of [1, 10, 100]) {
      const locked = await settledChannelWithLocks(fx, { count, label: `bench/${count}` })
      const receipt = await unlock(fx, locked.channelId, locked.receiver.address, locked.sender.address, locked.locks)
      record(`unlock (${count} lock${count === 1 ? '' : 's'})`, receipt, 'every secret registered in time; pays the receiver')
    }

    const { secret } = secretFor('bench/registerSecret')
    record(
      'registerSecret',
      await mined(
        heidi.client,
        await heidi.client.writeContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecret', args: [secret] }),
      ),
      'a new secret',
    )

    const services: Services = {
      token: deployment.serviceToken,
      userDeposit: deployment.contracts.UserDeposit.address,
      serviceRegistry: deployment.contracts.ServiceRegistry.address,
      oneToN: deployment.contracts.OneToN.address,
      monitoringService: deployment.contracts.MonitoringService.address,
      chainId: fx.chainId,
    }
    // As with the token network: someone has deposited before, so the contract's token balance is not new.
    await depositToUdc(controller.client, services, controller.address, 1_000n)
    record('UserDeposit.deposit', await depositToUdc(ivan.client, services, ivan.address, 1_000n), "a user's first deposit")
    const udc = { address: services.userDeposit, abi: UserDeposit.abi } as const
    record(
      'UserDeposit.planWithdraw',
      await mined(ivan.client, await ivan.client.writeContract({ ...udc, functionName: 'planWithdraw', args: [400n] })),
      'plans to withdraw part of the balance',
    )
    await mineTo(fx, (await blockNumber(fx)) + 100n)
    record(
      'UserDeposit.withdraw',
      await mined(ivan.client, await ivan.client.writeContract({ ...udc, functionName: 'withdraw', args: [400n] })),
      'the planned amount, 100 blocks later',
    )
  } finally {
    await anvil.stop()
  }
  return rows
}

function markdown(rows: readonly Row[]): string {
  const width = (f: (r: Row) => string, title: string) => Math.max(title.length, ...rows.map((r) => f(r).length))
  const code = (call: string) => call.replace(/^(\S+)/, '`$1`')
  const callWidth = width((r) => code(r.call), 'Call')
  const gasWidth = width((r) => r.gas.toLocaleString('en-US'), 'Gas used')
  const scenarioWidth = width((r) => r.scenario, 'Scenario')
  const line = (a: string, b: string, c: string) => `| ${a.padEnd(callWidth)} | ${b.padStart(gasWidth)} | ${c.padEnd(scenarioWidth)} |`
  return [
    line('Call', 'Gas used', 'Scenario'),
    `| ${'-'.repeat(callWidth)} | ${'-'.repeat(gasWidth - 1)}: | ${'-'.repeat(scenarioWidth)} |`,
    ...rows.map((r) => line(code(r.call), r.gas.toLocaleString('en-US'), r.scenario)),
  ].join('\n')
}

const rows = await measure()
const table = markdown(rows)
console.log(table)
const file = fileURLToPath(new URL('./gas.md', import.meta.url))
writeFileSync(
  file,
  `# Gas used per call

Measured by \`npm run bench:gas\` (bench/gas.ts) on anvil, with the contracts deployed as \`sluice chain\` deploys them.
Compiler: solc ${solcVersion}, optimizer 200 runs, via IR, EVM cancun.
Gas used is the whole transaction's: the 21,000 base cost and the calldata are included.
Balance proofs and withdraws carry real signatures; channels have a settle timeout of 10 blocks.

${table}
`,
)
console.log(`\nwritten to ${file}`)
