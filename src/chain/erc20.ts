import { encodeFunctionData, parseAbi, type Address, type Hex } from 'viem'
import { CustomToken } from '../contracts/index.ts'
import type { ChainClient } from './chainClient.ts'
import { InsufficientTokenBalanceError, TokenNotMintableError } from './errors.ts'
import { readAllowance, readTokenBalance } from './reads.ts'
import type { ChainCall, SentTransaction, TransactionQueue } from './transactionQueue.ts'

/** Throws InsufficientTokenBalanceError unless the node holds at least `amount` of `token`. */
export async function ensureTokenBalance(chain: ChainClient, { token, amount }: { token: Address; amount: bigint }): Promise<void> {
  const balance = await readTokenBalance(chain, { token })
  if (balance < amount) throw new InsufficientTokenBalanceError(token, chain.address, balance, amount)
}

/**
 * Lets `spender` pull `amount` of the node's `token`: approves exactly `amount` unless the allowance already
 * covers it. Returns the approve transaction, or undefined when none was needed.
 */
export async function approveIfNeeded(
  chain: ChainClient,
  queue: TransactionQueue,
  { token, spender, amount }: { token: Address; spender: Address; amount: bigint },
): Promise<SentTransaction | undefined> {
  if (amount <= 0n || (await readAllowance(chain, { token, spender })) >= amount) return undefined
  return queue.send(
    {
      to: token,
      data: encodeFunctionData({ abi: CustomToken.abi, functionName: 'approve', args: [spender, amount] }),
      description: `approve(${spender}, ${amount}) on ${token}`,
    },
    { confirmations: 0n },
  )
}

/**
 * Runs a token-spending sequence (balance check, approval, the spending call) alone for this token and
 * spender: two deposits at once would otherwise overwrite each other's approval. `amount` may be computed
 * inside the section, from state that an earlier sequence changes (e.g. the current deposit).
 */
export function withTokenApproval<T>(
  chain: ChainClient,
  queue: TransactionQueue,
  { token, spender, amount }: { token: Address; spender: Address; amount: bigint | (() => Promise<bigint>) },
  spend: () => Promise<T>,
): Promise<T> {
  return queue.exclusive(`approve:${token}:${spender}`.toLowerCase(), async () => {
    const needed = typeof amount === 'bigint' ? amount : await amount()
    if (needed > 0n) {
      await ensureTokenBalance(chain, { token, amount: needed })
      await approveIfNeeded(chain, queue, { token, spender, amount: needed })
    }
    return spend()
  })
}

const otherMintAbi = parseAbi(['function increaseSupply(uint256 value, address to)'])

/** The mint functions test tokens offer (rest-api `_testing` endpoint), tried in this order. */
function mintCalls(token: Address, to: Address, amount: bigint): (ChainCall & { to: Address })[] {
  return [
    {
      to: token,
      data: encodeFunctionData({ abi: CustomToken.abi, functionName: 'mint', args: [to, amount] }),
      description: `mint(${to}, ${amount}) on ${token}`,
    },
    {
      to: token,
      data: encodeFunctionData({ abi: CustomToken.abi, functionName: 'mintFor', args: [amount, to] }),
      description: `mintFor(${amount}, ${to}) on ${token}`,
    },
    {
      to: token,
      data: encodeFunctionData({ abi: otherMintAbi, functionName: 'increaseSupply', args: [amount, to] }),
      description: `increaseSupply(${amount}, ${to}) on ${token}`,
    },
  ]
}

/**
 * Mints test tokens to `to` (the node by default) with the first of mint(address,uint256),
 * mintFor(uint256,address) and increaseSupply(uint256,address) that an eth_call accepts.
 */
export async function mintTokens(
  chain: ChainClient,
  queue: TransactionQueue,
  { token, amount, to = chain.address }: { token: Address; amount: bigint; to?: Address },
): Promise<SentTransaction & { function: 'mint' | 'mintFor' | 'increaseSupply' }> {
  const names = ['mint', 'mintFor', 'increaseSupply'] as const
  let lastError: unknown
  // An eth_call to an address without code "succeeds": that is no token.
  if (!(await chain.publicClient.getCode({ address: token }).catch(() => undefined))) throw new TokenNotMintableError(token)
  const calls = mintCalls(token, to, amount)
  for (let i = 0; i < calls.length; i++) {
    const candidate = calls[i]!
    const accepted = await accepts(chain, token, candidate.data).catch((e: unknown) => {
      lastError = e
      return false
    })
    if (!accepted) continue
    return { ...(await queue.send(candidate)), function: names[i]! }
  }
  throw new TokenNotMintableError(token, lastError)
}

/** Whether an eth_call of `data` succeeds. A contract without the function reverts (no fallback) or has no code. */
async function accepts(chain: ChainClient, to: Address, data: Hex): Promise<boolean> {
  await chain.publicClient.call({ account: chain.address, to, data })
  return true
}
