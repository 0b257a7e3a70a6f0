import type { Address } from 'viem'
import { pfsErrors } from './errorCodes.ts'
import type { TokenNetworkView } from './network.ts'
import { mediatorFees, type MediationChannels, type MediationFee } from './routeFees.ts'
import { PathSearch, shortestSimplePaths, type GraphPath, type SearchGraph } from './simplePaths.ts'

/**
 * Raiden's path search (raiden-services model/token_network.py `get_paths`, docs/decisions/0070): up to `maxPaths`
 * routes, each the lightest valid simple path once the edges of the routes found before weigh more. Pure: the
 * caller passes who is online, the fee model and the view.
 */

export const DEFAULT_MAX_PATHS = 5
export const MAX_PATHS_PER_REQUEST = 25
/** One channel used by a route found before weighs as much as this many more hops. */
export const DIVERSITY_PENALTY_DEFAULT = 5
/** A fee of the whole value weighs as much as this many more hops (1 % of it, one hop). */
export const FEE_PENALTY_DEFAULT = 100
/** How many new candidates, lightest first, one route's search judges before it stops. */
export const MAX_CANDIDATES = 30

export type PathRequest = {
  from: Address
  to: Address
  /** What the target is to receive (mediation fees come on top). */
  value: bigint
  maxPaths?: number
  diversityPenalty?: number
  feePenalty?: number
  /**
   * Blocks between the payment's start and its lock's expiration. Absent: twice the reveal timeout the source keeps
   * on its first channel, as a Raiden initiator and ours choose by default.
   */
  lockTimeout?: bigint
}

export type RouteContext = {
  /** Whether a node is online now (presence); a route goes through online nodes only, from an online source to an online target. */
  isOnline(address: Address): boolean
  mediationFee: MediationFee
  maxCandidates?: number
}

export type FoundPath = {
  /** From the source to the target. */
  path: Address[]
  /** What the mediators take in all: the source sends `value + estimatedFee`. */
  estimatedFee: bigint
  /** Each mediator's fee, in route order. */
  mediatorFees: bigint[]
}

/** Why no route is found, as raiden-services tells it apart (all with its NoRouteFound code, 2201). */
export type NoRouteReason =
  | 'source_offline'
  | 'target_offline'
  | 'no_channel_from_source'
  | 'no_channel_to_target'
  | 'source_capacity'
  | 'target_capacity'
  | 'not_connected'
  | 'no_usable_route'

export type PathsError =
  | { name: 'InvalidRequest'; code: typeof pfsErrors.InvalidRequest.code; message: string }
  | { name: 'NoRouteFound'; code: typeof pfsErrors.NoRouteFound.code; reason: NoRouteReason; message: string }

export type PathsResult = { ok: true; paths: FoundPath[] } | { ok: false; error: PathsError }

const invalid = (message: string): PathsResult => ({ ok: false, error: { name: 'InvalidRequest', code: pfsErrors.InvalidRequest.code, message } })
const noRoute = (reason: NoRouteReason, message: string): PathsResult => ({
  ok: false,
  error: { name: 'NoRouteFound', code: pfsErrors.NoRouteFound.code, reason, message },
})

/** What raiden-services' request schema refuses (and what would make weights negative, which it does not refuse). */
function whyInvalid(request: PathRequest, maxPaths: number, diversityPenalty: number, feePenalty: number): string | undefined {
  if (request.value < 1n) return 'value must be at least 1'
  if (!Number.isInteger(maxPaths) || maxPaths < 1 || maxPaths > MAX_PATHS_PER_REQUEST) return `max_paths must be from 1 to ${MAX_PATHS_PER_REQUEST}`
  if (!Number.isFinite(diversityPenalty) || diversityPenalty < 0) return 'diversity_penalty must be a number, not negative'
  if (!Number.isFinite(feePenalty) || feePenalty < 0) return 'fee_penalty must be a number, not negative'
  if (request.lockTimeout !== undefined && request.lockTimeout < 1n) return 'lock_timeout must be at least 1'
  if (request.from.toLowerCase() === request.to.toLowerCase()) return 'from and to are the same address'
  return undefined
}

