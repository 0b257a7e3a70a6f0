import type { MonitoringService } from '../monitor/service.ts'
import type { Metrics } from './registry.ts'

type Kind = 'monitor' | 'claimReward'
/** A step under way: to send, being sent, or sent and not mined (src/monitor/records.ts). */
const UNDER_WAY = new Set(['due', 'sending', 'sent'])
/** The step's work is done: the monitor call mined (or seen with our address), the reward claimed. */
const DONE = new Set(['done', 'claimed'])

/**
 * `sluice monitor`: the requests it took or refused, the channels it watches, and its duties after a close (the
 * `monitor` call, then `claimReward`): those under way, by kind, and those done since start, all read from the store
 * and the intake's counts when scraped.
 */
export function observeMonitor(metrics: Metrics, service: Pick<MonitoringService, 'status' | 'channels'>): void {
  // On PostgreSQL (several instances, docs/decisions/0077): whether this one leads, i.e. holds the service's lease.
  if (service.status().instance) metrics.leaseHolder('monitor', () => service.status().instance?.leading === true)
  metrics.counter(
    'monitor_requests_total',
    'RequestMonitoring messages taken (accepted, resent) or refused (refused_<reason>)',
    ['outcome'],
    function collect() {
      const { accepted, resent, refused } = service.status().requests
      this.reset()
      this.inc({ outcome: 'accepted' }, accepted)
      this.inc({ outcome: 'resent' }, resent)
      for (const [reason, n] of Object.entries(refused)) if (n) this.inc({ outcome: `refused_${reason}` }, n)
    },
  )
  metrics.gauge('monitor_watched_channels', 'channels with a request held', [], function collect() {
    this.set(service.status().watching.channels)
  })
  metrics.gauge('monitor_requests_held', 'requests held (the newest of each channel and side)', [], function collect() {
    this.set(service.status().watching.requests)
  })
  const steps = () =>
    service.channels().flatMap((channel) =>
      Object.entries(channel.duties).flatMap(([requester, duty]) => {
        const id = `${channel.tokenNetwork.toLowerCase()}:${channel.channelId}:${requester}`
        const out: { id: string; kind: Kind; status: string }[] = [{ id, kind: 'monitor', status: duty.monitor.status }]
        if (duty.claim) out.push({ id, kind: 'claimReward', status: duty.claim.status })
        return out
      }),
    )
  metrics.gauge('monitor_duties_due', 'duties under way: due, being sent, or sent and not mined, by kind (monitor, claimReward)', ['kind'], function collect() {
    const due: Record<Kind, number> = { monitor: 0, claimReward: 0 }
    for (const step of steps()) if (UNDER_WAY.has(step.status)) due[step.kind]++
    for (const [kind, n] of Object.entries(due)) this.set({ kind }, n)
  })
  // Done since start: each step counted once, when a scrape first sees it done (the store forgets settled channels).
  const done = new Set<string>()
  const counts: Record<Kind, number> = { monitor: 0, claimReward: 0 }
  metrics.counter(
    'monitor_duties_done_total',
    'duties done, by kind: monitor calls mined (or seen on the chain with our address), rewards claimed',
    ['kind'],
    function collect() {
      for (const step of steps()) {
        const key = `${step.kind}|${step.id}`
        if (!DONE.has(step.status) || done.has(key)) continue
        done.add(key)
        counts[step.kind]++
      }
      this.reset()
      for (const [kind, n] of Object.entries(counts)) this.inc({ kind }, n)
    },
  )
}
