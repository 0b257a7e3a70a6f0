import { depositToServices, planServicesWithdraw, withdrawFromServices } from '../../node/actions/userDeposit.ts'
import type { ApiContextRef } from '../context.ts'
import { ApiError } from '../errors.ts'
import * as v from 'valibot'
import { maxUint256 } from 'viem'
import { integer, optional } from '../fields.ts'
import { endpoint, json, type Resources } from '../resource.ts'
import { hex32String } from '../schema.ts'

// Negative amounts parse here and are refused by the node's checks (409), after the one-field check (400);
// the documented schema stays the non-negative one.
const amount = (description: string) => optional(integer({ min: -maxUint256, documentedMin: 0n, description }))

const body = {
  total_deposit: amount('deposit: the new total deposit (the current total plus what to add)'),
  planned_withdraw_amount: amount('plan a withdrawal of this amount'),
  withdraw_amount: amount('withdraw this amount (at most the planned amount, from the planned block on)'),
}

/** The answer as a client receives it (openapi.json): planned_withdraw_block_number only for a plan. */
export const userDepositAnswer = v.object({
  transaction_hash: hex32String,
  planned_withdraw_block_number: v.optional(v.pipe(v.number(), v.integer())),
})
export type UserDepositAnswer = v.InferOutput<typeof userDepositAnswer>

/** POST /user_deposit: deposit to, plan a withdrawal from, or withdraw from the UserDeposit contract. */
export function userDepositRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/user_deposit', {
    POST: endpoint({
      doc: {
        summary: 'Deposit to, plan a withdrawal from, or withdraw from the UserDeposit contract',
        description:
          'The body holds exactly one of total_deposit, planned_withdraw_amount and withdraw_amount. Answers once the transaction is mined. ' +
          "A withdrawal must be planned first and is possible from planned_withdraw_block_number on (the contract's withdraw delay, 100 blocks, after planning). " +
          'planned_withdraw_block_number is a JSON integer, as the API description says.',
        body,
        bodyOneOf: true,
        responses: {
          200: 'done: transaction_hash, and planned_withdraw_block_number for a plan',
          400: 'malformed JSON; no field, or more than one field, given',
          402: 'deposit: not enough service tokens; any operation: not enough native currency for gas',
          404: 'the node has no UserDeposit contract configured',
          409: "deposit: total_deposit not higher than the current total deposit, or above the contract's whole-balance limit; plan: amount not greater than zero or above the balance; withdraw: amount not greater than zero, more than planned, or before the planned block",
        },
        schema: userDepositAnswer,
      },
      handler: async (c) => {
        const { total_deposit, planned_withdraw_amount, withdraw_amount } = c.req.valid('json')
        const given = [total_deposit !== undefined, planned_withdraw_amount !== undefined, withdraw_amount !== undefined].filter(Boolean).length
        if (given === 0)
          throw new ApiError(400, "Nothing to do. Should either provide 'total_deposit', 'planned_withdraw_amount' or 'withdraw_amount' argument")
        if (given > 1) throw new ApiError(400, conflictMessage(total_deposit !== undefined, planned_withdraw_amount !== undefined))
        if (total_deposit !== undefined) {
          const { transactionHash } = await depositToServices(ctx().client, { totalDeposit: total_deposit })
          return json(c, { transaction_hash: transactionHash })
        }
        if (planned_withdraw_amount !== undefined) {
          const { transactionHash, plannedWithdrawBlockNumber } = await planServicesWithdraw(ctx().client, { amount: planned_withdraw_amount })
          return json(c, { planned_withdraw_block_number: Number(plannedWithdrawBlockNumber), transaction_hash: transactionHash })
        }
        const { transactionHash } = await withdrawFromServices(ctx().client, { amount: withdraw_amount! })
        return json(c, { transaction_hash: transactionHash })
      },
    }),
  })
}

/** The Raiden node's messages for two operations in one request. */
function conflictMessage(deposit: boolean, plan: boolean): string {
  if (deposit && plan) return 'Cannot deposit to UDC and plan a withdraw at the same time'
  if (deposit) return 'Cannot deposit to UDC and withdraw at the same time'
  return 'Cannot withdraw from UDC and plan a withdraw at the same time'
}
