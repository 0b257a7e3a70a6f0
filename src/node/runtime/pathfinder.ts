import { getAddress, type Address } from 'viem'
import type { ChainReader } from '../../chain/reads.ts'
import { readUserDeposit } from '../../chain/reads.ts'
import { readRegisteredServices } from '../../chain/serviceRegistry.ts'
import { nextIou, packIou, whyNotOurIou } from '../../protocol/iou.ts'
import { recoverPackedSignerSync } from '../../protocol/signature.ts'
import { announced, capacityUpdateOf, feeAnnouncementOf } from '../../protocol/routing/announcements.ts'
import type { HeardUpdate } from '../../pathfinding/heard.ts'
import type { Effect } from '../../protocol/state/effects.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import { withCode } from '../../errors.ts'
import { SerialByKey } from '../../serialByKey.ts'
import { PathfindingServiceError } from '../errors.ts'
import type { ResolvedNodeConfig } from '../nodeConfig.ts'
import type { PathfindingNotice } from '../notices.ts'
import { pfsFeedback, pfsInfo, pfsLastIou, pfsPaths, type PfsCall, type PfsInfo, type PfsRoutes, type SignedIou } from './pfsApi.ts'
import type { ServiceMessages } from './serviceMessages.ts'
import type { Gossip, GossipView } from './gossip.ts'
import type { Signer } from './signer.ts'

export type Announcement = Extract<Effect, { type: 'announceCapacity' | 'announceFees' }>

/** raiden-services' error codes (exceptions.py) a node acts on: a new IOU session, a new price, no route. */
const IOU_EXPIRED_TOO_EARLY = 2103
const INSUFFICIENT_SERVICE_PAYMENT = 2104
const IOU_ALREADY_CLAIMED = 2105
const USE_THIS_IOU = 2106
const NO_ROUTE_FOUND = 2201
/** NoRouteFound's reasons (0070) that are about the source: what the service has not heard of us yet. */
const SOURCE_REASONS = new Set(['source_offline', 'no_channel_from_source', 'source_capacity'])
/** A service's deposit check: the UserDeposit must cover twice what the sender owes (raiden-services UDC_SECURITY_MARGIN_FACTOR_PFS). */
const DEPOSIT_MARGIN_FACTOR = 2n

export type PathfinderParameters = {
  config: Pick<
    ResolvedNodeConfig,
    | 'routingMode'
    | 'pathfindingServiceAddress'
    | 'pathfindingMaxPaths'
    | 'pathfindingMaxFee'
    | 'pathfindingIouTimeout'
    | 'pathfinding'
    | 'fetch'
    | 'deployment'
    | 'secp256k1'
  >
  chain: ChainReader
  /** The latest applied state: our channels, announced again at a start. */
  state: () => NodeState
  /** The chain's confirmed head as the node knows it: what a new IOU session's expiration counts from. */
  headBlock: () => bigint
  signer: Pick<Signer, 'signAnnouncement' | 'signIou' | 'signIouQuery'>
  serviceMessages: Pick<ServiceMessages, 'send' | 'cancel'>
  /** Our announcements to our partners, and what the node heard of others' (docs/decisions/0074). */
  gossip?: Pick<Gossip, 'passesOn' | 'ownLater' | 'view'>
  notify: (notice: PathfindingNotice) => void
  /** Aborted when the node stops: a request under way ends. */
  stopped: AbortSignal
  now?: () => number
}

/** Where a payment's routes come from: the service's (with its feedback token), the node's own graph, or nowhere. */
export type RoutesFound =
  | {
      source: 'service'
      url: string
      routes: Address[][]
      fees: bigint[]
      paths: Address[][]
      /** Each route's `address_metadata` as answered, unchecked (routeMetadata.ts checks it). */
      addressMetadata: unknown[]
      feedbackToken: string
    }
  /** Route locally; `reason` when the node would have asked a service but could not (said in the log). */
  | { source: 'local'; reason?: string }
  /** The service answered that there is no route (NoRouteFound): the payment fails with its reason, as Raiden's does. */
  | { source: 'none'; reason: string }