/** Up to `maxPaths` routes for `request` in `view`, or why there is none. */
export function findPaths(view: TokenNetworkView, request: PathRequest, context: RouteContext): PathsResult {
  const maxPaths = request.maxPaths ?? DEFAULT_MAX_PATHS
  const diversityPenalty = request.diversityPenalty ?? DIVERSITY_PENALTY_DEFAULT
  const feePenalty = request.feePenalty ?? FEE_PENALTY_DEFAULT
  const why = whyInvalid(request, maxPaths, diversityPenalty, feePenalty)
  if (why) return invalid(why)
  const { value } = request

  // raiden-services' checks, in its order, so that a failure says why.
  if (!context.isOnline(request.from)) return noRoute('source_offline', 'Source not online')
  if (!context.isOnline(request.to)) return noRoute('target_offline', 'Target not online')
  const source = view.nodeOf.get(request.from.toLowerCase())
  const target = view.nodeOf.get(request.to.toLowerCase())
  const sourceOut = source === undefined ? [] : openDirections(view, source, 'out')
  const targetIn = target === undefined ? [] : openDirections(view, target, 'in')
  if (sourceOut.length === 0) return noRoute('no_channel_from_source', 'No channel from source')
  if (targetIn.length === 0) return noRoute('no_channel_to_target', 'No channel to target')
  const most = (capacities: bigint[]) => capacities.reduce((a, b) => (a > b ? a : b))
  if (most(sourceOut) < value)
    return noRoute('source_capacity', `Source does not have a channel with sufficient capacity (largest: ${most(sourceOut)} < requested amount: ${value})`)
  if (most(targetIn) < value)
    return noRoute('target_capacity', `Target does not have a channel with sufficient capacity (largest: ${most(targetIn)} < ${value})`)

  const graph = new RequestGraph(view, request, context, source!, target!, feePenalty)
  const search = new PathSearch(graph)
  const found: FoundPath[] = []
  const taken = new Set<string>()
  while (found.length < maxPaths) {
    let next: { route: FoundPath; path: GraphPath } | undefined
    let examined = 0
    for (const path of shortestSimplePaths(search, graph, source!, target!)) {
      // A route found before comes again at most once each: only new ones count against the bound.
      if (taken.has(path.nodes.join(','))) continue
      if (++examined > (context.maxCandidates ?? MAX_CANDIDATES)) break
      const route = graph.route(path)
      if (route) {
        next = { route, path }
        break
      }
    }
    if (!next) break
    found.push(next.route)
    taken.add(next.path.nodes.join(','))
    // The next route's search weighs these channels more: it takes others where it can.
    for (const edge of next.path.edges) graph.visited[edge >> 1]! += diversityPenalty
  }
  if (found.length > 0) return { ok: true, paths: found }
  return connected(view, source!, target!)
    ? noRoute('no_usable_route', 'No route between nodes found.')
    : noRoute('not_connected', 'No route from source to target')
}

/** The capacities of a node's open channels, towards its partners (`out`) or from them (`in`). */
function openDirections(view: TokenNetworkView, node: number, way: 'out' | 'in'): bigint[] {
  const capacities: bigint[] = []
  for (const slot of view.adjacency[node]!) {
    const s = view.slots[slot]!
    if (s.channel.closed) continue
    const at = s.ends[0] === node ? 0 : 1
    capacities.push(s.capacity[way === 'out' ? at : 1 - at]!)
  }
  return capacities
}

/** Whether open channels join the two nodes at all, whatever they carry and whoever is online. */
function connected(view: TokenNetworkView, source: number, target: number): boolean {
  const reached = new Uint8Array(view.addresses.length)
  const queue = [source]
  reached[source] = 1
  for (let i = 0; i < queue.length; i++) {
    for (const slot of view.adjacency[queue[i]!]!) {
      const s = view.slots[slot]!
      if (s.channel.closed) continue
      const other = s.ends[0] === queue[i] ? s.ends[1] : s.ends[0]
      if (other === target) return true
      if (!reached[other]) {
        reached[other] = 1
        queue.push(other)
      }
    }
  }
  return false
}

/**
 * The view as one request's search sees it. Directed edge `2 * slot + i` leaves participant i of the channel in
 * `slot`; it is there when the channel is open, both its nodes are online, it carries the value, and its reveal
 * timeouts and settle timeout leave room for a lock of the timeouts the request can have. Its weight is Raiden's:
 * 1, plus the diversity penalty of each route found before through its channel, plus the fee penalty times its fees
 * over the value, plus 1 when the way back could not carry a refund of 1.1 times the value. What is worked out for an
 * edge is kept for the whole request.
 */
class RequestGraph implements SearchGraph {
  readonly nodeCount: number
  /** Per slot: the diversity penalties of the routes found so far. */
  readonly visited: Float64Array
  private readonly usable: Uint8Array
  private readonly base: Float64Array
  private readonly online: Uint8Array
  private readonly shortestLock: bigint
  private readonly longestLock: bigint
  /** The value as a number, for weights. */
  private readonly amount: number
  /** What the way back must carry for a refund: 1.1 times the value. */
  private readonly refundable: bigint

  constructor(
    private readonly view: TokenNetworkView,
    private readonly request: PathRequest,
    private readonly context: RouteContext,
    private readonly source: number,
    private readonly target: number,
    private readonly feePenalty: number,
  ) {
    this.nodeCount = view.addresses.length
    this.amount = Number(request.value)
    this.refundable = (request.value * 11n) / 10n
    this.visited = new Float64Array(view.slots.length)
    this.usable = new Uint8Array(2 * view.slots.length)
    this.base = new Float64Array(2 * view.slots.length).fill(Number.NaN)
    this.online = new Uint8Array(view.addresses.length)
    // The lock timeouts a route can have: the one asked for, or twice the reveal timeout on one of the source's channels.
    const timeouts = request.lockTimeout !== undefined ? [request.lockTimeout] : this.firstHopLockTimeouts()
    this.shortestLock = timeouts.reduce((a, b) => (a < b ? a : b), timeouts[0] ?? 0n)
    this.longestLock = timeouts.reduce((a, b) => (a > b ? a : b), 0n)
  }

