import type { Address } from 'viem'
import { ChainRpcError, readNativeBalance } from '../../chain/index.ts'
import type { Channel, NodeState } from '../../protocol/state/types.ts'
import type { NodeClient } from './client.ts'

/**
 * Gas of the on-chain calls of a channel's life, whole transactions as measured by `npm run bench:gas`
 * (docs/performance.md, Gas). Unlock is the one-lock case: most channels settle with few or no locks.
 */
export const channelGas = {
  openChannelWithDeposit: 152_668n,
  setTotalDeposit: 75_766n,
  closeChannel: 118_455n,
  updateNonClosingBalanceProof: 90_627n,
  settleChannel: 108_584n,
  unlock: 58_955n,
} as const

/** The estimate is raised by this factor (11/10), as Raiden's GAS_RESERVE_ESTIMATE_SECURITY_FACTOR. */
const SECURITY_NUMERATOR = 11n
const SECURITY_DENOMINATOR = 10n

/** Gas the rest of a channel's life may still cost us, by the state it is in (Raiden's gas_reserve.py). */
export function remainingChannelGas(state: Channel['state']): bigint {
  const g = channelGas
  switch (state) {
    case 'opened':
      return g.closeChannel + g.updateNonClosingBalanceProof + g.settleChannel + g.unlock
    case 'closing':
    case 'closed':
      return g.updateNonClosingBalanceProof + g.settleChannel + g.unlock
    case 'settling':
    case 'settled':
      return g.unlock
  }
}

/** Gas to open (with a deposit) and later close, settle and unlock one channel. */
export const newChannelGas = channelGas.openChannelWithDeposit + remainingChannelGas('opened')

/**
 * Gas the node must be able to pay to finish the life of all its channels (only some of `tokenNetwork`'s
 * when given), plus `channelsToOpen` new ones and `deposits` extra deposits.
 */
export function requiredGas(
  state: NodeState,
  { channelsToOpen = 0, deposits = 0, tokenNetwork }: { channelsToOpen?: number; deposits?: number; tokenNetwork?: Address } = {},
): bigint {
  let gas = BigInt(channelsToOpen) * newChannelGas + BigInt(deposits) * channelGas.setTotalDeposit
  for (const channel of Object.values(state.channels)) {
    if (tokenNetwork && channel.tokenNetwork.toLowerCase() !== tokenNetwork.toLowerCase()) continue
    gas += remainingChannelGas(channel.state)
  }
  return gas
}

export type GasReserve = {
  /** Native currency (wei) the estimate needs, security factor included. */
  required: bigint
  balance: bigint
  gasPrice: bigint
  /** Gas units of the estimate, before the gas price and the security factor. */
  gas: bigint
  enough: boolean
}

/** Compares the node's native balance with the gas `requiredGas` estimates, at the current gas price. */
export function readGasReserve(client: Pick<NodeClient, 'chain' | 'state'>, parameters: Parameters<typeof requiredGas>[1] = {}): Promise<GasReserve> {
  return readGasCost(client, requiredGas(client.state, parameters))
}

/** Whether the node's native balance pays for `gas` at the current gas price, security factor included. */
export async function readGasCost(client: Pick<NodeClient, 'chain'>, gas: bigint): Promise<GasReserve> {
  const [balance, gasPrice] = await Promise.all([
    readNativeBalance(client.chain),
    client.chain.publicClient.getGasPrice().catch((e: unknown) => {
      throw new ChainRpcError('eth_gasPrice', e)
    }),
  ])
  const required = (gas * gasPrice * SECURITY_NUMERATOR) / SECURITY_DENOMINATOR
  return { required, balance, gasPrice, gas, enough: balance >= required }
}