/** What GET /settings shows of pathfinding. */
export type PathfindingView = {
  routingMode: ResolvedNodeConfig['routingMode']
  /** As configured: a URL, `auto`, or undefined (none). */
  serviceAddress: string | undefined
  /** The service in use, once chosen. */
  service: { url: string; address: Address; price: bigint } | undefined
  /** Why none can be used now (the node routes locally meanwhile), and since when (unix ms). */
  unavailable: { reason: string; since: number } | undefined
  announcements: { waiting: number; acknowledged: number }
  /** What the node heard from its partners and holds (its own included), and sent them (docs/decisions/0074). */
  heard: GossipView | undefined
}

const describe = (error: unknown) =>
  withCode<PathfindingServiceError>(error, 'PATHFINDING_SERVICE')?.shortMessage ?? (error instanceof Error ? error.message.split('\n')[0]! : String(error))

/** A PFSFeeUpdate's timestamp: Python's naive ISO-8601 in UTC with microseconds (`2026-11-29T14:03:07.123000`). */
export function feeTimestamp(micros: number): string {
  const date = new Date(Math.floor(micros / 1000))
  return `${date.toISOString().slice(0, 19)}.${String(micros % 1_000_000).padStart(6, '0')}`
}

/**
 * The node's side of a pathfinding service (docs/decisions/0073), as Raiden's (raiden/network/pathfinding.py,
 * routing.py, services.py) and its light client's (raiden-ts services/epics): which service (a URL, or `auto`: one of
 * the ServiceRegistry's whose price is within `pathfindingMaxFee`, Raiden's get_random_pfs), the announcements of our
 * channels to it (signed, sent through delivery to its address, resent until it acknowledges them), the routes it
 * answers for a payment, paid by an IOU (the last it holds raised by its price, Raiden's create_current_iou; one
 * request at a time, as Raiden's iou_semaphore), and the feedback on each route. Every call to the service is bounded
 * (`pathfinding.timeoutMs`); one that fails makes payments route locally, said in the log, for `retryAfterMs`.
 */
export class Pathfinder {
  private chosen: (PfsInfo & { registered: boolean }) | undefined
  private choosing: Promise<PfsInfo | undefined> | undefined
  private problem: { reason: string; since: number } | undefined
  private downUntil = 0
  /** Announcements made before a service is chosen, the newest per channel and kind. */
  private readonly pending = new Map<string, Announcement>()
  /** Keys of the announcements on their way to the service (delivery resends them until it acknowledges). */
  private readonly sending = new Set<string>()
  private acknowledged = 0
  /** The last fee update's timestamp per channel (µs): a service takes only a later one. */
  private readonly feeStamps = new Map<string, number>()
  /** One IOU raise at a time per service: two at once would pay the same amount twice (Raiden's iou_semaphore). */
  private readonly iouTurns = new SerialByKey()
  private readonly now: () => number

  constructor(private readonly p: PathfinderParameters) {
    this.now = p.now ?? Date.now
  }

  /** Whether the node announces its channels: a service is named (or `auto`) and the node is not private. */
  get announces(): boolean {
    return this.p.config.routingMode !== 'private' && this.p.config.pathfindingServiceAddress !== undefined
  }

  /** Whether payments ask the service for routes (`pfs`). */
  get asks(): boolean {
    return this.p.config.routingMode === 'pfs' && this.p.config.pathfindingServiceAddress !== undefined
  }

  view(): PathfindingView {
    const { routingMode, pathfindingServiceAddress } = this.p.config
    return {
      routingMode,
      serviceAddress: pathfindingServiceAddress,
      service: this.chosen ? { url: this.chosen.url, address: this.chosen.paymentAddress, price: this.chosen.price } : undefined,
      unavailable: this.problem,
      announcements: { waiting: this.sending.size + this.pending.size, acknowledged: this.acknowledged },
      heard: this.p.gossip?.view(),
    }
  }

  private call(): PfsCall {
    return { fetch: this.p.config.fetch, timeoutMs: this.p.config.pathfinding.timeoutMs, signal: this.p.stopped }
  }

