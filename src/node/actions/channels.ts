import { isAddressEqual, maxUint256, type Address } from 'viem'
import {
  InsufficientFundsForGasError,
  ChainRpcError,
  openChannel as sendOpenChannel,
  readRegistryLimits,
  readTokenBalance,
  readTokenNetworkInfo,
  setTotalDeposit as sendSetTotalDeposit,
  type TokenNetworkInfo,
} from '../../chain/index.ts'
import { distributable, withdrawTotal } from '../../protocol/channel/amounts.ts'
import type { Effect, Transaction } from '../../protocol/state/effects.ts'
import type { Channel, NodeState } from '../../protocol/state/types.ts'
import { ChannelNotFoundError, ChannelNotSyncedError, ConflictError, InsufficientBalanceError, NodeStoppedError } from '../errors.ts'
import type { NodeNotice } from '../notices.ts'
import type { NodeClient } from './client.ts'
import { channelGas, readGasCost, readGasReserve } from './gasReserve.ts'
import { tokenNetworkOf } from '../../protocol/state/access.ts'

/**
 * The user's channel actions with the checks the Raiden node's RaidenAPI makes before acting (timeouts, limits,
 * balances, channel states), so a refused request changes nothing. Each action returns once its outcome is
 * synced into the node's state: the REST API is blocking (docs/rest-api.md, general convention 6).
 */

/** Gas of setTotalWithdraw (bench/gas.md); gasReserve.ts has the calls of a channel's life but not this one. */
const SET_TOTAL_WITHDRAW_GAS = 105_983n

/** Channels still to settle (a settled channel only waits in the state for its unlocks), optionally of one token network. */
export function unsettledChannels(state: NodeState, tokenNetwork?: Address): Channel[] {
  const order = (a: Channel, b: Channel) => {
    const [x, y] = [a.tokenNetwork.toLowerCase(), b.tokenNetwork.toLowerCase()]
    if (x !== y) return x < y ? -1 : 1
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
  }
  return Object.values(state.channels)
    .filter((c) => c.state !== 'settled' && (!tokenNetwork || isAddressEqual(c.tokenNetwork, tokenNetwork)))
    .sort(order)
}

/** Our channel with `partner` for `token`: the open one, else the latest (closed or settled, until it is forgotten). */
export function channelOf(client: NodeClient, token: Address, partner: Address): Channel | undefined {
  const tokenNetwork = tokenNetworkOf(client.state, token)
  return tokenNetwork ? client.channel(tokenNetwork, partner) : undefined
}

/** Why these timeouts are not acceptable for a channel, or undefined (Raiden's `_raise_for_invalid_channel_timeouts`). */
export function whyInvalidTimeouts({
  settleTimeout,
  revealTimeout,
  settlementTimeoutMin,
  settlementTimeoutMax,
}: {
  settleTimeout: bigint
  revealTimeout: bigint
  settlementTimeoutMin?: bigint
  settlementTimeoutMax?: bigint
}): string | undefined {
  if (revealTimeout <= 0n) return 'reveal_timeout should be larger than zero'
  if (settleTimeout < 2n * revealTimeout) return `settle_timeout (${settleTimeout}) can not be smaller than double the reveal_timeout (${revealTimeout})`
  if (settlementTimeoutMin !== undefined && settleTimeout < settlementTimeoutMin) return `settlement timeout should be at least ${settlementTimeoutMin}`
  if (settlementTimeoutMax !== undefined && settleTimeout > settlementTimeoutMax) return `settlement timeout exceeds max of ${settlementTimeoutMax}`
  return undefined
}

export type OpenChannelParameters = { token: Address; partner: Address; totalDeposit?: bigint; settleTimeout?: bigint; revealTimeout?: bigint }

/** The channel, and whether this call opened it (false: it was open already, as Raiden's 200 on a repeated PUT). */
export type OpenChannelResult = { channel: Channel; created: boolean }

