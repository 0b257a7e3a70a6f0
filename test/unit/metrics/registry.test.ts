import { describe, expect, test } from 'vitest'
import { Metrics } from '../../../src/metrics/registry.ts'
import { metricsFetch } from '../../../src/metrics/server.ts'
import { version } from '../../../src/version.ts'
import { parsePrometheusText, sampleValue } from '../../support/prometheusText.ts'

const read = async (metrics: Metrics) => parsePrometheusText(await metrics.text())

describe('Metrics', () => {
  test('two in one process keep their own registries: the same names, their own values', async () => {
    const a = new Metrics({ command: 'relay', processMetrics: false })
    const b = new Metrics({ command: 'monitor', processMetrics: false })
    const sentA = a.counter('payments_sent_total', 'payments sent', ['outcome'])
    const sentB = b.counter('payments_sent_total', 'payments sent', ['outcome'])
    sentA.inc({ outcome: 'success' }, 3)
    sentB.inc({ outcome: 'failure' })
    const [ta, tb] = [await read(a), await read(b)]
    expect(sampleValue(ta, 'sluice_payments_sent_total', { outcome: 'success' })).toBe(3)
    expect(sampleValue(ta, 'sluice_payments_sent_total', { outcome: 'failure' })).toBeUndefined()
    expect(sampleValue(tb, 'sluice_payments_sent_total', { outcome: 'failure' })).toBe(1)
    expect(sampleValue(ta, 'sluice_info', { command: 'relay', version })).toBe(1)
    expect(sampleValue(tb, 'sluice_info', { command: 'monitor', version })).toBe(1)
    expect(ta.get('sluice_payments_sent_total')).toMatchObject({ type: 'counter', help: 'payments sent' })
  })

  test('the process metrics are there unless turned off, under their standard names', async () => {
    const on = await read(new Metrics({ command: 'serve' }))
    expect(sampleValue(on, 'process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(on.get('process_cpu_seconds_total')?.type).toBe('counter')
    expect(on.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge')
    expect(on.get('nodejs_heap_size_used_bytes')?.samples[0]?.value).toBeGreaterThan(0)
    const off = await read(new Metrics({ command: 'serve', processMetrics: false }))
    expect([...off.keys()].filter((name) => !name.startsWith('sluice_'))).toEqual([])
  })

  test('a gauge with collect reads its value when scraped, not before', async () => {
    const metrics = new Metrics({ command: 'backup-server', processMetrics: false })
    let held = 2
    metrics.gauge('backup_copies', 'copies', [], function collect() {
      this.set(held)
    })
    expect(sampleValue(await read(metrics), 'sluice_backup_copies')).toBe(2)
    held = 5
    expect(sampleValue(await read(metrics), 'sluice_backup_copies')).toBe(5)
  })

  test('a histogram counts its observations in buckets of seconds', async () => {
    const metrics = new Metrics({ command: 'serve', processMetrics: false })
    const latency = metrics.histogram('payment_sent_seconds', 'latency')
    latency.observe(0.02)
    latency.observe(3)
    const text = await read(metrics)
    expect(sampleValue(text, 'sluice_payment_sent_seconds_count')).toBe(2)
    expect(sampleValue(text, 'sluice_payment_sent_seconds_sum')).toBeCloseTo(3.02)
    expect(sampleValue(text, 'sluice_payment_sent_seconds_bucket', { le: '0.025' })).toBe(1)
    expect(sampleValue(text, 'sluice_payment_sent_seconds_bucket', { le: '+Inf' })).toBe(2)
  })

  test('leaseHolder: sluice_lease_held says 1 or 0 as the function answers at each scrape; removed, it is gone', async () => {
    const metrics = new Metrics({ command: 'serve', processMetrics: false })
    expect((await read(metrics)).get('sluice_lease_held')?.samples).toEqual([])
    let holds = true
    const remove = metrics.leaseHolder('hub', () => holds)
    metrics.leaseHolder('broken', () => {
      throw new Error('the database is gone')
    })
    let text = await read(metrics)
    expect(sampleValue(text, 'sluice_lease_held', { lease: 'hub' })).toBe(1)
    // A lease that cannot answer is not held as far as anyone may rely on.
    expect(sampleValue(text, 'sluice_lease_held', { lease: 'broken' })).toBe(0)
    holds = false
    expect(sampleValue(await read(metrics), 'sluice_lease_held', { lease: 'hub' })).toBe(0)
    remove()
    text = await read(metrics)
    expect(sampleValue(text, 'sluice_lease_held', { lease: 'hub' })).toBeUndefined()
    expect(sampleValue(text, 'sluice_lease_held', { lease: 'broken' })).toBe(0)
  })
})

describe('metricsFetch', () => {
  const metrics = new Metrics({ command: 'relay', processMetrics: false })
  const fetch = metricsFetch(metrics)

  test('GET /metrics answers the text format; HEAD the same without a body', async () => {
    const response = await fetch(new Request('http://127.0.0.1:9100/metrics'))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(sampleValue(parsePrometheusText(await response.text()), 'sluice_info', { command: 'relay' })).toBe(1)
    const head = await fetch(new Request('http://127.0.0.1:9100/metrics', { method: 'HEAD' }))
    expect([head.status, await head.text()]).toEqual([200, ''])
  })

  test.each([
    ['GET', '/', 404],
    ['GET', '/metrics/x', 404],
    ['POST', '/metrics', 405],
    ['DELETE', '/metrics', 405],
  ])('%s %s: %i', async (method, path, status) => {
    expect((await fetch(new Request(`http://127.0.0.1:9100${path}`, { method }))).status).toBe(status)
  })

  test('a collect that throws answers 500 with why, and the next scrape works again', async () => {
    const failing = new Metrics({ command: 'relay', processMetrics: false })
    let fail = true
    failing.gauge('x', 'x', [], function collect() {
      if (fail) throw new Error('the store is closed')
      this.set(1)
    })
    const answer = await metricsFetch(failing)(new Request('http://127.0.0.1:9100/metrics'))
    expect([answer.status, await answer.text()]).toEqual([500, 'collecting the metrics failed: the store is closed\n'])
    fail = false
    expect((await metricsFetch(failing)(new Request('http://127.0.0.1:9100/metrics'))).status).toBe(200)
  })
})

describe("parsePrometheusText (the tests' reader) refuses what Prometheus refuses", () => {
  test.each([
    ['no newline at the end', '# TYPE a counter\na 1'],
    ['a sample of no family', 'b 1\n'],
    ['a bad value', '# TYPE a gauge\na one\n'],
    ['a label unquoted', '# TYPE a gauge\na{x=1} 1\n'],
    ['a label twice', '# TYPE a gauge\na{x="1",x="2"} 1\n'],
    ['a bad type', '# TYPE a meter\n'],
  ])('%s', (_, text) => {
    expect(() => parsePrometheusText(text)).toThrow()
  })
})
