import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeFunctionData, type Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { mintTokens } from '../../../src/chain/erc20.ts'
import { monitorCall } from '../../../src/chain/monitoringService.ts'
import { readParticipantInfo } from '../../../src/chain/reads.ts'
import { openChannel, registerToken } from '../../../src/chain/tokenNetworkActions.ts'
import { sendProtocolTransaction } from '../../../src/chain/transactions.ts'
import { depositToUserDeposit, planUserDepositWithdraw } from '../../../src/chain/userDepositActions.ts'
import { MonitoringService, TokenNetwork, UserDeposit } from '../../../src/contracts/index.ts'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { DutyRunner } from '../../../src/monitor/duties.ts'
import { channelKey, type Duty, type WatchedChannel } from '../../../src/monitor/records.ts'
import { ensureRegistered } from '../../../src/monitor/registration.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'
import type { RequestMonitoring, Signed } from '../../../src/protocol/messages/types.ts'
import { eventually } from '../../integration/support/eventually.ts'
import { monitoringRequest, partnerProof, type ProofOf } from '../../support/monitoring.ts'
import { startChainTestbed, type Account, type ChainTestbed } from '../chain/chainTestbed.ts'

/**
 * The duties a partner's close leaves, carried out on a private anvil by the service's own runner: what it sends and
 * when, what it does not send, and how it picks up a duty a stopped service left half done.
 */

const REWARD = 10n
let bed: ChainTestbed
let defaultRequester: Account, service: Account
let tokenNetwork: Address
let monitoringService: Address
const dirs: string[] = []

beforeAll(async () => {
  bed = await startChainTestbed({ accounts: 3 })
  const [registrar, requester, registered] = bed.accounts as [Account, Account, Account]
  ;[defaultRequester, service] = [requester, registered]
  const d = bed.deployment
  monitoringService = d.contracts.MonitoringService.address
  ;({ tokenNetwork } = await registerToken(registrar.chain, registrar.queue, { registry: d.contracts.TokenNetworkRegistry.address, token: d.tokens.TTT }))
  const deployer = await bed.account(anvilKeys[0])
  await mintTokens(deployer.chain, deployer.queue, { token: d.serviceToken, amount: 10n ** 22n, to: service.chain.address })
  await ensureRegistered(service.chain, service.queue, { serviceRegistry: d.contracts.ServiceRegistry.address })
  await mintTokens(requester.chain, requester.queue, { token: d.serviceToken, amount: 1000n })
  await depositToUserDeposit(requester.chain, requester.queue, { userDeposit: d.contracts.UserDeposit.address, totalDeposit: 1000n })
}, 120_000)
afterAll(async () => {
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
  await bed?.stop()
})

/** A new account with ETH (and, for a requester, a UserDeposit that covers rewards). */
async function newAccount({ deposit = false } = {}): Promise<Account> {
  const account = await bed.account(generatePrivateKey())
  await bed.devnet.setBalance({ address: account.chain.address, value: 10n ** 20n })
  if (deposit) {
    await mintTokens(account.chain, account.queue, { token: bed.deployment.serviceToken, amount: 1000n })
    await depositToUserDeposit(account.chain, account.queue, { userDeposit: bed.deployment.contracts.UserDeposit.address, totalDeposit: 1000n })
  }
  return account
}

/**
 * A channel a new partner opened with the requester and closed, the requester's request at nonce 5 held, its monitor
 * duty in `monitor`'s state.
 */
async function closedChannel(monitor: Duty['monitor'] = { status: 'due' }, requester: Account = defaultRequester) {
  const partner = await newAccount()
  const { channelId } = await openChannel(partner.chain, partner.queue, { tokenNetwork, partner: requester.chain.address, settleTimeout: 40n })
  const at: ProofOf = { tokenNetwork, chainId: BigInt(bed.deployment.chainId), channelId }
  const request = monitoringRequest(requester.key, partnerProof(partner.key, at, { nonce: 5n, transferred: 15n }), monitoringService, REWARD)
  const closed = await sendProtocolTransaction(
    { type: 'close', tokenNetwork, channelId, partner: requester.chain.address, balanceProof: null },
    { signer: partner.chain, secretRegistry: bed.deployment.contracts.SecretRegistry.address, queue: partner.queue },
  )
  const dir = mkdtempSync(join(tmpdir(), 'sluice-duties-'))
  dirs.push(dir)
  const store = await MonitorStore.open(dir, { chainId: bed.deployment.chainId, monitoringService, address: service.chain.address })
  const requesterKey = requester.chain.address.toLowerCase()
  const watched: WatchedChannel = {
    tokenNetwork,
    channelId,
    requests: { [requesterKey]: { request, closing: partner.chain.address, receivedAt: 0 } },
    closed: { by: partner.chain.address, block: closed.receipt.blockNumber },
    duties: { [requesterKey]: { closing: partner.chain.address, nonClosing: requester.chain.address, monitor } },
  }
  await store.transact((tx) => tx.putChannel(watched))
  const runner = new DutyRunner({
    chain: service.chain,
    queue: service.queue,
    store,
    monitoringService,
    userDeposit: bed.deployment.contracts.UserDeposit.address,
    onError: () => {},
  })
  const duty = () => store.channels.get(channelKey(tokenNetwork, channelId))!.duties[requesterKey]!
  const firstAllowed = await bed.devnet.readContract({
    address: monitoringService,
    abi: MonitoringService.abi,
    functionName: 'firstBlockAllowedToMonitorChannel',
    args: [tokenNetwork, channelId, partner.chain.address, requester.chain.address, service.chain.address],
  })
  return { channelId, request, store, runner, duty, firstAllowed, settleBlock: closed.receipt.blockNumber + 40n, partner, requester }
}

