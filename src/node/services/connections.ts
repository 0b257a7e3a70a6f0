import { getAddress, type Address } from 'viem'
import { InsufficientFundsForGasError, readChannelInfo, readTokenBalance, readTokenNetworkInfo } from '../../chain/index.ts'
import { channelKey } from '../../protocol/channel/key.ts'
import { sameAddress, tokenNetworkOf } from '../../protocol/state/access.ts'
import type { Channel, NodeState } from '../../protocol/state/types.ts'
import { ConflictError, NodeStoppedError, NotFoundError } from '../errors.ts'
import { channelGas, readGasCost, readGasReserve } from '../actions/gasReserve.ts'
import { depositOnChain, isOurs, openChannelOnChain } from '../actions/channels.ts'
import type { NodeClient } from '../actions/client.ts'
import type { Service } from './service.ts'

/** Our open channels of one token: GET /connections. */
export type ConnectionSummary = { sumDeposits: bigint; channels: number }

export type ConnectParameters = {
  token: Address
  /** Tokens to put into the token network, in all. */
  funds: bigint
  /** Channels to open (and fund) proactively; 3 by default. */
  initialChannelTarget?: bigint
  /** Fraction of `funds` kept for joining channels that others open with us; 0.4 by default. */
  joinableFundsTarget?: number
}

type Connection = {
  token: Address
  tokenNetwork: Address
  funds: bigint
  initialChannelTarget: bigint
  joinableFundsTarget: number
  /** Channels others open with us after this block are joined. */
  since: bigint
  /** Partners (lowercase) whose channel the background could not open: not tried again until the next connect. */
  failed: Set<string>
}

type PlannedChannel = { partner: Address; existing?: Channel }

const SCALE = 1_000_000_000n

/**
 * The connection manager (Raiden's, removed from the Raiden node in 2020; our REST API keeps it: docs/rest-api.md): joins a token
 * network by opening and funding channels with its best-connected participants, and keeps part of the funds
 * to join channels that others open with us.
 *
 * - `connect` opens up to `initialChannelTarget` channels, each funded with
 *   funds * (1 - joinableFundsTarget) / initialChannelTarget. Our open channels funded below that amount are
 *   topped up first and count towards the target. New partners are the participants of the token network's
 *   channel graph, most open channels first (then by address), never ourselves nor a node we already have a
 *   channel with. With fewer participants than the target it opens what it can; the background opens the rest
 *   as new participants appear, each funded with the per-channel amount or what is left of the funds if less
 *   (it does not top up channels).
 * - In the background (whenever the state changes), a channel another node opens with us after `connect`, and
 *   in which that node deposited, is joined: we deposit min(its deposit, the funds not yet deposited, the
 *   per-channel amount), as Raiden's `join_channel` did.
 * - `leave` closes every open channel of the token and waits until each is settled, which happens by itself after
 *   the settle window.
 *
 * The settings live in memory: after a restart, connect again. Calls on one token network run one at a time. A
 * service: the background runs between the node's ready and its stop.
 */
export class TokenNetworkConnections implements Service {
  private readonly connections = new Map<string, Connection>()
  /** Channels (keys) we joined or tried to join: never twice. */
  private readonly joined = new Set<string>()
  private readonly locks = new Map<string, Promise<unknown>>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private lastState: NodeState | undefined
  private started = false
  private stopped = false

  constructor(private readonly client: NodeClient) {}

  /** Tokens with at least one open channel: the sum of our deposits in those channels and their count. */
  summary(): Map<Address, ConnectionSummary> {
    const out = new Map<Address, ConnectionSummary>()
    for (const channel of Object.values(this.client.state.channels)) {
      if (channel.state !== 'opened') continue
      const token = getAddress(channel.token)
      const entry = out.get(token) ?? { sumDeposits: 0n, channels: 0 }
      out.set(token, { sumDeposits: entry.sumDeposits + channel.our.deposit, channels: entry.channels + 1 })
    }
    return out
  }

