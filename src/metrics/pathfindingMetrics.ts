import type { PathfindingService } from '../pathfinding/service/service.ts'
import type { Metrics } from './registry.ts'

/**
 * `sluice pathfinding`: its route requests by outcome and their feedback, the IOUs it holds and claimed, the updates
 * it took, and what it knows of the network, read from its status when scraped (one status a scrape).
 */
export function observePathfinding(metrics: Metrics, service: Pick<PathfindingService, 'status'>): void {
  // On PostgreSQL (several instances, docs/decisions/0077): whether this one leads, i.e. holds the service's lease.
  if (service.status().instance) metrics.leaseHolder('pathfinding', () => service.status().instance?.leading === true)
  // One scrape reads the status once: every metric below runs its collect in the same scrape.
  let cached: { at: number; status: ReturnType<PathfindingService['status']> } | undefined
  const status = () => {
    const now = Date.now()
    if (!cached || now - cached.at > 100) cached = { at: now, status: service.status() }
    return cached.status
  }
  metrics.counter(
    'pathfinding_route_requests_total',
    'routes requests since start, by outcome: answered, no_route, refused (a bad request or IOU)',
    ['outcome'],
    function collect() {
      const { answered, noRoute, refused } = status().routes
      this.reset()
      this.inc({ outcome: 'answered' }, answered)
      this.inc({ outcome: 'no_route' }, noRoute)
      this.inc({ outcome: 'refused' }, refused)
    },
  )
  metrics.counter('pathfinding_feedback_total', "nodes' feedback on the routes answered, by outcome: success, failure", ['outcome'], function collect() {
    const { success, failure } = status().routes.feedback
    this.reset()
    this.inc({ outcome: 'success' }, success)
    this.inc({ outcome: 'failure' }, failure)
  })
  metrics.gauge('pathfinding_ious', 'IOU sessions held, by status (held, claiming, claimed...)', ['status'], function collect() {
    const { claimedAmount: _, ...byStatus } = status().ious
    for (const [key, n] of Object.entries(byStatus)) this.set({ status: key }, n)
  })
  metrics.gauge('pathfinding_ious_claimed_amount', 'service tokens (smallest unit) the claimed IOUs paid, as a float', [], function collect() {
    this.set(Number(status().ious.claimedAmount))
  })
  metrics.counter(
    'pathfinding_updates_total',
    'capacity and fee updates since start, by outcome: accepted, resent, refused_<reason>',
    ['outcome'],
    function collect() {
      const { accepted, resent, refused } = status().updates
      this.reset()
      this.inc({ outcome: 'accepted' }, accepted)
      this.inc({ outcome: 'resent' }, resent)
      for (const [reason, n] of Object.entries(refused)) if (n) this.inc({ outcome: `refused_${reason}` }, n)
    },
  )
  metrics.gauge('pathfinding_channels', 'channels it knows, in every token network', [], function collect() {
    this.set(status().network.channels)
  })
  metrics.gauge('pathfinding_nodes_online', 'nodes of its channels a relay says are online', [], function collect() {
    this.set(status().network.nodesOnline)
  })
}
