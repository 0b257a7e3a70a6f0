import type { Address, Hex } from 'viem'
import { mintTokens, TokenNotMintableError, type TransactionRevertedError } from '../../chain/index.ts'
import { withCode } from '../../errors.ts'
import type { NodeClient } from './client.ts'

/**
 * Mints `value` of a test token to `to`, paid by the node, with the token's first mint function that accepts
 * the call (mint(address,uint256), mintFor(uint256,address), increaseSupply(uint256,address)). A token without
 * one, an address without code, or a mint the token refuses (no minter role, supply overflow) is
 * TokenNotMintableError (400); a node without gas money, InsufficientFundsForGasError (402).
 */
export async function mintTestTokens(
  client: Pick<NodeClient, 'chain' | 'queue'>,
  { token, to, value }: { token: Address; to: Address; value: bigint },
): Promise<{ transactionHash: Hex }> {
  try {
    const sent = await mintTokens(client.chain, client.queue, { token, to, amount: value })
    return { transactionHash: sent.hash }
  } catch (error) {
    // The eth_call accepted the mint but the transaction reverted (the token changed meanwhile): still a refusal.
    const reverted = withCode<TransactionRevertedError>(error, 'TRANSACTION_REVERTED')
    throw reverted ? new TokenNotMintableError(token, reverted) : error
  }
}