  /**
   * Joins the token network of `token` (see the class). Resolves once every channel it opens or tops up now
   * is on-chain and synced. ConflictError for invalid input (funds not positive, token not registered, more
   * funds than the node holds, a per-channel amount of 0 or above the token network's limit);
   * InsufficientFundsForGasError when the node cannot pay the gas reserve of its channels and the new ones.
   */
  async connect({ token, funds, initialChannelTarget = 3n, joinableFundsTarget = 0.4 }: ConnectParameters): Promise<void> {
    if (funds <= 0n) throw new ConflictError('funds must be greater than zero')
    if (initialChannelTarget < 0n) throw new ConflictError('initial_channel_target must not be negative')
    if (!(joinableFundsTarget >= 0 && joinableFundsTarget <= 1)) throw new ConflictError('joinable_funds_target must lie between 0 and 1')
    const tokenNetwork = tokenNetworkOf(this.client.state, token)
    if (!tokenNetwork) throw new ConflictError(`Token ${token} is not registered: it has no token network`)
    const connection: Connection = {
      token,
      tokenNetwork,
      funds,
      initialChannelTarget,
      joinableFundsTarget,
      since: this.client.state.blockNumber,
      failed: new Set(),
    }
    const perChannel = fundsPerChannel(connection)
    if (initialChannelTarget > 0n && perChannel === 0n)
      throw new ConflictError(
        `funds * (1 - joinable_funds_target) / initial_channel_target is 0: too few funds (${funds}) for ${initialChannelTarget} channels`,
      )
    await this.withLock(tokenNetwork, async () => {
      const balance = await readTokenBalance(this.client.chain, { token })
      if (balance < funds) throw new ConflictError(`Insufficient balance for token ${token}: the node holds ${balance}, funds is ${funds}`)
      const info = await readTokenNetworkInfo(this.client.chain, { tokenNetwork })
      if (info.deprecated) throw new ConflictError(`the token network of ${token} is deprecated: no new deposits`)
      if (perChannel > info.channelParticipantDepositLimit)
        throw new ConflictError(
          `the deposit per channel, ${perChannel}, exceeds the token network's limit of ${info.channelParticipantDepositLimit} per participant`,
        )
      const plan = this.openPlan(connection, perChannel)
      const opening = plan.filter((p) => !p.existing).length
      const reserve = await readGasReserve(this.client, { channelsToOpen: opening, deposits: plan.length - opening })
      if (!reserve.enough) throw new InsufficientFundsForGasError(this.client.address, reserve.balance, reserve.required)

      const previous = this.connections.get(key(tokenNetwork))
      this.connections.set(key(tokenNetwork), connection)
      this.watch()
      let done = 0
      try {
        for (const planned of plan) {
          await this.fund(connection, planned, perChannel)
          done++
        }
      } catch (error) {
        // Nothing happened on-chain: the call changed nothing, settings included.
        if (done === 0) {
          if (previous) this.connections.set(key(tokenNetwork), previous)
          else this.connections.delete(key(tokenNetwork))
        }
        throw error
      }
    })
  }

  /**
   * Leaves the token network of `token`: forgets its connection settings, closes every open channel of it and
   * waits until each is settled. Returns the partners of the channels it closed. NotFoundError when the token
   * has no token network; InsufficientFundsForGasError when the node cannot pay for the closes and settles;
   * ConflictError when a close failed on-chain (after waiting for the others).
   */
  async leave(token: Address): Promise<Address[]> {
    const tokenNetwork = tokenNetworkOf(this.client.state, token)
    if (!tokenNetwork) throw new NotFoundError(`Token ${token} is not registered: it has no token network`)
    return this.withLock(tokenNetwork, async () => {
      const open = this.ourChannels(tokenNetwork).filter((c) => c.state === 'opened')
      const cost = await readGasCost(this.client, BigInt(open.length) * (channelGas.closeChannel + channelGas.settleChannel))
      if (!cost.enough) throw new InsufficientFundsForGasError(this.client.address, cost.balance, cost.required)
      this.connections.delete(key(tokenNetwork))

      const closeErrors: string[] = []
      const off = this.client.subscribe((notice) => {
        if (notice.type === 'transactionFailed' && open.some((c) => isOurs(notice.transaction, 'close', tokenNetwork, c.id)))
          closeErrors.push(describe(notice.error))
      })
      try {
        // A channel the partner closed meanwhile is only waited for.
        for (const channel of open)
          if (this.client.channel(tokenNetwork, channel.partner)?.state === 'opened')
            await this.client.dispatch({ type: 'closeChannel', tokenNetwork, channelId: channel.id })
        const outcomes = await Promise.all(open.map((channel) => this.untilSettled(channel)))
        const failed = open.filter((_, i) => outcomes[i] === 'close failed')
        if (failed.length > 0) {
          const settled = open.filter((_, i) => outcomes[i] === 'settled').map((c) => getAddress(c.partner))
          throw new ConflictError(
            `closing the channel(s) with ${failed.map((c) => getAddress(c.partner)).join(', ')} failed${closeErrors.length ? ` (${closeErrors.join('; ')})` : ''}; closed and settled: ${settled.length ? settled.join(', ') : 'none'}`,
          )
        }
        return open.map((c) => getAddress(c.partner))
      } finally {
        off()
      }
    })
  }

