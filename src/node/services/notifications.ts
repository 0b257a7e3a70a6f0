import { describeRisk, type TransactionRisk } from '../../chain/transactionRisk.ts'
import type { NodeClient } from '../actions/client.ts'
import { readGasReserve } from '../actions/gasReserve.ts'
import { readOwnUserDeposit } from '../actions/userDeposit.ts'
import type { NotificationsOptions } from '../nodeConfig.ts'
import type { MonitoringRequests } from './monitoring.ts'
import type { Service } from './service.ts'

export type NotificationId =
  | 'low_service_token'
  | 'missing_gas_reserve'
  | 'version_outdated'
  | 'version_security_warning'
  | 'partner_equivocation'
  | 'monitoring_unavailable'
  | 'monitoring_reward_not_covered'
  | 'channels_waiting_sync'
  | 'transaction_at_risk'

/** `critical`: funds or security are at stake; `normal`: something to act on soon; `low`: informational. */
export type NotificationUrgency = 'low' | 'normal' | 'critical'

export type Notification = { id: NotificationId; summary: string; body: string; urgency: NotificationUrgency }

const DEFAULT_MIN_SERVICE_TOKEN_BALANCE = 55n * 10n ** 17n

/**
 * The conditions that need the user's attention (docs/rest-api.md, Notifications). Each is raised by its condition
 * and cleared by the first check that finds it no longer holds, so reading the list does not empty it (unlike
 * the Raiden node, whose read is destructive). A service: checked once the node is ready and then every
 * `checkEveryBlocks` blocks:
 * - low_service_token: the UDC balance that services can count on (planned withdrawals excluded) is below the
 *   minimum. Never raised without a UDC.
 * - missing_gas_reserve: the native balance is below the estimated gas, at the current gas price, to close,
 *   settle and unlock every channel the node has (gasReserve.ts).
 * - version_outdated / version_security_warning: from the release feed, when one is configured. A feed that
 *   cannot be read leaves these two as they were.
 * - partner_equivocation: a partner signed two different messages under one nonce (docs/decisions/0029); raised as
 *   soon as it happens, from the count the state keeps, so it stays raised across restarts.
 * - monitoring_unavailable / monitoring_reward_not_covered, with monitoring on (docs/decisions/0035): the
 *   ServiceRegistry lists no service, or a channel's newest request went unacknowledged for a minute; the UDC
 *   balance services can count on is below the monitoring reward (nothing is asked for then).
 * - channels_waiting_sync: channels of a node restored from a copy wait for their partner's ChannelSync
 *   (docs/decisions/0034), an offline partner's for as long as it is offline; raised and cleared from the state, at
 *   once when a channel is synced.
 * - transaction_at_risk: a transaction with a deadline (an update of a partner's close, a secret registration, a
 *   withdraw) may miss it: the chain asks more than --max-fee-per-gas, the balance cannot pay its gas, or it is not
 *   mined with few blocks left (docs/decisions/0054). Raised and cleared as the transaction queue and the transaction
 *   runner tell, at once, each transaction with what would help.
 */
export class NodeNotifications implements Service {
  private readonly raised = new Map<NotificationId, Notification>()
  private options!: Required<Omit<NotificationsOptions, 'releaseFeedUrl'>> & Pick<NotificationsOptions, 'releaseFeedUrl'>
  private lastCheckedBlock: bigint | undefined
  private started = false
  private stopped = false
  private timer: ReturnType<typeof setTimeout> | undefined
  /** The last check asked for (in flight or queued), and the one queued that has not started yet. */
  private lastCheck: Promise<void> = Promise.resolve()
  private queued: { generation: number; done: Promise<void> } | undefined
  /** Counts configure() calls: a check or tick begun under older options changes nothing when it ends. */
  private generation = 0
  private firstCheck!: Promise<void>
  private resolveFirst: () => void = () => {}
  private readonly unsubscribe: () => void
  /** The transactions at risk now, by the id their teller gave. */
  private readonly risks = new Map<string, TransactionRisk>()

