import type { Relay } from '../transport/libp2p/relay.ts'
import type { Metrics } from './registry.ts'

/**
 * `sluice relay`: its connections, reservations (and their limit, for an alert near it), circuits, presence registry
 * and what its limits refused, all read from the relay's own counts when scraped.
 */
export function observeRelay(metrics: Metrics, relay: Pick<Relay, 'stats' | 'circuits' | 'presence'>, { maxReservations }: { maxReservations: number }): void {
  metrics.gauge('relay_connections', 'connections open now, handshakes included', [], function collect() {
    this.set(relay.stats().connections)
  })
  metrics.gauge('relay_reservations', 'peers holding a reservation now', [], function collect() {
    this.set(relay.stats().reservations)
  })
  metrics.gauge('relay_reservations_limit', 'how many peers may hold a reservation at once (--max-reservations)').set(maxReservations)
  metrics.gauge('relay_circuits', 'relayed connections going through the relay now', [], function collect() {
    this.set(relay.circuits())
  })
  metrics.gauge('relay_presence_records', "nodes' presence records the registry keeps", [], function collect() {
    this.set(relay.presence().records)
  })
  metrics.gauge('relay_presence_watches', 'watches of addresses in the presence registry', [], function collect() {
    this.set(relay.presence().watches)
  })
  // The relay counts its drops itself (they only grow): the counter is set from them at each scrape.
  metrics.counter('relay_drops_total', 'what the limits refused, dropped or held back since start, by reason', ['reason'], function collect() {
    this.reset()
    for (const [reason, n] of Object.entries(relay.stats().drops)) if (n > 0) this.inc({ reason }, n)
  })
}