  /** Lets the background work begin (once the node is ready): it looks at each new state while a connection is kept. */
  start(): void {
    this.started = true
    if (this.connections.size > 0) this.watch()
  }

  /** Stops the background work (it also stops by itself when the node stops). */
  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
  }

  // ---- planning ------------------------------------------------------------------------------------------

  private ourChannels(tokenNetwork: Address): Channel[] {
    return Object.values(this.client.state.channels).filter((c) => sameAddress(c.tokenNetwork, tokenNetwork))
  }

  /**
   * Whom to fund now to reach the channel target: our open channels funded below the per-channel amount first,
   * then new partners from the graph, most connected first.
   */
  private openPlan(connection: Connection, perChannel: bigint, { topUp = true }: { topUp?: boolean } = {}): PlannedChannel[] {
    const ours = this.ourChannels(connection.tokenNetwork)
    const open = ours.filter((c) => c.state === 'opened')
    const funded = open.filter((c) => c.our.deposit >= perChannel)
    const wanted = connection.initialChannelTarget - BigInt(funded.length)
    if (wanted <= 0n) return []
    const underfunded = topUp ? open.filter((c) => c.our.deposit < perChannel).map((c) => ({ partner: c.partner, existing: c })) : []
    const known = new Set([this.client.address.toLowerCase(), ...ours.map((c) => c.partner.toLowerCase()), ...connection.failed])
    const fresh = rankedParticipants(this.client.state, connection.tokenNetwork)
      .filter((p) => !known.has(p.toLowerCase()))
      .map((partner) => ({ partner }))
    return [...underfunded, ...fresh].slice(0, Number(wanted))
  }

  private async fund(connection: Connection, { partner, existing }: PlannedChannel, totalDeposit: bigint): Promise<void> {
    const { tokenNetwork } = connection
    if (existing) {
      if (totalDeposit > existing.our.deposit) await depositOnChain(this.client, { tokenNetwork, partner, totalDeposit })
      return
    }
    await openChannelOnChain(this.client, { tokenNetwork, partner, ...(totalDeposit > 0n ? { totalDeposit } : {}) })
  }

  /** What the connection may still deposit: funds minus our deposits in open channels, at most the token balance. */
  private async fundsRemaining(connection: Connection): Promise<bigint> {
    const deposited = this.ourChannels(connection.tokenNetwork)
      .filter((c) => c.state === 'opened')
      .reduce((sum, c) => sum + c.our.deposit, 0n)
    const left = connection.funds - deposited
    if (left <= 0n) return 0n
    const balance = await readTokenBalance(this.client.chain, { token: connection.token })
    return left < balance ? left : balance
  }

  // ---- background ----------------------------------------------------------------------------------------

  private watch() {
    if (this.started && this.timer === undefined && !this.stopped) this.schedule()
  }

  private schedule() {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.tick(), Math.min(this.client.config.pollingInterval, 1_000))
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private async tick() {
    const { status } = this.client.status
    if (status === 'stopped') return this.stop()
    if (status === 'ready' && this.connections.size > 0 && this.client.state !== this.lastState) {
      this.lastState = this.client.state
      for (const connection of [...this.connections.values()]) {
        // A user call holds the token network: look again once it is done.
        if (this.locks.has(key(connection.tokenNetwork))) {
          this.lastState = undefined
          continue
        }
        await this.withLock(connection.tokenNetwork, () => this.reconcile(connection)).catch((error) => this.client.report('connection manager', error))
      }
    }
    this.schedule()
  }

  /** Joins channels others opened with us, and opens more channels if the target is not met and peers appeared. */
  private async reconcile(connection: Connection) {
    if (this.connections.get(key(connection.tokenNetwork)) !== connection) return
    const perChannel = fundsPerChannel(connection)
    const us = this.client.address
    const graph = this.client.state.tokenNetworks[connection.tokenNetwork]?.graph ?? {}
    for (const channel of this.ourChannels(connection.tokenNetwork)) {
      const k = channelKey(channel.tokenNetwork, channel.id)
      if (channel.state !== 'opened' || channel.openedBlock <= connection.since || this.joined.has(k)) continue
      if (channel.our.deposit > 0n || channel.partnerEnd.deposit === 0n) continue
      const opener = graph[channel.id.toString()]?.participant1
      if (!opener || sameAddress(opener, us)) continue
      this.joined.add(k)
      const remaining = await this.fundsRemaining(connection)
      const cap = perChannel > 0n ? perChannel : remaining
      const amount = min(channel.partnerEnd.deposit, remaining, cap)
      if (amount > 0n) await depositOnChain(this.client, { tokenNetwork: connection.tokenNetwork, partner: channel.partner, totalDeposit: amount })
    }
    // Channels funded below the target (joined ones) are left as they are; new partners make up the count.
    for (const planned of this.openPlan(connection, perChannel, { topUp: false })) {
      const remaining = await this.fundsRemaining(connection)
      const deposit = min(perChannel, remaining)
      if (perChannel > 0n && deposit === 0n) return
      try {
        await this.fund(connection, planned, deposit)
      } catch (error) {
        connection.failed.add(planned.partner.toLowerCase())
        throw error
      }
    }
  }

  // ---- helpers -------------------------------------------------------------------------------------------

  /** Runs `task` once no other task holds the token network. */
  private withLock<T>(tokenNetwork: Address, task: () => Promise<T>): Promise<T> {
    const k = key(tokenNetwork)
    const previous = this.locks.get(k) ?? Promise.resolve()
    const run = previous.then(task, task)
    const settled = run.then(
      () => undefined,
      () => undefined,
    )
    this.locks.set(k, settled)
    void settled.then(() => {
      if (this.locks.get(k) === settled) this.locks.delete(k)
    })
    return run
  }

  /** Waits until the channel is settled (or forgotten after settlement), or its close failed. */
  private async untilSettled(channel: Channel): Promise<'settled' | 'close failed'> {
    const k = channelKey(channel.tokenNetwork, channel.id)
    const interval = Math.min(this.client.config.pollingInterval, 250)
    for (;;) {
      if (this.client.status.status === 'stopped') throw new NodeStoppedError()
      const now = this.client.state.channels[k]
      if (!now || now.state === 'settled') return 'settled'
      // Back to opened: our close failed. The partner's close may have won the race, though, and be synced soon.
      if (now.state === 'opened') {
        const onchain = await readChannelInfo(this.client.chain, {
          tokenNetwork: channel.tokenNetwork,
          channelId: channel.id,
          participant1: this.client.address,
          participant2: channel.partner,
        })
        if (onchain.state === 'opened' || onchain.state === 'nonExistent') return 'close failed'
      }
      await new Promise((r) => setTimeout(r, interval))
    }
  }
}

