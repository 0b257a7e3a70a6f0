import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { InsufficientTokenBalanceError, TokenNotMintableError, TransactionRevertedError } from '../../../src/chain/errors.ts'
import {
  readAllowance,
  readChannelIdentifier,
  readChannelInfo,
  readNativeBalance,
  readParticipantInfo,
  readRegistryLimits,
  readTokenBalance,
  readTokenNetworkInfo,
  readTokenNetworkOf,
  readUserDeposit,
} from '../../../src/chain/reads.ts'
import { approveIfNeeded, mintTokens } from '../../../src/chain/erc20.ts'
import { openChannel, registerToken, setTotalDeposit } from '../../../src/chain/tokenNetworkActions.ts'
import { depositToUserDeposit, planUserDepositWithdraw, withdrawFromUserDeposit } from '../../../src/chain/userDepositActions.ts'
import { CustomToken } from '../../../src/contracts/index.ts'
import { settlementTimeoutMax, settlementTimeoutMin } from '../../../src/devnet/deploy.ts'
import { startChainTestbed, type Account, type ChainTestbed } from './chainTestbed.ts'
import { waitForReceipt } from '../../../src/chain/receipt.ts'

let bed: ChainTestbed
let A: Account, B: Account
let registry: Address
let TTT: Address
let TT2: Address

beforeAll(async () => {
  bed = await startChainTestbed({ accounts: 2 })
  ;[A, B] = bed.accounts as [Account, Account]
  registry = bed.deployment.contracts.TokenNetworkRegistry.address
  TTT = bed.deployment.tokens.TTT
  TT2 = bed.deployment.tokens.TT2
})
afterAll(() => bed.stop())

const txCount = (who: Account) => who.chain.publicClient.getTransactionCount({ address: who.chain.address })

/** Deploys raw code: answers success to every call except `mint(address,uint256)`, which reverts. */
async function deployMintForOnlyToken(): Promise<Address> {
  // PUSH1 0 CALLDATALOAD PUSH1 0xe0 SHR PUSH4 40c10f19 EQ PUSH1 0x10 JUMPI STOP JUMPDEST PUSH1 0 PUSH1 0 REVERT
  const runtime = '60003560e01c6340c10f1914601057005b60006000fd'
  const size = (runtime.length / 2).toString(16).padStart(2, '0')
  const hash = await bed.devnet.sendTransaction({ data: `0x60${size}600c60003960${size}6000f3${runtime}` as Hex, to: null })
  return (await waitForReceipt(bed.devnet, hash, { timeout: 20_000 })).contractAddress!
}

describe('token registration and reads', () => {
  test('registers a token with and without limits, and the registry reads back', async () => {
    expect(await readTokenNetworkOf(A.chain, { registry, token: TTT })).toBeUndefined()
    const before = await readRegistryLimits(A.chain, { registry })
    expect(before).toMatchObject({ settlementTimeoutMin, settlementTimeoutMax, maxTokenNetworks: 1000n })

    const limited = await registerToken(A.chain, A.queue, {
      registry,
      token: TTT,
      limits: { channelParticipantDepositLimit: 500n, tokenNetworkDepositLimit: 2000n },
    })
    const unlimited = await registerToken(A.chain, A.queue, { registry, token: TT2 })
    expect(await readTokenNetworkOf(A.chain, { registry, token: TTT })).toBe(limited.tokenNetwork)
    expect(await readTokenNetworkOf(A.chain, { registry, token: TT2 })).toBe(unlimited.tokenNetwork)
    expect((await readRegistryLimits(A.chain, { registry })).tokenNetworksCreated).toBe(before.tokenNetworksCreated + 2n)
    expect(await readTokenNetworkInfo(A.chain, { tokenNetwork: limited.tokenNetwork })).toEqual({
      token: TTT,
      settlementTimeoutMin,
      settlementTimeoutMax,
      channelParticipantDepositLimit: 500n,
      tokenNetworkDepositLimit: 2000n,
      deprecated: false,
    })
    expect((await readTokenNetworkInfo(A.chain, { tokenNetwork: unlimited.tokenNetwork })).channelParticipantDepositLimit).toBe(2n ** 256n - 1n)

    const again = await registerToken(A.chain, A.queue, { registry, token: TTT }).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(TransactionRevertedError)
    expect(again).toMatchObject({ reason: 'TNR: token already registered' })
  })

  test('reads the native balance', async () => {
    expect(await readNativeBalance(A.chain)).toBeGreaterThan(10n ** 18n)
    expect(await readNativeBalance(A.chain, { address: privateKeyToAccount(generatePrivateKey()).address })).toBe(0n)
  })
})