  constructor(
    private readonly client: NodeClient,
    private readonly services: { monitoring?: MonitoringRequests | undefined } = {},
  ) {
    this.configure(client.config.notifications)
    // An equivocation is raised as soon as it happens, while the node syncs too.
    this.unsubscribe = client.subscribe((notice) => {
      if (notice.type === 'partnerEquivocated') this.checkEquivocations()
      if (notice.type === 'channelSynced') this.checkWaitingSync()
      if (notice.type === 'transactionRisk') {
        if (notice.risk) this.risks.set(notice.id, notice.risk)
        else this.risks.delete(notice.id)
        this.checkTransactionRisks()
      }
    })
  }

  /** Checks at once, then every `checkEveryBlocks` blocks. */
  start(): void {
    this.started = true
    this.schedule(0)
  }

  /** Starts over with these options: nothing raised until the first check with them. */
  configure(options: NotificationsOptions): void {
    const next = { minServiceTokenBalance: DEFAULT_MIN_SERVICE_TOKEN_BALANCE, checkEveryBlocks: 10n, feedTimeoutMs: 5_000, ...options }
    if (next.checkEveryBlocks < 1n) throw new RangeError('checkEveryBlocks must be at least 1')
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.resolveFirst()
    this.generation++
    this.options = next
    this.raised.clear()
    // Told as they happen, not found by a check: raised again at once.
    this.checkTransactionRisks()
    this.lastCheckedBlock = undefined
    this.firstCheck = new Promise((resolve) => (this.resolveFirst = resolve))
    if (this.started) this.schedule(0)
  }

  /**
   * The notifications raised now, oldest first. Waits for the first check while the node is ready (so a list read at
   * start is not empty by accident); asked for before the service started (a host that starts it later), it checks.
   */
  async list(): Promise<Notification[]> {
    if (this.client.status.status === 'ready') {
      if (!this.started) await this.check()
      await this.firstCheck
    }
    return [...this.raised.values()]
  }

  /**
   * Checks every condition, in a check that starts after this call (also called by the block schedule). Checks run
   * one at a time: a call while one is in flight queues the next, and calls while that one waits share it. Only a
   * check under the current options ends the wait of list(); one begun under older options changes nothing.
   */
  check(): Promise<void> {
    const generation = this.generation
    if (this.queued?.generation === generation) return this.queued.done
    const entry = { generation, done: Promise.resolve() }
    entry.done = this.lastCheck.then(() => {
      if (this.queued === entry) this.queued = undefined
      return this.checkAll(generation)
    })
    this.queued = entry
    this.lastCheck = entry.done.catch(() => {})
    void this.lastCheck.then(() => {
      if (generation === this.generation) this.resolveFirst()
    })
    return entry.done
  }

  stop(): void {
    this.stopped = true
    this.unsubscribe()
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.resolveFirst()
  }

  private schedule(ms: number) {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.tick(), ms)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private async tick() {
    const generation = this.generation
    const { status } = this.client.status
    if (status === 'stopped') return this.stop()
    if (status === 'ready') {
      const block = this.client.state.blockNumber
      if (this.lastCheckedBlock === undefined || block >= this.lastCheckedBlock + this.options.checkEveryBlocks) {
        this.lastCheckedBlock = block
        await this.check()
      }
    }
    // configure() during the check started a new schedule; this one ends here.
    if (generation !== this.generation) return
    this.schedule(Math.min(this.client.config.pollingInterval, 1_000))
  }

  private async checkAll(generation: number) {
    if (generation !== this.generation) return
    this.checkEquivocations()
    this.checkMonitoring()
    this.checkWaitingSync()
    const results = await Promise.allSettled([this.checkServiceToken(generation), this.checkGasReserve(generation), this.checkVersion(generation)])
    for (const r of results) if (r.status === 'rejected' && !this.stopped) this.client.report('notifications', r.reason)
  }

