import { getAddress, type Address } from 'viem'
import { readRegisteredServices, type RegisteredService } from '../../chain/serviceRegistry.ts'
import { ZERO_HASH } from '../../protocol/balanceProof.ts'
import type { RequestMonitoring, Signed, SignedBalanceProof } from '../../protocol/messages/types.ts'
import type { Channel, ChannelState, NodeState } from '../../protocol/state/types.ts'
import type { NodeClient } from '../actions/client.ts'
import { readOwnUserDeposit } from '../actions/userDeposit.ts'
import type { Service } from './service.ts'

/** A partner's balance proof worth asking the services to hold. */
export type ProofToGuard = { key: string; channel: Channel; proof: SignedBalanceProof }

/**
 * The partners' proofs a node asks monitoring services to hold (docs/decisions/0035), in the order of the state's
 * channels: in an open channel (a service refuses others, and a closed one is the node's own to answer), signed,
 * with something in it (nonce above 0 and a balance hash other than zero: the contract takes nothing else, and an
 * empty proof protects nothing), and newer than the one last asked for in that channel.
 */
export function proofsToGuard(state: NodeState, asked: (key: string) => bigint | undefined): ProofToGuard[] {
  const out: ProofToGuard[] = []
  for (const [key, channel] of Object.entries(state.channels)) {
    const bp = channel.partnerEnd.balanceProof
    if (channel.state !== 'opened' || !bp?.signature || bp.nonce === 0n || bp.balanceHash.toLowerCase() === ZERO_HASH) continue
    if (bp.nonce <= (asked(key) ?? 0n)) continue
    out.push({
      key,
      channel,
      proof: {
        chain_id: channel.chainId,
        token_network_address: channel.tokenNetwork,
        channel_identifier: channel.id,
        nonce: bp.nonce,
        balance_hash: bp.balanceHash,
        additional_hash: bp.messageHash,
        signature: bp.signature,
      },
    })
  }
  return out
}

export type MonitoringOptions = {
  /** How often the ServiceRegistry is read again: 10 minutes, 1 while it lists no service. */
  registryEveryMs?: number
  registryEveryMsWithoutServices?: number
  /** A channel whose newest request no service acknowledged for this long is unguarded (the notification): 60 s. */
  unansweredMs?: number
  now?: () => number
}

/** One service's answer for one channel: the newest request it holds, and the one on its way to it. */
type ServiceSide = { acknowledged?: { nonce: bigint; at: number }; sending?: bigint }

type Guarded = {
  tokenNetwork: Address
  token: Address
  channelId: bigint
  partner: Address
  /** The newest request signed for this channel. */
  request?: { nonce: bigint; signed: Signed<RequestMonitoring>; at: number }
  /** By service (lowercase address). */
  services: Map<string, ServiceSide>
}

type KnownService = RegisteredService & { acknowledged: number; lastAcknowledgedAt?: number }

/** What GET /monitoring shows. Times are milliseconds since the epoch. */
export type MonitoringView = {
  enabled: boolean
  reward: bigint
  /** The UserDeposit as last read (before a request is signed, at most once a block), undefined before. */
  userDeposit: { effectiveBalance: bigint; coversReward: boolean; block: bigint } | undefined
  /** The services registered now, as last read from the ServiceRegistry (`readAt`), undefined before. */
  registry: { readAt: number } | undefined
  services: { address: Address; url: string; acknowledged: number; lastAcknowledgedAt?: number; waiting: number }[]
  channels: {
    tokenNetwork: Address
    token: Address
    channelId: bigint
    partner: Address
    state: ChannelState | 'gone'
    request?: { nonce: bigint; at: number }
    acknowledged: { service: Address; nonce: bigint; at: number }[]
  }[]
}

/** What the notifications ask. */
export type MonitoringHealth = {
  /** The registry was read and lists no service. */
  noService: boolean
  /** Channels whose newest request no service acknowledged within `unansweredMs` of sending it. */
  unguarded: number
}