describe('minting test tokens', () => {
  test('mints with mint(address,uint256) on CustomToken', async () => {
    const before = await readTokenBalance(B.chain, { token: TTT })
    const minted = await mintTokens(A.chain, A.queue, { token: TTT, amount: 77n, to: B.chain.address })
    expect(minted.function).toBe('mint')
    expect(await readTokenBalance(B.chain, { token: TTT })).toBe(before + 77n)
  })

  test('falls back to mintFor(uint256,address) when mint(address,uint256) reverts', async () => {
    const token = await deployMintForOnlyToken()
    expect((await mintTokens(A.chain, A.queue, { token, amount: 1n })).function).toBe('mintFor')
  })

  test('an address without code is no mintable token', async () => {
    const error = await mintTokens(A.chain, A.queue, { token: privateKeyToAccount(generatePrivateKey()).address, amount: 1n }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TokenNotMintableError)
  })
})

describe('channel deposits with approval', () => {
  let tokenNetwork: Address
  beforeAll(async () => {
    tokenNetwork = (await readTokenNetworkOf(A.chain, { registry, token: TT2 }))!
    await mintTokens(A.chain, A.queue, { token: TT2, amount: 1_000n })
    await mintTokens(B.chain, B.queue, { token: TT2, amount: 1_000n })
  })

  test('openChannel with a deposit approves exactly the deposit, which the deposit then uses up', async () => {
    const { channelId } = await openChannel(A.chain, A.queue, { tokenNetwork, partner: B.chain.address, settleTimeout: 20n, totalDeposit: 120n })
    expect(await readChannelIdentifier(A.chain, { tokenNetwork, participant: B.chain.address, partner: A.chain.address })).toBe(channelId)
    expect(await readChannelInfo(A.chain, { tokenNetwork, channelId, participant1: A.chain.address, participant2: B.chain.address })).toEqual({
      settleBlockNumber: 20n,
      state: 'opened',
    })
    expect((await readParticipantInfo(A.chain, { tokenNetwork, channelId, participant: A.chain.address, partner: B.chain.address })).deposit).toBe(120n)
    expect(await readAllowance(A.chain, { token: TT2, spender: tokenNetwork })).toBe(0n)

    // Raising to 200 approves the difference, 80.
    const nonce = await txCount(A)
    await setTotalDeposit(A.chain, A.queue, { tokenNetwork, channelId, partner: B.chain.address, totalDeposit: 200n })
    expect(await txCount(A)).toBe(nonce + 2)
    expect((await readParticipantInfo(A.chain, { tokenNetwork, channelId, participant: A.chain.address, partner: B.chain.address })).deposit).toBe(200n)
    expect(await readAllowance(A.chain, { token: TT2, spender: tokenNetwork })).toBe(0n)
  })

  test('no approve when the allowance already covers the deposit', async () => {
    const channelId = await readChannelIdentifier(B.chain, { tokenNetwork, participant: B.chain.address, partner: A.chain.address })
    expect(await approveIfNeeded(B.chain, B.queue, { token: TT2, spender: tokenNetwork, amount: 500n })).toBeDefined()
    expect(await approveIfNeeded(B.chain, B.queue, { token: TT2, spender: tokenNetwork, amount: 50n })).toBeUndefined()
    const nonce = await txCount(B)
    await setTotalDeposit(B.chain, B.queue, { tokenNetwork, channelId, partner: A.chain.address, totalDeposit: 50n })
    expect(await txCount(B)).toBe(nonce + 1)
    expect(await readAllowance(B.chain, { token: TT2, spender: tokenNetwork })).toBe(450n)
  })

  test('two concurrent deposits on one token network both go through', async () => {
    const channelId = await readChannelIdentifier(B.chain, { tokenNetwork, participant: B.chain.address, partner: A.chain.address })
    const other = privateKeyToAccount(generatePrivateKey()).address
    const { channelId: second } = await openChannel(A.chain, A.queue, { tokenNetwork, partner: other, settleTimeout: 20n })
    await Promise.all([
      setTotalDeposit(A.chain, A.queue, { tokenNetwork, channelId, partner: B.chain.address, totalDeposit: 230n }),
      setTotalDeposit(A.chain, A.queue, { tokenNetwork, channelId: second, partner: other, totalDeposit: 40n }),
    ])
    expect((await readParticipantInfo(A.chain, { tokenNetwork, channelId, participant: A.chain.address, partner: B.chain.address })).deposit).toBe(230n)
    expect((await readParticipantInfo(A.chain, { tokenNetwork, channelId: second, participant: A.chain.address, partner: other })).deposit).toBe(40n)
  })

  test('a deposit beyond the token balance is InsufficientTokenBalanceError, and nothing is sent', async () => {
    const channelId = await readChannelIdentifier(B.chain, { tokenNetwork, participant: B.chain.address, partner: A.chain.address })
    const balance = await readTokenBalance(B.chain, { token: TT2 })
    const nonce = await txCount(B)
    const error = await setTotalDeposit(B.chain, B.queue, { tokenNetwork, channelId, partner: A.chain.address, totalDeposit: 50n + balance + 1n }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(InsufficientTokenBalanceError)
    expect(error).toMatchObject({ name: 'InsufficientTokenBalanceError', balance, required: balance + 1n, token: TT2 })
    expect(await txCount(B)).toBe(nonce)
  })

  test('a total that does not grow is refused by the contract', async () => {
    const channelId = await readChannelIdentifier(B.chain, { tokenNetwork, participant: B.chain.address, partner: A.chain.address })
    const error = await setTotalDeposit(B.chain, B.queue, { tokenNetwork, channelId, partner: A.chain.address, totalDeposit: 50n }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'TransactionRevertedError', reason: 'TN/deposit: no deposit added' })
  })
})