/**
 * Opens a channel with `partner` (with our first deposit in the same transaction), after every check that can
 * be made beforehand. An open channel with the partner is returned as it is (`created: false`), topped up when
 * `totalDeposit` exceeds its deposit; a channel being closed or settled is a conflict.
 */
export async function openChannel(
  client: NodeClient,
  { token, partner, totalDeposit, settleTimeout: askedSettle, revealTimeout: askedReveal }: OpenChannelParameters,
): Promise<OpenChannelResult> {
  if (isAddressEqual(partner, client.address)) throw new ConflictError('Using the same address for both participants is forbidden')
  await ensureContract(client, token)
  // Registered before anything is read from the token: a contract that is no token fails every read.
  const tokenNetwork = tokenNetworkOf(client.state, token)
  if (!tokenNetwork) throw new ConflictError(`Token network for token ${token} does not exist`)
  if (totalDeposit !== undefined && totalDeposit > 0n) {
    const available = await readTokenBalance(client.chain, { token })
    if (available < totalDeposit) throw new InsufficientBalanceError(`Not enough balance to deposit. Available=${available} Needed=${totalDeposit}`)
  }
  const settleTimeout = askedSettle ?? client.config.defaultSettleTimeout
  const revealTimeout = askedReveal ?? client.config.defaultRevealTimeout
  const limits = await readRegistryLimits(client.chain, { registry: client.config.deployment.contracts.TokenNetworkRegistry.address })
  const invalid = whyInvalidTimeouts({ settleTimeout, revealTimeout, ...limits })
  if (invalid) throw new ConflictError(invalid)
  const info = await readTokenNetworkInfo(client.chain, { tokenNetwork })
  if (info.deprecated) throw new ConflictError('This token network has been deprecated; new channels cannot be opened')

  // One open (or top-up) per partner at a time: a second request waits, then finds the channel (Raiden's lock).
  return client.queue.exclusive(channelSection(tokenNetwork, partner), async () => {
    const existing = client.channel(tokenNetwork, partner)
    if (existing && existing.state !== 'settled') {
      if (existing.state !== 'opened') throw new ConflictError(`Channel with ${partner} is not in an open state (it is ${existing.state})`)
      // A repeated PUT is idempotent (0 means no deposit, as on the Raiden node); a larger total_deposit tops the
      // channel up, a smaller one cannot be undone.
      if (!totalDeposit || totalDeposit === existing.our.deposit) return { channel: existing, created: false }
      return { channel: await depositChecked(client, existing, totalDeposit, info), created: false }
    }
    if (totalDeposit !== undefined && totalDeposit > 0n) await ensureDepositFits(client, info, tokenNetwork, totalDeposit, totalDeposit, 0n)
    // Raiden's gas reserve: enough ETH to finish the life of every channel, this one included.
    const reserve = await readGasReserve(client, { channelsToOpen: 1 })
    if (!reserve.enough) throw new InsufficientFundsForGasError(client.address, reserve.balance, reserve.required)
    const channel = await openChannelOnChain(client, { tokenNetwork, partner, settleTimeout, revealTimeout, ...(totalDeposit ? { totalDeposit } : {}) })
    return { channel, created: true }
  })
}

export type ChannelActionParameters = { token: Address; partner: Address }

/** Raises our deposit to `totalDeposit` (the new total, not the increment) and returns once it is synced. */
export async function depositToChannel(
  client: NodeClient,
  { token, partner, totalDeposit }: ChannelActionParameters & { totalDeposit: bigint },
): Promise<Channel> {
  const channel = requireChannel(client, token, partner)
  return client.queue.exclusive(channelSection(channel.tokenNetwork, partner), async () => {
    // Read again inside the section: a deposit that just finished changed it.
    const current = client.channel(channel.tokenNetwork, partner) ?? channel
    return depositChecked(client, current, totalDeposit, await readTokenNetworkInfo(client.chain, { tokenNetwork: channel.tokenNetwork }))
  })
}