  private set(id: NotificationId, notification: Omit<Notification, 'id'> | undefined) {
    if (!notification) this.raised.delete(id)
    else this.raised.set(id, { id, ...notification })
  }

  private checkTransactionRisks() {
    const risks = [...this.risks.values()]
    this.set(
      'transaction_at_risk',
      risks.length === 0
        ? undefined
        : {
            summary: risks.length === 1 ? 'A transaction may miss its deadline' : `${risks.length} transactions may miss their deadlines`,
            body: `${risks.map((risk) => describeRisk(risk)).join('; ')}. Until it is mined, the node keeps raising its fee within the cap and sends it again.`,
            urgency: 'critical',
          },
    )
  }

  private checkEquivocations() {
    const cheats = Object.values(this.client.state.channels).filter((c) => (c.partnerEnd.equivocations ?? 0) > 0)
    this.set(
      'partner_equivocation',
      cheats.length === 0
        ? undefined
        : {
            summary: 'A partner signed two different messages under one nonce',
            body: `${cheats
              .map((c) => `${c.partner} in channel ${c.id} of token ${c.token} (${c.partnerEnd.equivocations} time(s))`)
              .join(
                '; ',
              )}. The second message was not acknowledged and changed nothing; both, with their signatures, are kept as evidence in the node's events (GET /_debug/node_events, event partnerEquivocated). A partner that does this is cheating or broken: consider closing the channel with it.`,
            urgency: 'critical',
          },
    )
  }

  private checkMonitoring() {
    const health = this.services.monitoring?.health()
    const problem = health?.noService
      ? 'the ServiceRegistry lists no service to ask'
      : health?.unguarded
        ? `${health.unguarded} channel(s) have a newest request that no monitoring service acknowledged within a minute (GET /monitoring shows which, and the services)`
        : undefined
    this.set(
      'monitoring_unavailable',
      problem
        ? {
            summary: 'No monitoring service guards the channels',
            body: `Monitoring is on, but ${problem}. While this node is offline, a partner that closes a channel can keep what it paid this node since the last proof on-chain: stay online, or make sure a monitoring service is registered and reachable.`,
            urgency: 'normal',
          }
        : undefined,
    )
  }

  private checkWaitingSync() {
    const waiting = Object.values(this.client.state.channels).filter((c) => c.waitingSync)
    this.set(
      'channels_waiting_sync',
      waiting.length === 0
        ? undefined
        : {
            summary: 'Channels wait for their partner after a restore',
            body: `This node was restored from a copy, which may be older than what it last signed. The channel(s) with ${waiting
              .map((c) => `${c.partner} (channel ${c.id} of token ${c.token})`)
              .join(
                ', ',
              )} carry no payment, withdraw or close until their partner confirms their latest state; it is asked at every start and answers as soon as it is online. Their funds are on chain and safe meanwhile.`,
            urgency: 'normal',
          },
    )
  }

  private async checkServiceToken(generation: number) {
    const info = await readOwnUserDeposit(this.client)
    if (generation !== this.generation) return
    const { enableMonitoring, monitoringReward } = this.client.config
    this.set(
      'monitoring_reward_not_covered',
      enableMonitoring && (!info || info.effectiveBalance < monitoringReward)
        ? {
            summary: 'The user deposit does not cover the monitoring reward',
            body: info
              ? `Monitoring is on, but the balance of ${this.client.address} in the UserDeposit contract ${info.userDeposit} that services can use is ${info.effectiveBalance} (planned withdrawals excluded), below the reward of ${monitoringReward} (smallest unit of the service token ${info.token}) each request offers: no channel is put under a monitoring service's guard until it is. Deposit more with POST /user_deposit.`
              : 'Monitoring is on, but the deployment has no UserDeposit contract to pay the services from: no channel is put under their guard.',
            urgency: 'normal',
          }
        : undefined,
    )
    const min = this.options.minServiceTokenBalance
    this.set(
      'low_service_token',
      info && info.effectiveBalance < min
        ? {
            summary: 'Service token balance too low',
            body: `The balance of ${this.client.address} in the UserDeposit contract ${info.userDeposit} that services can use is ${info.effectiveBalance} (planned withdrawals excluded), below the minimum of ${min} (smallest unit of the service token ${info.token}). Pathfinding and monitoring cannot be paid: deposit more with POST /user_deposit.`,
            urgency: 'normal',
          }
        : undefined,
    )
  }

