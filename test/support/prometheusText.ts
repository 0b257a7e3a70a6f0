// A strict reader of Prometheus' text exposition format (version 0.0.4), for tests: prom-client has no parser, and
// a test that reads what Prometheus would read fails on what Prometheus would refuse.

export type Sample = { name: string; labels: Record<string, string>; value: number }
export type Family = { name: string; type: string; help: string; samples: Sample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`)
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
/** The suffixes a family's samples may add to its name. */
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] }

/** As Prometheus reads it (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(raw: string, line: string): number {
  if (/^\+?inf(inity)?$/i.test(raw)) return Number.POSITIVE_INFINITY
  if (/^-inf(inity)?$/i.test(raw)) return Number.NEGATIVE_INFINITY
  if (/^nan$/i.test(raw)) return Number.NaN
  if (!/^-?(\d+\.?\d*(e[+-]?\d+)?|\.\d+)$/i.test(raw)) throw new Error(`not a sample value: ${JSON.stringify(line)}`)
  return Number(raw)
}

function parseLabels(raw: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let rest = raw
  while (rest !== '') {
    const m = LABEL.exec(rest)
    if (!m) throw new Error(`bad labels: ${JSON.stringify(line)}`)
    if (Object.hasOwn(labels, m[1]!)) throw new Error(`label ${m[1]} twice: ${JSON.stringify(line)}`)
    labels[m[1]!] = m[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c))
    rest = rest.slice(m[0].length)
  }
  return labels
}

/** Every family of `text`, by name; throws on any line Prometheus would not take, or a sample of no declared family. */
export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  if (text !== '' && !text.endsWith('\n')) throw new Error('the exposition does not end with a newline')
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
    if (meta) {
      const [, what, name, rest] = meta as unknown as [string, string, string, string]
      if (!new RegExp(`^${NAME}$`).test(name)) throw new Error(`bad metric name: ${JSON.stringify(line)}`)
      const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] }
      if (what === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`bad type: ${JSON.stringify(line)}`)
        if (family.samples.length > 0) throw new Error(`TYPE after samples: ${JSON.stringify(line)}`)
        family.type = rest
      } else family.help = rest
      families.set(name, family)
      continue
    }
    if (line.startsWith('#')) continue
    const m = SAMPLE.exec(line)
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`)
    const name = m[1]!
    const family = [...families.values()].find((f) => (SUFFIXES[f.type] ?? ['']).some((suffix) => f.name + suffix === name))
    if (!family) throw new Error(`a sample of no declared family: ${JSON.stringify(line)}`)
    family.samples.push({ name, labels: parseLabels(m[2] ?? '', line), value: parseValue(m[3]!, line) })
  }
  return families
}

/** The value of the sample `name` whose labels include `labels`; undefined if there is none, an error if several. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = [...families.values()].flatMap((f) => f.samples).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

/** GET `url` (a /metrics endpoint): checks the answer is the text format, and parses it. */
export async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  const type = response.headers.get('content-type') ?? ''
  if (!/^text\/plain; version=0\.0\.4/.test(type)) throw new Error(`${url}: content-type ${type}`)
  return parsePrometheusText(await response.text())
}

/** The metrics URL a command logged (`Metrics: http://host:port/metrics`), from its output. */
export function metricsUrlOf(output: string): string {
  const m = /Metrics: (http:\/\/\S+\/metrics)/.exec(output) ?? /"url":"(http:\/\/[^"]+\/metrics)"/.exec(output)
  if (!m) throw new Error(`no "Metrics:" line in\n${output}`)
  return m[1]!
}