describe('UserDeposit', () => {
  test('deposit with approval, plan a withdraw, and withdraw after the delay', async () => {
    const userDeposit = bed.deployment.contracts.UserDeposit.address
    const svt = bed.deployment.serviceToken
    await mintTokens(A.chain, A.queue, { token: svt, amount: 100n })
    await depositToUserDeposit(A.chain, A.queue, { userDeposit, totalDeposit: 60n })
    expect(await readUserDeposit(A.chain, { userDeposit })).toEqual({
      token: svt,
      totalDeposit: 60n,
      balance: 60n,
      effectiveBalance: 60n,
      withdrawPlan: undefined,
    })
    expect(await readAllowance(A.chain, { token: svt, spender: userDeposit })).toBe(0n)

    const planned = await planUserDepositWithdraw(A.chain, A.queue, { userDeposit, amount: 25n })
    expect(await readUserDeposit(A.chain, { userDeposit })).toMatchObject({
      effectiveBalance: 35n,
      withdrawPlan: { amount: 25n, withdrawBlock: planned.receipt.blockNumber + 100n },
    })
    const early = await withdrawFromUserDeposit(A.chain, A.queue, { userDeposit, amount: 25n }).catch((e: unknown) => e)
    expect(early).toMatchObject({ name: 'TransactionRevertedError', reason: 'withdrawing too early' })

    await bed.devnet.mine({ blocks: 100 })
    const tokens = await readTokenBalance(A.chain, { token: svt })
    await withdrawFromUserDeposit(A.chain, A.queue, { userDeposit, amount: 25n })
    expect(await readTokenBalance(A.chain, { token: svt })).toBe(tokens + 25n)
    expect(await readUserDeposit(A.chain, { userDeposit })).toMatchObject({ balance: 35n, effectiveBalance: 35n, withdrawPlan: undefined })
    // CustomToken is what the service token is: its own balance read agrees.
    expect(await A.chain.publicClient.readContract({ address: svt, abi: CustomToken.abi, functionName: 'balanceOf', args: [userDeposit] })).toBe(35n)
  })
})