/**
 * The node's side of monitoring (docs/decisions/0035): asks the monitoring services to hold the newest balance proof
 * each partner sent, so that one of them submits it if the partner closes while the node is away. A service, on when
 * `enableMonitoring` is (createServices makes it then only).
 *
 * It watches the state (the core stays as it was, and emits nothing for it): at each look, every open channel
 * whose partner's proof is newer than the one last asked for gets a RequestMonitoring, signed by the effect handler
 * (which refuses once the state is stale) and sent by delivery to every service the ServiceRegistry lists now,
 * resent until that service acknowledges it (its Delivered, with the id derived from the request). A look takes the
 * newest proof only, however many came since the last one, and a newer request replaces one still unacknowledged:
 * only the newest counts. Raiden's rule decides when: monitoring on, and the UserDeposit's effective balance (planned
 * withdrawals off) at least the reward, read before signing, at most once a block; below it, nothing is signed and
 * the proofs wait for the deposit. Nothing here is on a payment's path: the looks run on their own timer, and the
 * requests go in each service's own queue.
 *
 * In memory only: after a restart the node asks again for the newest proof of every open channel, which a service
 * that holds it acknowledges at once.
 */
export class MonitoringRequests implements Service {
  private readonly channels = new Map<string, Guarded>()
  private services: KnownService[] = []
  private registryReadAt: number | undefined
  private registryTriedAt: number | undefined
  private deposit: MonitoringView['userDeposit']
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private readonly options: Required<Omit<MonitoringOptions, 'now'>>
  private readonly now: () => number

  constructor(
    private readonly client: NodeClient,
    options: MonitoringOptions = {},
  ) {
    this.options = { registryEveryMs: 600_000, registryEveryMsWithoutServices: 60_000, unansweredMs: 60_000, ...options }
    this.now = options.now ?? Date.now
  }

  start(): void {
    this.schedule(0)
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.client.serviceMessages.cancel(this.sendingKeys())
  }

  /** Looks once now (the timer does it too): reads the registry when due, then asks for what is new. */
  async look(): Promise<void> {
    if (this.stopped || this.client.status.status !== 'ready') return
    // The services known so far are asked meanwhile.
    await this.readRegistryWhenDue().catch((error: unknown) => this.client.report('monitoring', error, 'reading the ServiceRegistry'))
    const state = this.client.state
    if (state.stale) return
    this.forgetClosed(state)
    const fresh = proofsToGuard(state, (key) => this.channels.get(key)?.request?.nonce)
    if (fresh.length > 0 && this.services.length > 0 && (await this.depositCovers(state))) this.sign(fresh)
    this.sendAll()
  }

  view(): MonitoringView {
    const state = this.client.state
    const waiting = new Map<string, number>()
    for (const guarded of this.channels.values())
      for (const [service, side] of guarded.services) if (side.sending !== undefined) waiting.set(service, (waiting.get(service) ?? 0) + 1)
    return {
      enabled: true,
      reward: this.client.config.monitoringReward,
      userDeposit: this.deposit,
      registry: this.registryReadAt === undefined ? undefined : { readAt: this.registryReadAt },
      services: this.services.map((s) => ({
        address: s.address,
        url: s.url,
        acknowledged: s.acknowledged,
        ...(s.lastAcknowledgedAt === undefined ? {} : { lastAcknowledgedAt: s.lastAcknowledgedAt }),
        waiting: waiting.get(s.address.toLowerCase()) ?? 0,
      })),
      channels: [...this.channels].map(([key, g]) => ({
        tokenNetwork: g.tokenNetwork,
        token: g.token,
        channelId: g.channelId,
        partner: g.partner,
        state: state.channels[key]?.state ?? 'gone',
        ...(g.request ? { request: { nonce: g.request.nonce, at: g.request.at } } : {}),
        acknowledged: [...g.services]
          .filter(([, side]) => side.acknowledged)
          .map(([service, side]) => ({ service: getAddress(service), nonce: side.acknowledged!.nonce, at: side.acknowledged!.at })),
      })),
    }
  }

  health(): MonitoringHealth {
    const now = this.now()
    const state = this.client.state
    let unguarded = 0
    for (const [key, g] of this.channels) {
      const r = g.request
      if (!r || now - r.at < this.options.unansweredMs || state.channels[key]?.state !== 'opened') continue
      if (![...g.services.values()].some((side) => side.acknowledged?.nonce === r.nonce)) unguarded++
    }
    return { noService: this.registryReadAt !== undefined && this.services.length === 0, unguarded }
  }

  private schedule(ms: number) {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.tick(), ms)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private async tick() {
    if (this.client.status.status === 'stopped') return this.stop()
    await this.look().catch((error: unknown) => {
      if (!this.stopped) this.client.report('monitoring', error)
    })
    this.schedule(Math.min(this.client.config.pollingInterval, 1_000))
  }