/**
 * Raises our withdrawn total to `totalWithdraw`: asks the partner to co-sign, sends setTotalWithdraw and returns
 * once the withdraw is synced from the chain. If the partner does not confirm before the request expires (it is
 * offline, or refuses), or the channel closes meanwhile, this is a ConflictError.
 */
export async function withdrawFromChannel(
  client: NodeClient,
  { token, partner, totalWithdraw }: ChannelActionParameters & { totalWithdraw: bigint },
): Promise<Channel> {
  const channel = requireChannel(client, token, partner)
  if (channel.state !== 'opened') throw new ConflictError(`Can't withdraw from a channel that is ${channel.state}`)
  requireSynced(channel)
  const current = withdrawTotal(channel.our)
  if (totalWithdraw <= current) throw new ConflictError(`Total withdraw ${totalWithdraw} did not increase (it is ${current})`)
  const free = distributable(channel.our, channel.partnerEnd)
  if (totalWithdraw - current > free) throw new ConflictError(`The withdraw of ${totalWithdraw - current} is bigger than the current balance of ${free}`)
  await ensureGasFor(client, SET_TOTAL_WITHDRAW_GAS)

  const { tokenNetwork, id } = channel
  return untilSettled(client, async (watch) => {
    rejectIfRefused(await client.dispatch({ type: 'withdraw', tokenNetwork, channelId: id, totalWithdraw }), 'withdraw')
    return watch((notice) => {
      if (
        notice?.type === 'withdrawExpired' &&
        isAddressEqual(notice.tokenNetwork, tokenNetwork) &&
        notice.channelId === id &&
        notice.totalWithdraw === totalWithdraw
      )
        throw new ConflictError(`The withdraw of ${totalWithdraw} expired before it reached the chain: the partner did not confirm it in time`)
      if (notice?.type === 'transactionFailed' && isOurs(notice.transaction, 'setTotalWithdraw', tokenNetwork, id)) throw notice.error
      if (notice) return undefined
      const now = client.channel(tokenNetwork, partner)
      if (now && now.id === id && now.our.withdrawn >= totalWithdraw) return now
      if (!now || now.id !== id || now.state !== 'opened')
        throw new ConflictError(`The channel was ${now?.id === id ? now.state : 'closed'} before the withdraw reached the chain`)
      return undefined
    })
  })
}

/** A channel restored from a copy signs nothing under its nonce before its partner's sync (docs/decisions/0034). */
export function requireSynced(channel: Channel): void {
  if (channel.waitingSync)
    throw new ChannelNotSyncedError(
      `the channel with ${channel.partner} waits for its partner to confirm its latest state after a restore; it can be used once the partner answers`,
    )
}

/** Closes the channel unilaterally and returns it once the close is mined and synced (state closed). */
export async function closeChannel(client: NodeClient, { token, partner }: ChannelActionParameters): Promise<Channel> {
  const channel = requireChannel(client, token, partner)
  if (channel.state !== 'opened') throw new ConflictError(`Attempted to close a channel that is ${channel.state}`)
  requireSynced(channel)
  await ensureGasFor(client, channelGas.closeChannel)

  const { tokenNetwork, id } = channel
  let failure: unknown
  return untilSettled(client, async (watch) => {
    // Accepted, the change left the channel `closing`: from here, `opened` again means the transaction failed.
    rejectIfRefused(await client.dispatch({ type: 'closeChannel', tokenNetwork, channelId: id }), 'close')
    return watch((notice) => {
      if (notice?.type === 'transactionFailed' && isOurs(notice.transaction, 'close', tokenNetwork, id)) failure = notice.error
      if (notice) return undefined
      const now = client.channel(tokenNetwork, partner)
      if (!now || now.id !== id) throw new ConflictError('The channel was settled and removed while closing')
      if (now.state === 'opened') {
        if (failure instanceof Error) throw failure
        throw new ConflictError('The close transaction failed')
      }
      return now.state === 'closing' ? undefined : now
    })
  })
}