  private async checkGasReserve(generation: number) {
    const reserve = await readGasReserve(this.client)
    if (generation !== this.generation) return
    const channels = Object.values(this.client.state.channels).length
    this.set(
      'missing_gas_reserve',
      reserve.enough
        ? undefined
        : {
            summary: 'Native balance below the gas reserve',
            body: `The account ${this.client.address} holds ${reserve.balance} wei, but closing, settling and unlocking its ${channels} channel(s) is estimated to need ${reserve.required} wei (${reserve.gas} gas at ${reserve.gasPrice} wei, plus 10%). On-chain transactions that protect the channels' funds may fail: top up the account.`,
            urgency: 'critical',
          },
    )
  }

  private async checkVersion(generation: number) {
    const { releaseFeedUrl: url, feedTimeoutMs, version: current } = this.options
    if (!url) return
    const feed = await readReleaseFeed(url, feedTimeoutMs)
    if (generation !== this.generation) return
    this.set(
      'version_outdated',
      compareVersions(current, feed.latest) < 0
        ? {
            summary: 'Your version is outdated',
            body: `You are running version ${current}; the latest release is ${feed.latest}. It is time to update.`,
            urgency: 'normal',
          }
        : undefined,
    )
    this.set(
      'version_security_warning',
      feed.security.includes(current)
        ? {
            summary: 'Security update required',
            body: `Version ${current}, which you are running, has a known security problem. Update to ${feed.latest} as soon as possible.`,
            urgency: 'critical',
          }
        : undefined,
    )
  }
}

export type ReleaseFeed = { latest: string; security: string[] }

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/

/** Reads and checks the release feed; throws when it is unreachable, slow or not of the expected shape. */
export async function readReleaseFeed(url: string, timeoutMs = 5_000): Promise<ReleaseFeed> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } })
  if (!response.ok) throw new Error(`release feed ${url} answered ${response.status}`)
  const body = (await response.json()) as { latest?: unknown; security?: unknown }
  const security = body.security ?? []
  if (typeof body.latest !== 'string' || !VERSION.test(body.latest)) throw new Error(`release feed ${url}: latest is not a version`)
  if (!Array.isArray(security) || !security.every((v) => typeof v === 'string')) throw new Error(`release feed ${url}: security is not a list of versions`)
  return { latest: body.latest, security: security as string[] }
}

/**
 * Semantic-version order: major, minor and patch numerically; a pre-release (1.0.0-rc.1) comes before its
 * release; build metadata is ignored. A version that does not parse is never called older.
 */
export function compareVersions(a: string, b: string): number {
  const pa = VERSION.exec(a)
  const pb = VERSION.exec(b)
  if (!pa || !pb) return 0
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i])
    if (d !== 0) return Math.sign(d)
  }
  const [ra, rb] = [pa[4], pb[4]]
  if (ra === rb) return 0
  if (ra === undefined) return 1
  if (rb === undefined) return -1
  const xa = ra.split('.')
  const xb = rb.split('.')
  for (let i = 0; i < Math.max(xa.length, xb.length); i++) {
    const [x, y] = [xa[i], xb[i]]
    if (x === undefined) return -1
    if (y === undefined) return 1
    const [nx, ny] = [/^\d+$/.test(x) ? Number(x) : undefined, /^\d+$/.test(y) ? Number(y) : undefined]
    if (nx !== undefined && ny !== undefined) {
      if (nx !== ny) return Math.sign(nx - ny)
    } else if (nx !== undefined) return -1
    else if (ny !== undefined) return 1
    else if (x !== y) return x < y ? -1 : 1
  }
  return 0
}