  private async readRegistryWhenDue() {
    const every = this.services.length > 0 ? this.options.registryEveryMs : this.options.registryEveryMsWithoutServices
    const at = this.now()
    // Tried again at the next interval whatever happens now: a failing endpoint is not asked at every look.
    if (this.registryTriedAt !== undefined && at - this.registryTriedAt < every) return
    this.registryTriedAt = at
    const registered = await readRegisteredServices(this.client.chain, { serviceRegistry: this.client.config.deployment.contracts.ServiceRegistry.address })
    this.registryReadAt = at
    const me = this.client.address.toLowerCase()
    const before = new Map(this.services.map((s) => [s.address.toLowerCase(), s]))
    this.services = registered
      .filter((s) => s.address.toLowerCase() !== me)
      .map((s) => {
        const known = before.get(s.address.toLowerCase())
        return {
          ...s,
          acknowledged: known?.acknowledged ?? 0,
          ...(known?.lastAcknowledgedAt === undefined ? {} : { lastAcknowledgedAt: known.lastAcknowledgedAt }),
        }
      })
    // A service whose registration ended is no longer asked.
    const now = new Set(this.services.map((s) => s.address.toLowerCase()))
    const gone: string[] = []
    for (const [key, g] of this.channels)
      for (const [service, side] of g.services)
        if (!now.has(service)) {
          if (side.sending !== undefined) gone.push(sendKey(service, key))
          g.services.delete(service)
        }
    this.client.serviceMessages.cancel(gone)
  }

  /** Raiden's rule: the UserDeposit's effective balance covers the reward. Read at most once a block. */
  private async depositCovers(state: NodeState): Promise<boolean> {
    if (this.deposit && this.deposit.block >= state.blockNumber) return this.deposit.coversReward
    const info = await readOwnUserDeposit(this.client)
    const effectiveBalance = info?.effectiveBalance ?? 0n
    this.deposit = { effectiveBalance, coversReward: info !== undefined && effectiveBalance >= this.client.config.monitoringReward, block: state.blockNumber }
    return this.deposit.coversReward
  }

  /** Signs a request for each proof, the newest of its channel from now on (StaleStateError stops the look). */
  private sign(fresh: ProofToGuard[]) {
    const { deployment, monitoringReward } = this.client.config
    for (const { key, channel, proof } of fresh) {
      const signed = this.client.serviceMessages.signRequestMonitoring({
        balanceProof: proof,
        monitoringServiceContract: deployment.contracts.MonitoringService.address,
        rewardAmount: monitoringReward,
      })
      const guarded = this.channels.get(key) ?? {
        tokenNetwork: channel.tokenNetwork,
        token: channel.token,
        channelId: channel.id,
        partner: channel.partner,
        services: new Map<string, ServiceSide>(),
      }
      guarded.request = { nonce: proof.nonce, signed, at: this.now() }
      this.channels.set(key, guarded)
    }
  }

  /** Every service gets the newest request of every open channel that it neither holds nor has on its way. */
  private sendAll() {
    const state = this.client.state
    for (const [key, g] of this.channels) {
      const request = g.request
      if (!request || state.channels[key]?.state !== 'opened') continue
      for (const service of this.services) {
        const id = service.address.toLowerCase()
        const side = g.services.get(id) ?? {}
        if (side.acknowledged?.nonce === request.nonce || side.sending === request.nonce) continue
        side.sending = request.nonce
        g.services.set(id, side)
        this.client.serviceMessages.send(sendKey(id, key), service.address, request.signed, () => {
          side.sending = undefined
          if (!side.acknowledged || side.acknowledged.nonce < request.nonce) side.acknowledged = { nonce: request.nonce, at: this.now() }
          const known = this.services.find((s) => s.address.toLowerCase() === id)
          if (known) {
            known.acknowledged++
            known.lastAcknowledgedAt = this.now()
          }
        })
      }
    }
  }

  /** A channel no longer open is not asked for again (a service refuses it); one gone from the state is forgotten. */
  private forgetClosed(state: NodeState) {
    const stop: string[] = []
    for (const [key, g] of this.channels) {
      const channel = state.channels[key]
      if (channel?.state === 'opened') continue
      for (const [service, side] of g.services)
        if (side.sending !== undefined) {
          stop.push(sendKey(service, key))
          side.sending = undefined
        }
      if (!channel) this.channels.delete(key)
    }
    this.client.serviceMessages.cancel(stop)
  }

  private sendingKeys(): string[] {
    const keys: string[] = []
    for (const [key, g] of this.channels) for (const [service, side] of g.services) if (side.sending !== undefined) keys.push(sendKey(service, key))
    return keys
  }
}

const sendKey = (service: string, channel: string) => `monitoring|${service}|${channel}`
