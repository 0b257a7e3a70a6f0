import fc from 'fast-check'
import { expect, test } from 'vitest'
import { MinHeap } from '../../../src/pathfinding/minHeap.ts'
import { PathSearch, shortestSimplePaths, type SearchGraph } from '../../../src/pathfinding/simplePaths.ts'

type Edge = { from: number; to: number; weight: number }

/** A graph of `n` nodes and these edges (at most one per ordered pair), in the shape the search takes. */
function graphOf(n: number, edges: Edge[]): SearchGraph {
  const out: number[][] = Array.from({ length: n }, () => [])
  const into: number[][] = Array.from({ length: n }, () => [])
  edges.forEach((e, id) => {
    out[e.from]!.push(id)
    into[e.to]!.push(id)
  })
  return {
    nodeCount: n,
    forEachEdge(node, backward, visit) {
      for (const id of (backward ? into : out)[node]!) visit(id, backward ? edges[id]!.from : edges[id]!.to)
    },
    weight: (id) => edges[id]!.weight,
  }
}

/** Every simple path from s to t, by brute force, with its weight. */
function allSimplePaths(n: number, edges: Edge[], s: number, t: number, ignoredNodes = new Set<number>(), ignoredEdges = new Set<number>()) {
  const paths: { nodes: number[]; weight: number }[] = []
  const walk = (nodes: number[], weight: number) => {
    const at = nodes.at(-1)!
    if (at === t) return void paths.push({ nodes, weight })
    edges.forEach((e, id) => {
      if (e.from !== at || nodes.includes(e.to) || ignoredNodes.has(e.to) || ignoredEdges.has(id)) return
      walk([...nodes, e.to], weight + e.weight)
    })
  }
  if (s < n) walk([s], 0)
  return paths
}

const graphs = fc.integer({ min: 2, max: 7 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    edges: fc
      .uniqueArray(fc.tuple(fc.nat(n - 1), fc.nat(n - 1), fc.integer({ min: 0, max: 6 })), {
        maxLength: n * (n - 1),
        selector: ([from, to]) => `${from}-${to}`,
      })
      .map((list) => list.filter(([from, to]) => from !== to).map(([from, to, weight]) => ({ from, to, weight }))),
    source: fc.nat(n - 1),
    target: fc.nat(n - 1),
  }),
)

test('property: Yen yields every simple path once, lightest first, each with its true weight (as brute force finds them)', () => {
  fc.assert(
    fc.property(graphs, ({ n, edges, source, target }) => {
      fc.pre(source !== target)
      const graph = graphOf(n, edges)
      const yielded = [...shortestSimplePaths(new PathSearch(graph), graph, source, target)]
      const expected = allSimplePaths(n, edges, source, target)
      expect(yielded.map((p) => p.nodes.join(',')).sort()).toEqual(expected.map((p) => p.nodes.join(',')).sort())
      for (const [i, path] of yielded.entries()) {
        expect(path.weight).toBe(path.edges.reduce((sum, id) => sum + edges[id]!.weight, 0))
        expect(path.edges.map((id) => [edges[id]!.from, edges[id]!.to])).toEqual(path.nodes.slice(1).map((to, k) => [path.nodes[k], to]))
        if (i > 0) expect(path.weight).toBeGreaterThanOrEqual(yielded[i - 1]!.weight)
      }
    }),
    { numRuns: 300 },
  )
})

test('property: the bidirectional search finds the lightest path, around the nodes and edges it is told to leave out', () => {
  fc.assert(
    fc.property(graphs, fc.array(fc.nat(6)), fc.array(fc.nat(41)), ({ n, edges, source, target }, leftOutNodes, leftOutEdges) => {
      const ignoredNodes = new Set(leftOutNodes.filter((node) => node < n && node !== source && node !== target))
      const ignoredEdges = new Set(leftOutEdges.filter((id) => id < edges.length))
      const search = new PathSearch(graphOf(n, edges))
      // The same search object, used again: what one search leaves behind must not leak into the next.
      search.shortest(target, source)
      const found = search.shortest(source, target, [...ignoredNodes], ignoredEdges)
      const lightest = Math.min(...allSimplePaths(n, edges, source, target, ignoredNodes, ignoredEdges).map((p) => p.weight))
      if (found === undefined) expect(lightest).toBe(Number.POSITIVE_INFINITY)
      else {
        expect(found.weight).toBe(lightest)
        expect(found.nodes.some((node) => ignoredNodes.has(node))).toBe(false)
        expect(found.edges.some((id) => ignoredEdges.has(id))).toBe(false)
      }
    }),
    { numRuns: 500 },
  )
})

test('the heap gives its entries back smallest first, however many it grew to hold', () => {
  const heap = new MinHeap()
  const keys = Array.from({ length: 500 }, (_, i) => (i * 7919) % 503)
  keys.forEach((key, i) => heap.push(key, i))
  const popped: number[] = []
  while (heap.size > 0) {
    const key = heap.peekKey()
    popped.push(key)
    expect(keys[heap.pop()]).toBe(key)
  }
  expect(popped).toEqual([...keys].sort((x, y) => x - y))
})
