import { maxUint256, zeroAddress, type Address, type Hex } from 'viem'
import {
  ChainRpcError,
  depositToUserDeposit,
  planUserDepositWithdraw,
  read,
  readTokenBalance,
  readUserDeposit,
  withdrawFromUserDeposit,
  type UserDepositInfo,
} from '../../chain/index.ts'
import { UserDeposit } from '../../contracts/index.ts'
import { ConflictError, InsufficientBalanceError, NotFoundError } from '../errors.ts'
import type { NodeClient } from './client.ts'

/**
 * The node's account in the UserDeposit contract (UDC), which pays network services (pathfinding, monitoring):
 * deposit, plan a withdrawal, withdraw. Each call checks what the Raiden node checks before sending anything,
 * throwing typed errors (409 conflicts, 402 balance, 404 no contract), then waits for the mined transaction.
 * Calls of one node run one at a time, so a check and its transaction see the same UDC state.
 */

export type UserDepositClient = Pick<NodeClient, 'chain' | 'queue' | 'config'>

/**
 * The UserDeposit contract the node uses, or undefined when it has none: a deployment names the zero address
 * for UserDeposit when the chain has no services (the REST API then answers 404).
 */
export function userDepositOf(client: Pick<NodeClient, 'config'>): Address | undefined {
  const address = client.config.deployment.contracts.UserDeposit?.address
  return address && address.toLowerCase() !== zeroAddress ? address : undefined
}

/** The UDC's address, checked to hold code; NotFoundError otherwise. */
async function configured(client: UserDepositClient): Promise<Address> {
  const userDeposit = userDepositOf(client)
  if (!userDeposit) throw new NotFoundError('No UserDeposit contract is configured.')
  const code = await client.chain.publicClient.getCode({ address: userDeposit }).catch((e: unknown) => {
    throw new ChainRpcError('eth_getCode', e)
  })
  if (!code || code === '0x') throw new NotFoundError(`No UserDeposit contract is configured: ${userDeposit} holds no code.`)
  return userDeposit
}

/** One UDC call at a time per account: the checks read the state the transaction then changes. */
function exclusive<T>(client: UserDepositClient, task: () => Promise<T>): Promise<T> {
  return client.queue.exclusive(`userDeposit:${client.chain.address}`.toLowerCase(), task)
}

/** The node's UDC balances (Raiden's user deposit view), or undefined without a UDC. */
export async function readOwnUserDeposit(client: UserDepositClient): Promise<(UserDepositInfo & { userDeposit: Address }) | undefined> {
  const userDeposit = userDepositOf(client)
  if (!userDeposit) return undefined
  return { ...(await readUserDeposit(client.chain, { userDeposit })), userDeposit }
}

/**
 * Raises the node's UDC total deposit to `totalDeposit` (the new total, not the increment), paying the
 * difference in the service token. 409 when the total does not grow or the contract's whole-balance limit
 * would be passed; 402 when the node lacks the service tokens (or gas).
 */
export function depositToServices(client: UserDepositClient, { totalDeposit }: { totalDeposit: bigint }): Promise<{ transactionHash: Hex }> {
  return exclusive(client, async () => {
    const userDeposit = await configured(client)
    const info = await readUserDeposit(client.chain, { userDeposit })
    if (totalDeposit <= info.totalDeposit) throw new ConflictError(`Total deposit did not increase: the current total deposit is ${info.totalDeposit}.`)
    if (totalDeposit > maxUint256) throw new ConflictError('Deposit overflow.')
    const added = totalDeposit - info.totalDeposit
    const [wholeBalance, limit] = await Promise.all([
      read(client.chain, userDeposit, UserDeposit.abi, 'whole_balance', []),
      read(client.chain, userDeposit, UserDeposit.abi, 'whole_balance_limit', []),
    ])
    if (wholeBalance + added > limit)
      throw new ConflictError(`Deposit of ${added} would have exceeded the UDC balance limit of ${limit} (the contract holds ${wholeBalance}).`)
    const available = await readTokenBalance(client.chain, { token: info.token })
    if (available < added)
      throw new InsufficientBalanceError(`Not enough balance to deposit. Available=${available} Needed=${added} (service token ${info.token})`)
    const sent = await depositToUserDeposit(client.chain, client.queue, { userDeposit, totalDeposit })
    return { transactionHash: sent.hash }
  })
}

/**
 * Plans to withdraw `amount` from the UDC; the withdrawal is possible from the returned block on (the
 * contract's withdraw delay after the planning block). A new plan replaces the previous one.
 */
export function planServicesWithdraw(
  client: UserDepositClient,
  { amount }: { amount: bigint },
): Promise<{ transactionHash: Hex; plannedWithdrawBlockNumber: bigint }> {
  return exclusive(client, async () => {
    if (amount <= 0n) throw new ConflictError('Withdraw amount must be greater than zero.')
    const userDeposit = await configured(client)
    const info = await readUserDeposit(client.chain, { userDeposit })
    if (amount > info.balance) throw new ConflictError(`The withdraw of ${amount} is bigger than the current balance of ${info.balance}.`)
    const delay = await read(client.chain, userDeposit, UserDeposit.abi, 'withdraw_delay', [])
    const sent = await planUserDepositWithdraw(client.chain, client.queue, { userDeposit, amount })
    return { transactionHash: sent.hash, plannedWithdrawBlockNumber: sent.receipt.blockNumber + delay }
  })
}

/** Withdraws `amount` (at most the planned amount) from the UDC to the node, once the planned block is reached. */
export function withdrawFromServices(client: UserDepositClient, { amount }: { amount: bigint }): Promise<{ transactionHash: Hex }> {
  return exclusive(client, async () => {
    if (amount <= 0n) throw new ConflictError('Withdraw amount must be greater than zero.')
    const userDeposit = await configured(client)
    const { withdrawPlan } = await readUserDeposit(client.chain, { userDeposit })
    if (!withdrawPlan) throw new ConflictError('Withdrawing more than planned: no withdraw is planned.')
    if (amount > withdrawPlan.amount) throw new ConflictError(`Withdrawing more than planned: the planned amount is ${withdrawPlan.amount}.`)
    const current = await client.chain.publicClient.getBlockNumber().catch((e: unknown) => {
      throw new ChainRpcError('eth_blockNumber', e)
    })
    if (current < withdrawPlan.withdrawBlock)
      throw new ConflictError(`Withdrawing too early. Planned withdraw at block ${withdrawPlan.withdrawBlock}. Current block: ${current}.`)
    const sent = await withdrawFromUserDeposit(client.chain, client.queue, { userDeposit, amount })
    return { transactionHash: sent.hash }
  })
}
