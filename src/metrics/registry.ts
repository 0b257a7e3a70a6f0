import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { version } from '../version.ts'

// A process's Prometheus metrics (docs/decisions/0078-prometheus-metrics.md). Node only: nothing here may reach the
// page's worker (test/unit/metrics/browserSafe.test.ts).

/** Every metric of ours starts with it; prom-client's process metrics keep their standard names. */
export const PREFIX = 'sluice_'

/** Seconds, for payments and duties that take from a few milliseconds to minutes (a lock's time). */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300] as const

export type MetricsParameters = {
  /** The command that serves them (`serve`, `relay`...), as the `sluice_info` gauge's label. */
  command: string
  /** prom-client's process metrics (CPU, memory, event loop lag, GC): on unless false (tests of our own metrics). */
  processMetrics?: boolean
}

/**
 * One process's metrics, on a Registry of its own (never prom-client's global one, so that tests run several in one
 * process, and nothing a library registers globally is exported unasked). The parts of a command add theirs with
 * `counter`, `gauge` and `histogram`; a value that exists elsewhere already (a store's count, a status) is read when
 * scraped, with `collect`, rather than kept twice.
 */
export class Metrics {
  readonly registry = new Registry()
  private readonly leases = new Map<string, () => boolean>()

  constructor({ command, processMetrics = true }: MetricsParameters) {
    if (processMetrics) collectDefaultMetrics({ register: this.registry })
    this.gauge('info', 'the Sluice version and the command this process runs (always 1)', ['version', 'command']).set({ version, command }, 1)
    const leases = this.leases
    this.gauge('lease_held', 'whether this instance holds the named lease (1) or not (0): the hot standby of a hub', ['lease'], function collect() {
      this.reset()
      for (const [lease, held] of leases) {
        let value = 0
        try {
          value = held() ? 1 : 0
        } catch {
          // A lease that cannot say is not held as far as anyone may rely on.
        }
        this.set({ lease }, value)
      }
    })
  }

  /**
   * `sluice_<name>`: a counter; by convention its name ends in `_total`. With `collect`, it is set when scraped from a
   * count kept elsewhere (one that only grows): `this.reset()`, then `this.inc(labels, n)`.
   */
  counter<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: (this: Counter<L>) => void | Promise<void>,
  ): Counter<L> {
    return new Counter({ name: PREFIX + name, help, labelNames, registers: [this.registry], ...(collect ? { collect } : {}) })
  }

  /** `sluice_<name>`: a gauge, read when scraped when `collect` is given (it sets the gauge from where the value lives). */
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], collect?: (this: Gauge<L>) => void | Promise<void>): Gauge<L> {
    return new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry], ...(collect ? { collect } : {}) })
  }

  /** `sluice_<name>`: a histogram of seconds (LATENCY_BUCKETS unless `buckets`); by convention its name ends in `_seconds`. */
  histogram<L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], buckets: readonly number[] = LATENCY_BUCKETS): Histogram<L> {
    return new Histogram({ name: PREFIX + name, help, labelNames, buckets: [...buckets], registers: [this.registry] })
  }

  /**
   * Exports whether this instance holds the lease `name` as `sluice_lease_held{lease="<name>"}` (1 or 0), asking `held`
   * at each scrape: the one line a leased service (a hub's hot standby) needs. Returns the function that removes it.
   */
  leaseHolder(name: string, held: () => boolean): () => void {
    this.leases.set(name, held)
    return () => {
      if (this.leases.get(name) === held) this.leases.delete(name)
    }
  }

  /** The text exposition format (version 0.0.4), as `GET /metrics` answers it. */
  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}