  /**
   * The service in use: the one chosen, or one chosen now; undefined while none can be (the reason said once), and
   * for `retryAfterMs` after that without asking again.
   */
  async service(): Promise<PfsInfo | undefined> {
    if (this.chosen) return this.chosen
    if (this.now() < this.downUntil || this.p.stopped.aborted) return undefined
    this.choosing ??= this.choose().finally(() => {
      this.choosing = undefined
    })
    return this.choosing
  }

  private async choose(): Promise<PfsInfo | undefined> {
    const configured = this.p.config.pathfindingServiceAddress
    if (configured === undefined) return undefined
    try {
      const chosen = configured === 'auto' ? await this.fromRegistry() : { ...this.checked(await pfsInfo(configured, this.call())), registered: false }
      const before = this.chosen?.paymentAddress
      this.chosen = chosen
      this.p.notify({
        type: 'pathfinding',
        what: 'chosen',
        url: chosen.url,
        address: chosen.paymentAddress,
        price: chosen.price,
        operator: chosen.operator,
        registered: chosen.registered,
      })
      this.answered(chosen.url)
      // A service told nothing yet (or another one before) hears of every channel now, as it is now.
      if (before === undefined || before.toLowerCase() !== chosen.paymentAddress.toLowerCase()) {
        this.pending.clear()
        this.announceAll()
      } else this.flush()
      return chosen
    } catch (error) {
      this.unavailable(configured === 'auto' ? undefined : configured, describe(error))
      return undefined
    }
  }

  /** A service of our chain and token network registry; one of another is a configuration mistake, never used. */
  private checked(info: PfsInfo): PfsInfo {
    const { deployment } = this.p.config
    if (info.chainId !== BigInt(deployment.chainId))
      throw new PathfindingServiceError('unusable', `${info.url} serves chain ${info.chainId}, not this node's ${deployment.chainId}`)
    if (info.tokenNetworkRegistry.toLowerCase() !== deployment.contracts.TokenNetworkRegistry.address.toLowerCase())
      throw new PathfindingServiceError('unusable', `${info.url} serves the token network registry ${info.tokenNetworkRegistry}, not this node's`)
    return info
  }

  /** Raiden's get_random_pfs: the registered services in random order, the first that answers for our chain within our price. */
  private async fromRegistry(): Promise<PfsInfo & { registered: boolean }> {
    const registered = await readRegisteredServices(this.p.chain, { serviceRegistry: this.p.config.deployment.contracts.ServiceRegistry.address })
    const candidates = registered.filter((s) => s.url !== '').sort(() => Math.random() - 0.5)
    const refused: string[] = []
    for (const service of candidates) {
      try {
        const info = this.checked(await pfsInfo(service.url.replace(/\/+$/, ''), this.call()))
        if (info.paymentAddress.toLowerCase() !== service.address.toLowerCase())
          throw new Error(`it is paid as ${info.paymentAddress}, registered as ${service.address}`)
        if (info.price > this.p.config.pathfindingMaxFee)
          throw new Error(`its price ${info.price} is above --pathfinding-max-fee ${this.p.config.pathfindingMaxFee}`)
        return { ...info, registered: true }
      } catch (error) {
        refused.push(`${service.url}: ${describe(error)}`)
      }
    }
    throw new PathfindingServiceError(
      'unusable',
      candidates.length === 0
        ? 'the ServiceRegistry lists no service with a URL'
        : `no service of the ServiceRegistry is a pathfinding service for this node (${refused.join('; ')})`,
    )
  }

  /** The service cannot be used now: said once (and again if the reason changes); payments route locally meanwhile. */
  private unavailable(url: string | undefined, reason: string): void {
    this.downUntil = this.now() + this.p.config.pathfinding.retryAfterMs
    if (this.problem?.reason !== reason) this.p.notify({ type: 'pathfinding', what: 'unavailable', url, reason })
    this.problem = { reason, since: this.problem?.since ?? this.now() }
  }

