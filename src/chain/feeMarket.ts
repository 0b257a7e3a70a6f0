import type { PublicClient } from 'viem'
import { ChainRpcError } from './errors.ts'
import type { FeeMarket } from './fees.ts'

/**
 * What the chain asks now (fees.ts prices from it): the next block's base fee, which `eth_feeHistory` gives with
 * the chain's own rules (Base and Optimism adjust it faster than mainnet does), and the tip the endpoint suggests; or
 * the gas price on a chain whose blocks carry no base fee.
 */
export async function readFeeMarket(client: PublicClient): Promise<FeeMarket> {
  try {
    const block = await client.getBlock({ blockTag: 'latest' })
    if (block.baseFeePerGas === null || block.baseFeePerGas === undefined) return { gasPrice: await client.getGasPrice() }
    const [next, priorityFee] = await Promise.all([
      // One block of history also gives the base fee of the block after it; an endpoint without eth_feeHistory gets the
      // bound EIP-1559 puts on one block's rise.
      client
        .getFeeHistory({ blockCount: 1, rewardPercentiles: [] })
        .then((history) => history.baseFeePerGas.at(-1) ?? (block.baseFeePerGas! * 1125n) / 1000n)
        .catch(() => (block.baseFeePerGas! * 1125n) / 1000n),
      client.estimateMaxPriorityFeePerGas(),
    ])
    return { baseFee: next, priorityFee }
  } catch (e) {
    throw new ChainRpcError('reading the fees (eth_getBlockByNumber, eth_feeHistory, eth_maxPriorityFeePerGas)', e)
  }
}