/** Changes the channel's reveal timeout (local only: no transaction). */
export async function setRevealTimeout(
  client: NodeClient,
  { token, partner, revealTimeout }: ChannelActionParameters & { revealTimeout: bigint },
): Promise<Channel> {
  const channel = requireChannel(client, token, partner)
  if (channel.state !== 'opened') throw new ConflictError(`Can't update the reveal timeout of a channel that is ${channel.state}`)
  const invalid = whyInvalidTimeouts({ settleTimeout: channel.settleTimeout, revealTimeout })
  if (invalid) throw new ConflictError(invalid)
  rejectIfRefused(
    await client.dispatch({ type: 'setRevealTimeout', tokenNetwork: channel.tokenNetwork, channelId: channel.id, revealTimeout }),
    'setRevealTimeout',
  )
  return client.channel(channel.tokenNetwork, partner)!
}

// ---- on-chain steps, without the user-level checks (the connection manager uses them too) ----------------------

/** Sends openChannel (with our first deposit, if any) and returns the channel once the node has synced it. */
export async function openChannelOnChain(
  client: NodeClient,
  {
    tokenNetwork,
    partner,
    settleTimeout,
    revealTimeout,
    totalDeposit,
  }: { tokenNetwork: Address; partner: Address; settleTimeout?: bigint; revealTimeout?: bigint; totalDeposit?: bigint },
): Promise<Channel> {
  // The partner's way is opened while the transaction is mined: the first payment does not wait for it.
  client.connect(partner)
  const sent = await sendOpenChannel(client.chain, client.queue, {
    tokenNetwork,
    partner,
    settleTimeout: settleTimeout ?? client.config.defaultSettleTimeout,
    ...(totalDeposit ? { totalDeposit } : {}),
  })
  await client.waitForBlock(sent.receipt.blockNumber)
  if (revealTimeout !== undefined) await client.dispatch({ type: 'setRevealTimeout', tokenNetwork, channelId: sent.channelId, revealTimeout })
  const channel = client.channel(tokenNetwork, partner)
  if (!channel) throw new ChannelNotFoundError(`channel ${sent.channelId} was opened but not synced`)
  return channel
}

/** Sends setTotalDeposit and returns the channel once the node has synced the deposit. */
export async function depositOnChain(
  client: NodeClient,
  { tokenNetwork, partner, totalDeposit }: { tokenNetwork: Address; partner: Address; totalDeposit: bigint },
): Promise<Channel> {
  const channel = client.channel(tokenNetwork, partner)
  if (!channel) throw new ChannelNotFoundError(`no channel with ${partner}`)
  const sent = await sendSetTotalDeposit(client.chain, client.queue, { tokenNetwork, channelId: channel.id, partner, totalDeposit })
  await client.waitForBlock(sent.receipt.blockNumber)
  return client.channel(tokenNetwork, partner)!
}

// ---- helpers ------------------------------------------------------------------------------------------------

/** Whether a failed transaction is this channel's `type` (close, setTotalWithdraw). */
export function isOurs(transaction: Transaction, type: Transaction['type'], tokenNetwork: Address, channelId: bigint): boolean {
  return (
    transaction.type === type && 'tokenNetwork' in transaction && isAddressEqual(transaction.tokenNetwork, tokenNetwork) && transaction.channelId === channelId
  )
}

function channelSection(tokenNetwork: Address, partner: Address): string {
  return `channel:${tokenNetwork}:${partner}`.toLowerCase()
}

/** The channel a PATCH acts on; a missing one is a ChannelNotFoundError (409, as Raiden answers a PATCH). */
function requireChannel(client: NodeClient, token: Address, partner: Address): Channel {
  const channel = channelOf(client, token, partner)
  if (!channel) throw new ChannelNotFoundError(`Requested channel for token ${token} and partner ${partner} not found`)
  return channel
}

/** Throws InsufficientFundsForGasError unless the node can pay for `gas` now: checked before acting, so a refusal changes nothing. */
async function ensureGasFor(client: NodeClient, gas: bigint): Promise<void> {
  const cost = await readGasCost(client, gas)
  if (!cost.enough) throw new InsufficientFundsForGasError(client.address, cost.balance, cost.required)
}

