import { MinHeap } from './minHeap.ts'

/**
 * Shortest simple paths in a weighted directed graph of numbered nodes and edges, shortest first: Yen's algorithm over
 * a bidirectional Dijkstra, as networkx's `shortest_simple_paths`, which raiden-services searches with
 * (docs/decisions/0070). Generic: the graph says which edges it has and what they weigh; paths.ts gives it Raiden's.
 */

export type SearchGraph = {
  nodeCount: number
  /**
   * Calls `visit` for each edge out of `node` (with `backward`, each edge into it), with the node at its other end.
   * An edge the search must not use is simply not visited.
   */
  forEachEdge(node: number, backward: boolean, visit: (edge: number, other: number) => void): void
  /** The edge's weight: finite and not negative. */
  weight(edge: number): number
}

export type GraphPath = { nodes: number[]; edges: number[]; weight: number }

const NO_EDGES: ReadonlySet<number> = new Set()

/**
 * Bidirectional Dijkstra with nodes and edges left out, reusing its arrays from one search to the next (a request
 * runs dozens): a number stamped per node says whether its entry belongs to the current search.
 */
export class PathSearch {
  private stamp = 0
  private readonly ignored: Uint32Array
  private readonly seen: [Uint32Array, Uint32Array]
  private readonly done: [Uint32Array, Uint32Array]
  private readonly dist: [Float64Array, Float64Array]
  private readonly viaNode: [Int32Array, Int32Array]
  private readonly viaEdge: [Int32Array, Int32Array]
  private readonly heaps: [MinHeap, MinHeap] = [new MinHeap(), new MinHeap()]
  // The search under way, as fields: the edge visitor reads them without a closure per node.
  private ignoredEdges: ReadonlySet<number> = NO_EDGES
  private best = 0
  private meet = -1
  private side: 0 | 1 = 0
  private from = 0

  /** Relaxes one edge of the node being settled: a lighter way to `w` from this side, and perhaps a lighter meeting. */
  private readonly relax = (edge: number, w: number): void => {
    const { side, stamp } = this
    if (this.ignored[w] === stamp || this.done[side][w] === stamp || this.ignoredEdges.has(edge)) return
    const sideDist = this.dist[side]
    const length = sideDist[this.from]! + this.graph.weight(edge)
    if (this.seen[side][w] === stamp && length >= sideDist[w]!) return
    this.seen[side][w] = stamp
    sideDist[w] = length
    this.viaNode[side][w] = this.from
    this.viaEdge[side][w] = edge
    this.heaps[side].push(length, w)
    const other = 1 - side
    if (this.seen[other]![w] === stamp) {
      const total = length + this.dist[other]![w]!
      if (total < this.best) {
        this.best = total
        this.meet = w
      }
    }
  }

  constructor(private readonly graph: SearchGraph) {
    const n = graph.nodeCount
    this.ignored = new Uint32Array(n)
    this.seen = [new Uint32Array(n), new Uint32Array(n)]
    this.done = [new Uint32Array(n), new Uint32Array(n)]
    this.dist = [new Float64Array(n), new Float64Array(n)]
    this.viaNode = [new Int32Array(n), new Int32Array(n)]
    this.viaEdge = [new Int32Array(n), new Int32Array(n)]
  }

