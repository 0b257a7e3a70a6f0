/** One server-sent event as it came over the wire. */
export type SseEvent = { event: string; data: any; id: string | undefined; retry: number | undefined }

export type SseClient = {
  status: number
  headers: Headers
  /** Events so far, in order. */
  events: SseEvent[]
  /** Comment lines so far (without the colon). */
  comments: string[]
  /** The first event (already received or to come) matching `predicate`. */
  next(predicate: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>
  /** Resolves when the server ends the stream. */
  ended: Promise<void>
  /** Disconnects, as a browser closing its EventSource does. */
  close(): void
}

/**
 * Reads `url` as an event stream with fetch (Node has no EventSource), parsing events as they arrive;
 * `lastEventId` is sent as EventSource sends it when it reconnects.
 */
export async function openEvents(url: string, { lastEventId }: { lastEventId?: string } = {}): Promise<SseClient> {
  const abort = new AbortController()
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
  const response = await fetch(url, { signal: abort.signal, headers })
  const events: SseEvent[] = []
  const comments: string[] = []
  const waiters = new Set<() => void>()
  const notify = () => waiters.forEach((w) => w())
  let buffer = ''
  const parse = () => {
    for (let at = buffer.indexOf('\n\n'); at !== -1; at = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, at)
      buffer = buffer.slice(at + 2)
      let event = 'message'
      let id: string | undefined
      let retry: number | undefined
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim())
        else if (line.startsWith('event: ')) event = line.slice(7)
        else if (line.startsWith('data: ')) data.push(line.slice(6))
        else if (line.startsWith('id: ')) id = line.slice(4)
        else if (line.startsWith('retry: ')) retry = Number(line.slice(7))
      }
      if (data.length) events.push({ event, data: JSON.parse(data.join('\n')), id, retry })
    }
    notify()
  }
  const ended = (async () => {
    if (!response.body) return
    const decoder = new TextDecoder()
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true })
        parse()
      }
    } catch {
      // aborted by close()
    }
    notify()
  })()
  let done = false
  void ended.then(() => (done = true))
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended,
    close: () => abort.abort(),
    next(predicate, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(predicate)
          if (found) {
            cleanup()
            resolve(found)
          } else if (done) {
            cleanup()
            reject(new Error(`the stream ended without the event; got ${events.map((e) => e.event).join(', ')}`))
          }
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`no such event within ${timeoutMs} ms; got ${events.map((e) => e.event).join(', ')}`))
        }, timeoutMs)
        const cleanup = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
  }
}