/** A token is a contract: an address without code would make every read of it fail. */
async function ensureContract(client: NodeClient, token: Address): Promise<void> {
  let code: string | undefined
  try {
    code = await client.chain.publicClient.getCode({ address: token })
  } catch (e) {
    throw new ChainRpcError('eth_getCode', e)
  }
  if (!code || code === '0x') throw new ConflictError(`Address ${token} does not contain code`)
}

/** The deposit checks of Raiden's `set_total_channel_deposit`, in its order; then the deposit. Runs in the channel's section. */
async function depositChecked(client: NodeClient, channel: Channel, totalDeposit: bigint, info: TokenNetworkInfo): Promise<Channel> {
  if (channel.state !== 'opened') throw new ConflictError(`Can't set the total deposit of a channel that is ${channel.state}`)
  if (info.deprecated) throw new ConflictError('This token network has been deprecated')
  if (totalDeposit <= channel.our.deposit) throw new ConflictError(`Total deposit did not increase (it is ${channel.our.deposit})`)
  const added = totalDeposit - channel.our.deposit
  const available = await readTokenBalance(client.chain, { token: info.token })
  if (available < added) throw new InsufficientBalanceError(`Not enough balance to deposit. Available=${available} Needed=${added}`)
  await ensureDepositFits(client, info, channel.tokenNetwork, totalDeposit, added, channel.partnerEnd.deposit)
  return depositOnChain(client, { tokenNetwork: channel.tokenNetwork, partner: channel.partner, totalDeposit })
}

/** The contract's deposit limits: the whole network's, ours per channel, and the channel total's uint256 bound. */
async function ensureDepositFits(
  client: NodeClient,
  info: TokenNetworkInfo,
  tokenNetwork: Address,
  totalDeposit: bigint,
  added: bigint,
  partnerDeposit: bigint,
): Promise<void> {
  const held = await readTokenBalance(client.chain, { token: info.token, owner: tokenNetwork })
  if (held + added > info.tokenNetworkDepositLimit) throw new ConflictError(`Deposit of ${added} would have exceeded the token network deposit limit`)
  if (totalDeposit > info.channelParticipantDepositLimit)
    throw new ConflictError(`Deposit of ${totalDeposit} is larger than the channel participant deposit limit`)
  if (totalDeposit + partnerDeposit > maxUint256) throw new ConflictError('Deposit overflow')
}

/** A user action the protocol refused (it reports `actionRejected`): a conflict with the channel's state. */
function rejectIfRefused(applied: { effects: Effect[] }, action: string): void {
  for (const effect of applied.effects)
    if (effect.type === 'event' && effect.event.type === 'actionRejected' && effect.event.action === action)
      throw new ConflictError(`${action} refused: ${effect.event.reason}`)
}

type Check<T> = (notice: NodeNotice | undefined) => T | undefined
type Watch = <T>(check: Check<T>) => Promise<T>

/**
 * Runs `act` with a `watch` that resolves once `check` gives a value. `check` sees each notice of the node (from
 * before `act` runs, so none is missed), then, once they are all seen, `undefined`: the moment to judge the
 * state. That happens at every notice and every 50 ms (deposits and withdraws synced from the chain publish no
 * notice). A check that throws rejects; so does the node stopping.
 */
async function untilSettled<T>(client: NodeClient, act: (watch: Watch) => Promise<T>): Promise<T> {
  const seen: NodeNotice[] = []
  let wake: (() => void) | undefined
  const off = client.subscribe((notice) => {
    seen.push(notice)
    wake?.()
  })
  try {
    return await act(async (check) => {
      for (;;) {
        for (let notice = seen.shift(); notice; notice = seen.shift()) {
          const done = check(notice)
          if (done !== undefined) return done
        }
        const done = check(undefined)
        if (done !== undefined) return done
        if (client.status.status === 'stopped') throw new NodeStoppedError()
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 50)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
      }
    })
  } finally {
    off()
  }
}