const sentCount = () => service.chain.publicClient.getTransactionCount({ address: service.chain.address })
const mineTo = async (block: bigint) => {
  const latest = await bed.devnet.getBlockNumber()
  if (block > latest) await bed.devnet.mine({ blocks: Number(block - latest) })
}
/** Runs the due duties and waits until none is under way. */
async function runOnce(runner: DutyRunner) {
  runner.runDue()
  await eventually(() => expect(runner.busy).toBe(0))
}

describe('the monitor duty', () => {
  test("waits for the contract's first block, sends nothing before it, then monitors; the reward is claimed after the settle window", async () => {
    const c = await closedChannel()
    const before = await sentCount()
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'due', note: `waiting for block ${c.firstAllowed}` })
    expect(await sentCount()).toBe(before)

    await mineTo(c.firstAllowed)
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'done', nonce: 5n, rewardAmount: REWARD })
    expect(c.duty().claim).toEqual({ status: 'due', amount: REWARD })
    const onChain = await readParticipantInfo(service.chain, {
      tokenNetwork,
      channelId: c.channelId,
      participant: c.partner.chain.address,
      partner: c.requester.chain.address,
    })
    expect(onChain).toMatchObject({ nonce: 5n, balanceHash: c.request.balance_proof.balance_hash })

    // Not before the settle window is over; then paid from the requester's UserDeposit.
    await runOnce(c.runner)
    expect(c.duty().claim).toMatchObject({ status: 'due', note: `waiting for block ${c.settleBlock + 1n}` })
    const udc = (who: Address) =>
      bed.devnet.readContract({ address: bed.deployment.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'balances', args: [who] })
    const [requesterBefore, serviceBefore] = await Promise.all([udc(c.requester.chain.address), udc(service.chain.address)])
    await mineTo(c.settleBlock + 1n)
    await runOnce(c.runner)
    expect(c.duty().claim).toMatchObject({ status: 'claimed', amount: REWARD })
    expect(await udc(c.requester.chain.address)).toBe(requesterBefore - REWARD)
    expect(await udc(service.chain.address)).toBe(serviceBefore + REWARD)
    await c.store.close()
  })

  test('is not needed when the chain already holds the nonce (the requester updated itself): nothing is sent', async () => {
    const c = await closedChannel()
    const bp = c.request.balance_proof
    await c.requester.queue.send({
      to: tokenNetwork,
      data: encodeFunctionData({
        abi: TokenNetwork.abi,
        functionName: 'updateNonClosingBalanceProof',
        args: [
          c.channelId,
          c.partner.chain.address,
          c.requester.chain.address,
          bp.balance_hash,
          bp.nonce,
          bp.additional_hash,
          bp.signature,
          c.request.non_closing_signature,
        ],
      }),
      description: 'update',
    })
    const before = await sentCount()
    await mineTo(c.firstAllowed)
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'not_needed', note: 'the chain already holds nonce 5' })
    expect(await sentCount()).toBe(before)
    await c.store.close()
  })

  test("waits while the requester's UserDeposit does not cover the reward (a planned withdrawal), sending nothing", async () => {
    const c = await closedChannel({ status: 'due' }, await newAccount({ deposit: true }))
    await planUserDepositWithdraw(c.requester.chain, c.requester.queue, { userDeposit: bed.deployment.contracts.UserDeposit.address, amount: 1000n })
    const before = await sentCount()
    await mineTo(c.firstAllowed)
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'due', note: expect.stringMatching(/^the requester's UserDeposit holds 0, less than the reward 10$/) })
    expect(await sentCount()).toBe(before)
    await c.store.close()
  })
})

describe('a duty a stopped service left half done', () => {
  test('sent: its mined transaction is found by its hash; the call is done and its reward due, nothing sent again', async () => {
    const c = await closedChannel({ status: 'due' })
    await mineTo(c.firstAllowed)
    // The service sent it, then stopped before it saw the receipt.
    const sent = await service.queue.send(monitorCall(monitoringService, c.request as Signed<RequestMonitoring>, c.partner.chain.address))
    const key = channelKey(tokenNetwork, c.channelId)
    const requesterKey = c.requester.chain.address.toLowerCase()
    await c.store.transact((tx) => {
      const watched = tx.channel(key)!
      watched.duties[requesterKey]!.monitor = { status: 'sent', nonce: 5n, rewardAmount: REWARD, transactionHash: sent.hash }
      tx.putChannel(watched)
    })
    const before = await sentCount()
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'done', transactionHash: sent.hash, blockNumber: sent.receipt.blockNumber })
    expect(c.duty().claim).toEqual({ status: 'due', amount: REWARD })
    expect(await sentCount()).toBe(before)
    await c.store.close()
  })

  test('sending, never broadcast: once the account has nothing pending it is due again, and then sent', async () => {
    const c = await closedChannel({ status: 'sending', nonce: 5n, rewardAmount: REWARD })
    await mineTo(c.firstAllowed)
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'due', note: 'the service stopped while sending it: looking again' })
    await runOnce(c.runner)
    expect(c.duty().monitor).toMatchObject({ status: 'done', nonce: 5n })
    await c.store.close()
  })
})