  /**
   * The lightest path from `source` to `target` through none of `ignoredNodes` and none of `ignoredEdges`, or
   * undefined. Both ends grow a Dijkstra tree in turn, and the lightest meeting of the two found so far is the answer
   * once the two trees' next nodes are together no closer (networkx waits for a node settled from both sides, which
   * comes later: on a network with hubs this stops after half the work, for the same paths).
   */
  shortest(source: number, target: number, ignoredNodes: readonly number[] = [], ignoredEdges: ReadonlySet<number> = NO_EDGES): GraphPath | undefined {
    if (source === target) return { nodes: [source], edges: [], weight: 0 }
    const stamp = ++this.stamp
    const { ignored, seen, done, dist, viaNode, viaEdge, heaps } = this
    for (const node of ignoredNodes) ignored[node] = stamp
    for (const [side, node] of [
      [0, source],
      [1, target],
    ] as const) {
      seen[side][node] = stamp
      dist[side][node] = 0
      viaNode[side][node] = -1
      heaps[side].clear()
      heaps[side].push(0, node)
    }
    this.ignoredEdges = ignoredEdges
    this.best = Number.POSITIVE_INFINITY
    this.meet = -1
    let side: 0 | 1 = 1
    while (heaps[0].size > 0 && heaps[1].size > 0) {
      // No path through what is left to settle can be lighter than the best meeting found.
      if (heaps[0].peekKey() + heaps[1].peekKey() >= this.best) break
      side = side === 0 ? 1 : 0
      const v = heaps[side].pop()
      if (done[side][v] === stamp) continue
      done[side][v] = stamp
      if (done[1 - side]![v] === stamp) break
      this.side = side
      this.from = v
      this.graph.forEachEdge(v, side === 1, this.relax)
    }
    const meet = this.meet
    if (meet < 0) return undefined
    const nodes: number[] = []
    const edges: number[] = []
    for (let n = meet; viaNode[0][n] !== -1; n = viaNode[0][n]!) {
      nodes.push(n)
      edges.push(viaEdge[0][n]!)
    }
    nodes.push(source)
    nodes.reverse()
    edges.reverse()
    for (let n = meet; viaNode[1][n] !== -1; n = viaNode[1][n]!) {
      nodes.push(viaNode[1][n]!)
      edges.push(viaEdge[1][n]!)
    }
    return { nodes, edges, weight: this.best }
  }
}

/** The candidates of Yen's algorithm: lightest first (the earlier one of equal weights), each path once. */
class Candidates {
  private readonly list: { path: GraphPath; order: number }[] = []
  private readonly keys = new Set<string>()
  private order = 0

  push(path: GraphPath): void {
    const key = path.nodes.join(',')
    if (this.keys.has(key)) return
    this.keys.add(key)
    this.list.push({ path, order: this.order++ })
  }

  pop(): GraphPath | undefined {
    if (this.list.length === 0) return undefined
    let at = 0
    for (let i = 1; i < this.list.length; i++) {
      const [a, b] = [this.list[i]!, this.list[at]!]
      if (a.path.weight < b.path.weight || (a.path.weight === b.path.weight && a.order < b.order)) at = i
    }
    const { path } = this.list.splice(at, 1)[0]!
    this.keys.delete(path.nodes.join(','))
    return path
  }
}

/**
 * The simple paths from `source` to `target`, lightest first, one at a time (Yen): each next one is the lightest of
 * the detours from the paths found so far, a detour leaving the previous path at one of its nodes by an edge no path
 * with the same beginning took, and going on without coming back through that beginning. The graph's weights must
 * not change while it runs.
 */
export function* shortestSimplePaths(search: PathSearch, graph: SearchGraph, source: number, target: number): Generator<GraphPath, void, undefined> {
  const found: GraphPath[] = []
  const candidates = new Candidates()
  let previous: GraphPath | undefined
  for (;;) {
    if (!previous) {
      const first = search.shortest(source, target)
      if (first) candidates.push(first)
    } else {
      const rootNodes: number[] = []
      const ignoredEdges = new Set<number>()
      let rootWeight = 0
      for (let i = 1; i < previous.nodes.length; i++) {
        const spurNode = previous.nodes[i - 1]!
        for (const path of found) if (startsWith(path, previous, i)) ignoredEdges.add(path.edges[i - 1]!)
        const spur = search.shortest(spurNode, target, rootNodes, ignoredEdges)
        if (spur)
          candidates.push({
            nodes: [...rootNodes, ...spur.nodes],
            edges: [...previous.edges.slice(0, i - 1), ...spur.edges],
            weight: rootWeight + spur.weight,
          })
        rootNodes.push(spurNode)
        rootWeight += graph.weight(previous.edges[i - 1]!)
      }
    }
    const next = candidates.pop()
    if (!next) return
    yield next
    found.push(next)
    previous = next
  }
}

/** Whether `path` begins with the first `count` nodes of `prefix`. */
function startsWith(path: GraphPath, prefix: GraphPath, count: number): boolean {
  if (path.nodes.length <= count) return false
  for (let i = 0; i < count; i++) if (path.nodes[i] !== prefix.nodes[i]) return false
  return true
}