/** funds * (1 - joinableFundsTarget) / initialChannelTarget, rounded down (the fraction to nine decimals). */
export function fundsPerChannel({
  funds,
  initialChannelTarget,
  joinableFundsTarget,
}: Pick<Connection, 'funds' | 'initialChannelTarget' | 'joinableFundsTarget'>): bigint {
  if (initialChannelTarget <= 0n) return 0n
  const kept = BigInt(Math.round(joinableFundsTarget * Number(SCALE)))
  return (funds * (SCALE - kept)) / (SCALE * initialChannelTarget)
}

/** The participants of a token network's open channels, most open channels first, then by address. */
export function rankedParticipants(state: NodeState, tokenNetwork: Address): Address[] {
  const degree = new Map<string, { address: Address; channels: number }>()
  for (const c of Object.values(state.tokenNetworks[tokenNetwork]?.graph ?? {})) {
    if (!c.open) continue
    for (const p of [c.participant1, c.participant2]) {
      const entry = degree.get(p.toLowerCase()) ?? { address: getAddress(p), channels: 0 }
      degree.set(p.toLowerCase(), { ...entry, channels: entry.channels + 1 })
    }
  }
  return [...degree.values()].sort((a, b) => b.channels - a.channels || (a.address.toLowerCase() < b.address.toLowerCase() ? -1 : 1)).map((e) => e.address)
}

const key = (tokenNetwork: Address) => tokenNetwork.toLowerCase()
const describe = (error: unknown) => (error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error))
const min = (...values: bigint[]) => values.reduce((a, b) => (b < a ? b : a))