  private answered(url: string): void {
    if (!this.problem) return
    this.problem = undefined
    this.p.notify({ type: 'pathfinding', what: 'available', url })
  }

  // ---- announcements ----

  /**
   * The effect handler's: a channel's announcement, to our partners (unless private: signed with the gossip's next
   * batch, the newest of the channel's only), and to the service (or kept until one is chosen).
   */
  announce(effect: Announcement, to: { partners: boolean } = { partners: true }): void {
    if (to.partners && this.p.gossip?.passesOn) this.p.gossip.ownLater(`${effect.type}|${effect.channelKey}`, () => this.sign(effect))
    if (!this.announces) return
    const key = `pfs|${effect.type}|${effect.channelKey}`
    if (!this.chosen) {
      this.pending.set(key, effect)
      return
    }
    this.send(key, effect, this.chosen.paymentAddress)
  }

  /** Every channel of ours, announced to the service as it is now: at a start (nothing kept them), and to a service newly chosen. */
  announceAll(): void {
    if (!this.announces) return
    this.eachChannel((effect) => this.announce(effect, { partners: false }))
  }

  /** Every channel of ours, announced to our partners as it is now: at a start (they may have missed the last ones). */
  announceToPartners(): void {
    if (!this.p.gossip?.passesOn) return
    this.eachChannel((effect) => this.p.gossip!.ownLater(`${effect.type}|${effect.channelKey}`, () => this.sign(effect)))
  }

  private eachChannel(announce: (effect: Announcement) => void): void {
    const state = this.p.state()
    for (const [channelKey, channel] of Object.entries(state.channels)) {
      if (!announced(channel)) continue
      announce({ type: 'announceCapacity', channelKey, update: capacityUpdateOf(state, channel) })
      announce({ type: 'announceFees', channelKey, update: feeAnnouncementOf(state, channel) })
    }
  }

  private flush(): void {
    const service = this.chosen
    if (!service) return
    const waiting = [...this.pending]
    this.pending.clear()
    for (const [key, effect] of waiting) this.send(key, effect, service.paymentAddress)
  }

  /** Signs an announcement as this node (a fee update stamped now, later than the channel's last); undefined once the state is stale. */
  private sign(effect: Announcement): HeardUpdate | undefined {
    try {
      return effect.type === 'announceCapacity'
        ? this.p.signer.signAnnouncement(effect.update)
        : this.p.signer.signAnnouncement({ ...effect.update, timestamp: feeTimestamp(this.feeStamp(effect.channelKey)) })
    } catch {
      // A stale state signs nothing (docs/decisions/0029): the node halts.
      return undefined
    }
  }

  private send(key: string, effect: Announcement, to: Address, signed = this.sign(effect)): void {
    if (!signed) return
    this.sending.add(key)
    this.p.serviceMessages.send(key, to, signed, () => {
      this.sending.delete(key)
      this.acknowledged++
    })
  }

  /** Now in µs, later than the channel's last fee update: a service keeps only a fee update newer than the one it holds. */
  private feeStamp(channelKey: string): number {
    const last = this.feeStamps.get(channelKey) ?? 0
    const at = Math.max(this.now() * 1000, last + 1)
    this.feeStamps.set(channelKey, at)
    return at
  }

  /** Stops sending (the node stops): what is unacknowledged is announced again at the next start. */
  stop(): void {
    this.p.serviceMessages.cancel([...this.sending])
    this.sending.clear()
  }

  // ---- routes ----

