import { encodeFunctionData, type Address } from 'viem'
import { UserDeposit } from '../contracts/index.ts'
import type { ChainClient } from './chainClient.ts'
import { read } from './reads.ts'
import { withTokenApproval } from './erc20.ts'
import type { SentTransaction, TransactionQueue } from './transactionQueue.ts'

/**
 * Raises the UserDeposit total of `beneficiary` (the node by default) to `totalDeposit`, paying and approving
 * exactly the difference in the service token (InsufficientTokenBalanceError if the node lacks it). A total
 * that does not grow is left to the contract to refuse ("deposit not increasing").
 */
export async function depositToUserDeposit(
  chain: ChainClient,
  queue: TransactionQueue,
  { userDeposit, totalDeposit, beneficiary = chain.address }: { userDeposit: Address; totalDeposit: bigint; beneficiary?: Address },
): Promise<SentTransaction> {
  const token = await read(chain, userDeposit, UserDeposit.abi, 'token', [])
  const added = async () => totalDeposit - (await read(chain, userDeposit, UserDeposit.abi, 'total_deposit', [beneficiary]))
  return withTokenApproval(chain, queue, { token, spender: userDeposit, amount: added }, () =>
    queue.send({
      to: userDeposit,
      data: encodeFunctionData({ abi: UserDeposit.abi, functionName: 'deposit', args: [beneficiary, totalDeposit] }),
      description: `UserDeposit.deposit(${beneficiary}, ${totalDeposit})`,
    }),
  )
}

/** Plans to withdraw `amount`: possible from the UserDeposit's withdraw delay (100 blocks) on. */
export function planUserDepositWithdraw(
  _chain: ChainClient,
  queue: TransactionQueue,
  { userDeposit, amount }: { userDeposit: Address; amount: bigint },
): Promise<SentTransaction> {
  return queue.send({
    to: userDeposit,
    data: encodeFunctionData({ abi: UserDeposit.abi, functionName: 'planWithdraw', args: [amount] }),
    description: `UserDeposit.planWithdraw(${amount})`,
  })
}

/** Withdraws up to the planned `amount` to the node. */
export function withdrawFromUserDeposit(
  _chain: ChainClient,
  queue: TransactionQueue,
  { userDeposit, amount }: { userDeposit: Address; amount: bigint },
): Promise<SentTransaction> {
  return queue.send({
    to: userDeposit,
    data: encodeFunctionData({ abi: UserDeposit.abi, functionName: 'withdraw', args: [amount] }),
    description: `UserDeposit.withdraw(${amount})`,
  })
}
