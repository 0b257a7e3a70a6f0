import type { ChainClient } from './chainClient.ts'
import { ChainRpcError } from './errors.ts'
import { revertReason } from './revertReason.ts'
import type { ChainCall } from './transactionQueue.ts'

/** What an eth_call of a transaction says it would do in the latest block. */
export type Simulation = { ok: true } | { ok: false; reason: string }

/**
 * Runs `call` as an eth_call from the account, in the latest block: a revert is `{ ok: false, reason }` (the require
 * string, or what the node said), an endpoint that fails is ChainRpcError. For a sender that must never pay for a
 * transaction the chain's own checks refuse (a monitoring service: docs/decisions/0031).
 */
export async function simulateCall(chain: Pick<ChainClient, 'publicClient' | 'address'>, call: ChainCall): Promise<Simulation> {
  try {
    await chain.publicClient.call({ account: chain.address, to: call.to, data: call.data, value: call.value })
    return { ok: true }
  } catch (e) {
    const reason = revertReason(e)
    if (reason !== undefined) return { ok: false, reason }
    throw new ChainRpcError(`eth_call of ${call.description}`, e)
  }
}