  /**
   * Where a payment's routes come from (Raiden's get_best_routes, past its direct channel): in `pfs` mode the
   * service's routes for it, each from our channel with its first hop to the target with the fee the service
   * estimated; else, or while the service cannot answer, the node's own (`local`, with the reason said).
   */
  async routes(request: { tokenNetwork: Address; target: Address; amount: bigint; address: Address }): Promise<RoutesFound> {
    if (!this.asks) return { source: 'local' }
    const local = (reason: string): RoutesFound => {
      this.p.notify({ type: 'pathfinding', what: 'routedLocally', target: request.target, amount: request.amount, reason })
      return { source: 'local', reason }
    }
    // A service that failed is left alone for a while: the payment goes at once.
    if (this.problem && this.now() < this.downUntil) return local(`the pathfinding service is unavailable: ${this.problem.reason}`)
    const service = await this.service()
    if (!service) return local(`the pathfinding service is unavailable: ${this.problem?.reason ?? 'none chosen'}`)
    // Raiden's --pathfinding-max-fee: the most one route request may cost (in the service token).
    if (service.price > this.p.config.pathfindingMaxFee)
      return local(`the pathfinding service asks ${service.price} per route request, above --pathfinding-max-fee ${this.p.config.pathfindingMaxFee}`)
    let answer: PfsRoutes & { iou: SignedIou | undefined }
    try {
      answer = await this.iouTurns.run(service.paymentAddress.toLowerCase(), () => this.ask(service, request))
    } catch (error) {
      const failed = withCode<PathfindingServiceError>(error, 'PATHFINDING_SERVICE')
      if (failed?.reason === 'refused' && failed.errorCode === NO_ROUTE_FOUND) {
        this.answered(service.url)
        const why = (failed.errorDetails as { reason?: unknown } | undefined)?.reason
        // About us, the service is behind (our channel's announcements not there yet, our presence not seen): we know
        // our channels exactly, so our own routes are tried. About the others, it knows better than our deposits.
        if (typeof why === 'string' && SOURCE_REASONS.has(why)) return local(`the pathfinding service does not know this node's channels yet (${why})`)
        return { source: 'none', reason: `the pathfinding service found no route (${typeof why === 'string' ? why : failed.shortMessage})` }
      }
      // A service that fails to answer is asked again after a while; `auto` may pick another then.
      if (failed && failed.reason !== 'refused' && this.p.config.pathfindingServiceAddress === 'auto') this.chosen = undefined
      this.unavailable(service.url, describe(error))
      return local(`the pathfinding service did not give routes: ${describe(error)}`)
    }
    this.answered(service.url)
    const usable = this.usableRoutes(answer, request)
    this.p.notify({
      type: 'pathfinding',
      what: 'routes',
      url: service.url,
      target: request.target,
      amount: request.amount,
      routes: usable.map((u) => ({ route: u.route, fee: u.fee })),
      iou: answer.iou?.amount,
    })
    if (usable.length === 0) return { source: 'none', reason: 'the pathfinding service answered no route that starts with one of our open channels' }
    return {
      source: 'service',
      url: service.url,
      routes: usable.map((u) => u.route),
      fees: usable.map((u) => u.fee),
      paths: usable.map((u) => u.path),
      addressMetadata: usable.map((u) => u.addressMetadata),
      feedbackToken: answer.feedbackToken,
    }
  }

  /**
   * The answered routes a payment can take (Raiden's make_route_state, the light client's filterPaths): from us, over
   * an open channel of ours, to the target, no node twice. The hops after us, the fee, and the path as answered (for
   * its feedback).
   */
  private usableRoutes(answer: PfsRoutes, request: { tokenNetwork: Address; target: Address; address: Address }) {
    const state = this.p.state()
    const same = (a: Address | undefined, b: Address) => a !== undefined && a.toLowerCase() === b.toLowerCase()
    return answer.routes.flatMap(({ path, estimatedFee, addressMetadata }) => {
      const partner = path[1]
      const open = Object.values(state.channels).some((c) => c.state === 'opened' && same(c.tokenNetwork, request.tokenNetwork) && same(partner, c.partner))
      const simple = new Set(path.map((a) => a.toLowerCase())).size === path.length
      if (path.length < 2 || !same(path[0], request.address) || !same(path.at(-1), request.target) || !open || !simple) return []
      return [{ route: path.slice(1).map((a) => getAddress(a)), fee: estimatedFee, path, addressMetadata }]
    })
  }

