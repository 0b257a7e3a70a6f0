import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { eventStreamSeconds, relayEventStream, ResumeIds, type RelayEnd } from '../../../worker/eventStreamRelay.ts'

const encoder = new TextEncoder()

/** A node's stream that sends `chunks` and stays open. */
const source = (chunks: string[]) => ({
  stream: new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(encoder.encode(chunk))
    },
  }),
})

async function readAll(stream: ReadableStream<Uint8Array>) {
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  return text
}

const events = (n: number) => Array.from({ length: n }, (_, i) => `event: e\ndata: {"n":${i + 1},"text":"é ✓"}\nid: r-${i + 1}\n\n`).join('')

describe('relayEventStream', () => {
  it('passes every whole event on unchanged however the bytes are split, and knows the last id', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(), { maxLength: 12 }), async (n, cutsRaw) => {
        const bytes = encoder.encode(events(n))
        const bounds = [0, ...new Set(cutsRaw.map((c) => c % bytes.length).filter((c) => c > 0))].sort((x, y) => x - y)
        bounds.push(bytes.length)
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            for (let i = 1; i < bounds.length; i++) c.enqueue(bytes.slice(bounds[i - 1], bounds[i]))
            c.close()
          },
        })
        let ended: [RelayEnd, string | undefined] | undefined
        const text = await readAll(relayEventStream(body, { seconds: 60, onEnd: (how, id) => (ended = [how, id]) }))
        expect(text).toBe(events(n))
        expect(ended).toEqual(['ended', `r-${n}`])
      }),
    )
  })

  it('at its time limit ends cleanly after the last whole event, dropping one cut off (its id was never seen)', async () => {
    let cancelled = false
    const node = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode(events(2)))
        c.enqueue(encoder.encode('event: e\ndata: {"n":3}\n'))
      },
      cancel() {
        cancelled = true
      },
    })
    let ended: [RelayEnd, string | undefined] | undefined
    const relayed = relayEventStream(node, { seconds: 0.2, onEnd: (how, id) => (ended = [how, id]) })
    expect(await readAll(relayed)).toBe(events(2))
    expect(ended).toEqual(['cut', 'r-2'])
    expect(cancelled).toBe(true)
  })

  it("a page that stops reading cancels the node's stream; a failing one errors the page's", async () => {
    const node = source([events(1)])
    let ended: RelayEnd | undefined
    const relayed = relayEventStream(node.stream, { seconds: 60, onEnd: (how) => (ended = how) })
    const reader = relayed.getReader()
    await reader.read()
    await reader.cancel()
    expect(ended).toBe('cancelled')

    const failing = new ReadableStream<Uint8Array>({
      pull(c) {
        c.error(new Error('worker gone'))
      },
    })
    let failed: RelayEnd | undefined
    await expect(readAll(relayEventStream(failing, { seconds: 60, onEnd: (how) => (failed = how) }))).rejects.toThrow('worker gone')
    expect(failed).toBe('failed')
  })

  it('takes its limit from the script URL, else four minutes', () => {
    expect(eventStreamSeconds('https://dapp.example/sluice-sw.js?event_stream_seconds=3')).toBe(3)
    for (const url of ['https://dapp.example/sluice-sw.js', 'https://d.example/sw.js?event_stream_seconds=0', 'https://d.example/sw.js?event_stream_seconds=x'])
      expect(eventStreamSeconds(url), url).toBe(240)
  })
})

describe('ResumeIds', () => {
  it('gives a remembered id once, to the same page and URL only, for a minute', () => {
    const ids = new ResumeIds(60_000)
    ids.remember('page-1', '/api/v1/events', 'r-5', 0)
    expect(ids.take('page-2', '/api/v1/events', 1)).toBeUndefined()
    expect(ids.take('page-1', '/api/v1/events?heartbeat=1', 1)).toBeUndefined()
    expect(ids.take('page-1', '/api/v1/events', 1)).toBe('r-5')
    expect(ids.take('page-1', '/api/v1/events', 2)).toBeUndefined()
    ids.remember('page-1', '/api/v1/events', 'r-6', 0)
    expect(ids.take('page-1', '/api/v1/events', 60_000)).toBeUndefined()
  })

  it('two streams of one page and URL: the id remembered first is taken first', () => {
    const ids = new ResumeIds()
    ids.remember('p', 'u', 'r-3', 0)
    ids.remember('p', 'u', 'r-7', 1)
    expect([ids.take('p', 'u', 2), ids.take('p', 'u', 2), ids.take('p', 'u', 2)]).toEqual(['r-3', 'r-7', undefined])
  })
})
