import type { Address } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { mintTokens } from '../chain/erc20.ts'
import { registerToken } from '../chain/tokenNetworkActions.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import { depositToUserDeposit } from '../chain/userDepositActions.ts'

/** What each devnet account gets: 1000 tokens of 18 decimals of each test token, and 100 service tokens in the UserDeposit. */
export const TOKENS_PER_ACCOUNT = 1000n * 10n ** 18n
export const SERVICE_DEPOSIT = 100n * 10n ** 18n

/**
 * The devnet's second step: the deployer registers every test token (a token network each) and funds each account
 * with test tokens and a UserDeposit of service tokens, one transaction after the other. Returns the token networks.
 */
export async function registerTokensAndFund(
  deployer: ChainClient,
  queue: TransactionQueue,
  deployment: Deployment,
  accounts: readonly Address[],
): Promise<Record<string, Address>> {
  const registry = deployment.contracts.TokenNetworkRegistry.address
  const tokenNetworks: Record<string, Address> = {}
  for (const [symbol, token] of Object.entries(deployment.tokens))
    tokenNetworks[symbol] = (await registerToken(deployer, queue, { registry, token })).tokenNetwork
  await mintTokens(deployer, queue, { token: deployment.serviceToken, amount: SERVICE_DEPOSIT * BigInt(accounts.length) })
  for (const to of accounts) {
    for (const token of Object.values(deployment.tokens)) await mintTokens(deployer, queue, { token, amount: TOKENS_PER_ACCOUNT, to })
    await depositToUserDeposit(deployer, queue, { userDeposit: deployment.contracts.UserDeposit.address, totalDeposit: SERVICE_DEPOSIT, beneficiary: to })
  }
  return tokenNetworks
}