  /**
   * One routes request, paid: Raiden's _query_paths. A refused IOU is answered as Raiden does, once: a session claimed
   * or expiring too early starts a new one, a price raised (within the limit) is paid, the service's own IOU is raised.
   */
  private async ask(
    service: PfsInfo,
    request: { tokenNetwork: Address; target: Address; amount: bigint; address: Address },
  ): Promise<PfsRoutes & { iou: SignedIou | undefined }> {
    let price = service.price
    let newSession = false
    for (let attempt = 1; ; attempt++) {
      const iou = price > 0n ? await this.iou(service, request, price, newSession) : undefined
      try {
        const routes = await pfsPaths(
          service.url,
          request.tokenNetwork,
          { from: request.address, to: request.target, value: request.amount, maxPaths: this.p.config.pathfindingMaxPaths, iou },
          this.call(),
        )
        return { ...routes, iou }
      } catch (error) {
        const refused = withCode<PathfindingServiceError>(error, 'PATHFINDING_SERVICE')
        if (attempt >= 2 || refused?.reason !== 'refused') throw error
        if (refused.errorCode === IOU_ALREADY_CLAIMED || refused.errorCode === IOU_EXPIRED_TOO_EARLY) newSession = true
        else if (refused.errorCode === INSUFFICIENT_SERVICE_PAYMENT) {
          const info = await pfsInfo(service.url, this.call())
          if (info.price > this.p.config.pathfindingMaxFee)
            throw new PathfindingServiceError('unusable', `its price rose to ${info.price}, above --pathfinding-max-fee ${this.p.config.pathfindingMaxFee}`)
          price = info.price
          if (this.chosen) this.chosen = { ...this.chosen, price }
        } else if (refused.errorCode !== USE_THIS_IOU) throw error
      }
    }
  }

  /**
   * Our next IOU to the service: the last one it holds for us, checked to be ours, raised by its price; or a new session
   * expiring `pathfindingIouTimeout` blocks ahead. The UserDeposit must cover twice what we then owe, as the service
   * checks: without it the request would be refused, and the node routes locally saying why.
   */
  private async iou(service: PfsInfo, request: { tokenNetwork: Address; address: Address }, price: bigint, newSession: boolean): Promise<SignedIou> {
    const sender = request.address
    const receiver = service.paymentAddress
    const { deployment, pathfindingIouTimeout, secp256k1 } = this.p.config
    const oneToN = deployment.contracts.OneToN.address
    const chainId = BigInt(deployment.chainId)
    let last: SignedIou | undefined
    if (!newSession) {
      // Raiden signs the query's timestamp in whole seconds (isoformat(timespec="seconds")).
      const timestamp = new Date(this.now()).toISOString().slice(0, 19)
      const signature = this.p.signer.signIouQuery(sender, receiver, timestamp)
      last = await pfsLastIou(service.url, request.tokenNetwork, { sender, receiver, timestamp, signature }, this.call())
      if (last) {
        let signer: Address | undefined
        try {
          signer = recoverPackedSignerSync(secp256k1, packIou(last), last.signature)
        } catch {
          signer = undefined
        }
        const why = whyNotOurIou(last, { sender, receiver, oneToN, chainId, signer })
        if (why) throw new PathfindingServiceError('malformed', `the service's last IOU of ours cannot be raised: ${why}`)
      }
    }
    const iou = nextIou(last, { sender, receiver, oneToN, chainId, price, block: this.p.headBlock(), timeout: pathfindingIouTimeout })
    const { effectiveBalance } = await readUserDeposit(this.p.chain, { userDeposit: deployment.contracts.UserDeposit.address })
    if (effectiveBalance < iou.amount * DEPOSIT_MARGIN_FACTOR)
      throw new PathfindingServiceError(
        'unusable',
        `the UserDeposit's effective balance ${effectiveBalance} does not cover twice the ${iou.amount} the IOU would owe the service`,
      )
    return this.p.signer.signIou(iou)
  }

  /** Tells the service whether one of its routes carried the payment (Raiden's post_pfs_feedback); a failure is only reported. */
  async feedback(url: string, tokenNetwork: Address, feedback: { token: string; path: Address[]; success: boolean }): Promise<void> {
    await pfsFeedback(url, tokenNetwork, feedback, this.call())
  }
}
