import { encodeFunctionData, getAddress, isAddressEqual, parseEventLogs, type Address, type TransactionReceipt } from 'viem'
import { TokenNetwork, TokenNetworkRegistry } from '../contracts/index.ts'
import type { ChainClient } from './chainClient.ts'
import { MissingEventError } from './errors.ts'
import { readParticipantInfo, readTokenNetworkInfo } from './reads.ts'
import { withTokenApproval } from './erc20.ts'
import type { SentTransaction, TransactionQueue } from './transactionQueue.ts'

export type RegisterTokenParameters = {
  registry: Address
  token: Address
  /** Both limits, or neither (then createERC20TokenNetworkWithoutLimits). */
  limits?: { channelParticipantDepositLimit: bigint; tokenNetworkDepositLimit: bigint }
}

/** Registers a token: creates its TokenNetwork and returns its address. */
export async function registerToken(
  _chain: ChainClient,
  queue: TransactionQueue,
  { registry, token, limits }: RegisterTokenParameters,
): Promise<SentTransaction & { tokenNetwork: Address }> {
  const data = limits
    ? encodeFunctionData({
        abi: TokenNetworkRegistry.abi,
        functionName: 'createERC20TokenNetwork',
        args: [token, limits.channelParticipantDepositLimit, limits.tokenNetworkDepositLimit],
      })
    : encodeFunctionData({ abi: TokenNetworkRegistry.abi, functionName: 'createERC20TokenNetworkWithoutLimits', args: [token] })
  const sent = await queue.send({ to: registry, data, description: `TokenNetworkRegistry.createERC20TokenNetwork(${token})` })
  const [created] = parseEventLogs({ abi: TokenNetworkRegistry.abi, eventName: 'TokenNetworkCreated', logs: fromContract(sent.receipt, registry) })
  if (!created) throw new MissingEventError('TokenNetworkCreated', sent.hash)
  return { ...sent, tokenNetwork: getAddress(created.args.token_network_address) }
}

export type OpenChannelParameters = {
  tokenNetwork: Address
  partner: Address
  settleTimeout: bigint
  /** Our deposit in the same transaction (openChannelWithDeposit), after approving exactly that much. */
  totalDeposit?: bigint
}

/** Opens a channel between the node and `partner`, optionally with our deposit; returns its id. */
export async function openChannel(
  chain: ChainClient,
  queue: TransactionQueue,
  { tokenNetwork, partner, settleTimeout, totalDeposit = 0n }: OpenChannelParameters,
): Promise<SentTransaction & { channelId: bigint }> {
  const description = `TokenNetwork.openChannel(${chain.address}, ${partner})`
  const sent =
    totalDeposit > 0n
      ? await withTokenApproval(
          chain,
          queue,
          { token: (await readTokenNetworkInfo(chain, { tokenNetwork })).token, spender: tokenNetwork, amount: totalDeposit },
          () =>
            queue.send({
              to: tokenNetwork,
              data: encodeFunctionData({
                abi: TokenNetwork.abi,
                functionName: 'openChannelWithDeposit',
                args: [chain.address, partner, settleTimeout, totalDeposit],
              }),
              description,
            }),
        )
      : await queue.send({
          to: tokenNetwork,
          data: encodeFunctionData({ abi: TokenNetwork.abi, functionName: 'openChannel', args: [chain.address, partner, settleTimeout] }),
          description,
        })
  const [opened] = parseEventLogs({ abi: TokenNetwork.abi, eventName: 'ChannelOpened', logs: fromContract(sent.receipt, tokenNetwork) })
  if (!opened) throw new MissingEventError('ChannelOpened', sent.hash)
  return { ...sent, channelId: opened.args.channel_identifier }
}

export type SetTotalDepositParameters = {
  tokenNetwork: Address
  channelId: bigint
  partner: Address
  totalDeposit: bigint
  /** Whose deposit grows (the node's by default); the node pays either way. */
  participant?: Address
}

/**
 * Raises a participant's total deposit, paying the difference: checks the token balance
 * (InsufficientTokenBalanceError) and approves exactly the difference first. A total that does not grow is
 * left to the contract to refuse ("TN/deposit: no deposit added").
 */
export async function setTotalDeposit(
  chain: ChainClient,
  queue: TransactionQueue,
  { tokenNetwork, channelId, partner, totalDeposit, participant = chain.address }: SetTotalDepositParameters,
): Promise<SentTransaction> {
  const { token } = await readTokenNetworkInfo(chain, { tokenNetwork })
  // The difference is read inside the section: a deposit finishing just before changes it.
  const added = async () => totalDeposit - (await readParticipantInfo(chain, { tokenNetwork, channelId, participant, partner })).deposit
  return withTokenApproval(chain, queue, { token, spender: tokenNetwork, amount: added }, () =>
    queue.send({
      to: tokenNetwork,
      data: encodeFunctionData({ abi: TokenNetwork.abi, functionName: 'setTotalDeposit', args: [channelId, participant, totalDeposit, partner] }),
      description: `TokenNetwork.setTotalDeposit(${channelId}, ${totalDeposit})`,
    }),
  )
}

/** The logs of a receipt emitted by `address` (a token's Transfer/Approval logs share the receipt). */
export function fromContract(receipt: TransactionReceipt, address: Address) {
  return receipt.logs.filter((log) => isAddressEqual(log.address, address))
}