  private firstHopLockTimeouts(): bigint[] {
    return this.view.adjacency[this.source]!.map((slot) => {
      const s = this.view.slots[slot]!
      return 2n * s.revealTimeout[s.ends[0] === this.source ? 0 : 1]
    })
  }

  private isOnline(node: number): boolean {
    let known = this.online[node]!
    if (known === 0) {
      known = this.context.isOnline(this.view.addresses[node]!) ? 1 : 2
      this.online[node] = known
    }
    return known === 1
  }

  private isUsable(edge: number): boolean {
    let known = this.usable[edge]!
    if (known === 0) {
      const s = this.view.slots[edge >> 1]!
      const ok =
        !s.channel.closed &&
        s.capacity[edge & 1]! >= this.request.value &&
        this.isOnline(s.ends[0]) &&
        this.isOnline(s.ends[1]) &&
        // No lock fits a channel whose settle timeout is below the shortest, or a reveal timeout not below the longest.
        s.channel.settleTimeout >= this.shortestLock &&
        s.revealTimeout[0] < this.longestLock &&
        s.revealTimeout[1] < this.longestLock
      known = ok ? 1 : 2
      this.usable[edge] = known
    }
    return known === 1
  }

  forEachEdge(node: number, backward: boolean, visit: (edge: number, other: number) => void): void {
    const slots = this.view.slots
    for (const slot of this.view.adjacency[node]!) {
      const ends = slots[slot]!.ends
      const at = ends[0] === node ? 0 : 1
      const edge = 2 * slot + (backward ? 1 - at : at)
      if (this.isUsable(edge)) visit(edge, ends[1 - at]!)
    }
  }

  weight(edge: number): number {
    let base = this.base[edge]!
    if (Number.isNaN(base)) {
      base = this.baseWeight(edge)
      this.base[edge] = base
    }
    return base + this.visited[edge >> 1]!
  }

  /**
   * An edge's weight before diversity. Its fee part is the flat and proportional fees of the channel's two halves
   * (Raiden's estimate for one channel, without its imbalance part: that one, with every balance taken to be the
   * capacity, says little, and the fee model it needs costs tens of microseconds an edge). The source's and the
   * target's halves are left out: they mediate nothing on this payment. A route's fee is the model's, hop by hop.
   */
  private baseWeight(edge: number): number {
    const s = this.view.slots[edge >> 1]!
    const from = edge & 1
    const to = 1 - from
    let flat = 0
    let proportional = 0
    if (s.ends[from] !== this.source) {
      flat += s.flatFee[from]!
      proportional += s.proportionalFee[from]!
    }
    if (s.ends[to] !== this.target) {
      flat += s.flatFee[to]!
      proportional += s.proportionalFee[to]!
    }
    const feeWeight = this.feePenalty * (flat / this.amount + proportional / 1_000_000)
    const noRefund = s.capacity[to]! < this.refundable ? 1 : 0
    return 1 + feeWeight + noRefund
  }

  /**
   * The route a path found is, or undefined when it cannot carry the payment: a lock must fit every channel (more
   * blocks than each of its two reveal timeouts, no more than its settle timeout), every mediator's fee must be
   * computable, and every channel must carry the value with the fees of the mediators after it.
   */
  route(path: GraphPath): FoundPath | undefined {
    const slots = this.view.slots
    const { edges } = path
    const first = slots[edges[0]! >> 1]!
    const lockTimeout = this.request.lockTimeout ?? 2n * first.revealTimeout[edges[0]! & 1]!
    for (const edge of edges) {
      const s = slots[edge >> 1]!
      if (lockTimeout > s.channel.settleTimeout || s.revealTimeout[0] >= lockTimeout || s.revealTimeout[1] >= lockTimeout) return undefined
    }
    const mediators: MediationChannels[] = []
    for (let k = 1; k < edges.length; k++) {
      const [payer, payee] = [slots[edges[k - 1]! >> 1]!, slots[edges[k]! >> 1]!]
      const inAt = (1 - (edges[k - 1]! & 1)) as 0 | 1
      const outAt = (edges[k]! & 1) as 0 | 1
      mediators.push({
        payer: { schedule: payer.schedule[inAt], balance: payer.capacity[inAt], receivable: payer.capacity[1 - inAt]! },
        payee: { schedule: payee.schedule[outAt], balance: payee.capacity[outAt] },
      })
    }
    const fees = mediatorFees(mediators, this.request.value, this.context.mediationFee)
    if (!fees) return undefined
    // Channel k carries the value and the fees of the mediators after it (mediator m sits between channels m-1 and m).
    let carried = this.request.value
    for (let k = edges.length - 1; k >= 0; k--) {
      if (slots[edges[k]! >> 1]!.capacity[edges[k]! & 1]! < carried) return undefined
      if (k > 0) carried += fees[k - 1]!
    }
    return {
      path: path.nodes.map((node) => this.view.addresses[node]!),
      estimatedFee: fees.reduce((a, b) => a + b, 0n),
      mediatorFees: fees,
    }
  }
}
