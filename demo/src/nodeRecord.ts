/**
 * What the node has recorded, as the page shows it: its events (GET /_debug/node_events) and the route of the last
 * payment sent in each token (GET /payments, whose sent entries carry `route`). Both are kept by the node in its
 * storage, so a reload, a second tab or a restarted node shows the same log and the same route; the event stream
 * (GET /events) only says when to read again. Its own push log is in memory and starts afresh with each run of
 * the node (0021), so it cannot give back what happened before a reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { ApiFailure, get, type ChainEvent, type HistoryEntry, type NodeEvent } from './api.ts'

/** A node event numbered from 1 in the order the node recorded it. */
export type RecordedEvent = NodeEvent & { n: number }

export type LastPayment = { route: `0x${string}`[]; target: `0x${string}`; identifier: string | undefined; log_time: string }

export type NodeRecord = {
  /** The last `shown` events, newest first. */
  events: RecordedEvent[]
  /** How many events the node has recorded. */
  count: number
  /** By token address (lower case): the last payment this node sent successfully in it, whoever asked for it. */
  lastPayments: Record<string, LastPayment>
  /** Token networks' tokens and channels' participants, to name what an event is about. */
  directory: Directory
  /** Set while reading fails for another reason than the node still syncing. */
  error: unknown
}

export type Directory = {
  tokens: Record<string, `0x${string}`>
  channels: Record<string, [`0x${string}`, `0x${string}`]>
}

const PAGE = 500
const key = (tokenNetwork: string, channel: string) => `${tokenNetwork.toLowerCase()}:${channel}`

/** A list the API gives oldest first in pages: each read returns what was added since the last one. */
class Tail<T> {
  count = 0
  constructor(private readonly path: string) {}
  async more(): Promise<T[]> {
    const added: T[] = []
    // Counted only once all is read: a read that fails half-way is done again from the same place.
    for (;;) {
      const page = await get<T[]>(`${this.path}?limit=${PAGE}&offset=${this.count + added.length}`)
      added.push(...page)
      if (page.length < PAGE) break
    }
    this.count += added.length
    return added
  }
}

/** An argument of a chain event (its args are the contract event's own, open in openapi.json): addresses and integers are strings. */
const arg = (e: ChainEvent, name: string): string => String(e.args[name])

/** Reads the node's record from the start, then what was added each time `sync` is called; one read at a time. */
class RecordReader {
  private readonly events = new Tail<NodeEvent>('/_debug/node_events')
  private readonly payments = new Tail<HistoryEntry>('/payments')
  private running = false
  private again = false
  closed = false
  record: NodeRecord = { events: [], count: 0, lastPayments: {}, directory: { tokens: {}, channels: {} }, error: undefined }

  constructor(
    private readonly shown: number,
    private readonly onChange: (record: NodeRecord) => void,
  ) {}

  sync(): void {
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    void (async () => {
      do {
        this.again = false
        await this.read()
      } while (this.again && !this.closed)
      this.running = false
    })()
  }

  private async read(): Promise<void> {
    try {
      // Each part is kept as soon as it is read: a failure of the next one loses nothing (its Tail counted it).
      const first = this.events.count
      const added = (await this.events.more()).map((e, i) => ({ ...e, n: first + i + 1 }))
      const events = [...added.reverse(), ...this.record.events].slice(0, this.shown)
      // Names only: if they cannot be read now, the entries show channel ids, and the next read tries again.
      const directory = this.unknownIn(events) ? await this.readDirectory().catch(() => this.record.directory) : this.record.directory
      if (this.closed) return
      this.record = { ...this.record, events, count: this.events.count, directory }
      const lastPayments = { ...this.record.lastPayments }
      for (const p of await this.payments.more())
        if (p.event === 'EventPaymentSentSuccess' && p.route && p.target)
          lastPayments[p.token_address.toLowerCase()] = { route: p.route, target: p.target, identifier: p.identifier, log_time: p.log_time }
      if (this.closed) return
      this.record = { ...this.record, lastPayments, error: undefined }
    } catch (e) {
      if (this.closed) return
      // While the node syncs the API answers 503; the status event that it is ready brings the next read.
      this.record = { ...this.record, error: e instanceof ApiFailure && e.status === 503 ? undefined : e }
    }
    this.onChange(this.record)
  }

  private unknownIn(events: RecordedEvent[]): boolean {
    const { tokens, channels } = this.record.directory
    return events.some((e) => {
      const network = e.token_network_identifier
      if (typeof network !== 'string') return false
      return !tokens[network.toLowerCase()] || (typeof e.channel_identifier === 'string' && !channels[key(network, e.channel_identifier)])
    })
  }

  /** Which token each token network is of, and who is in each channel: from the chain events the node keeps. */
  private async readDirectory(): Promise<Directory> {
    const tokens: Directory['tokens'] = {}
    const channels: Directory['channels'] = {}
    for (const e of await get<ChainEvent[]>('/_debug/blockchain_events/network'))
      if (e.event === 'TokenNetworkCreated') tokens[arg(e, 'token_network_address').toLowerCase()] = arg(e, 'token_address') as `0x${string}`
    for (const [network, token] of Object.entries(tokens)) {
      for (const e of await get<ChainEvent[]>(`/_debug/blockchain_events/payment_networks/${token}/channels`))
        if (e.event === 'ChannelOpened')
          channels[key(network, arg(e, 'channel_identifier'))] = [arg(e, 'participant1') as `0x${string}`, arg(e, 'participant2') as `0x${string}`]
    }
    return { tokens, channels }
  }
}

/**
 * The node's record, read when `node` starts and again at each `sync()` (the page calls it on each event the node
 * pushes); `undefined` while there is no node.
 */
export function useNodeRecord(node: unknown, shown: number): { record: NodeRecord | undefined; sync(): void } {
  const [record, setRecord] = useState<NodeRecord | undefined>()
  const reader = useRef<RecordReader | undefined>(undefined)
  useEffect(() => {
    if (!node) return
    const started = new RecordReader(shown, setRecord)
    reader.current = started
    started.sync()
    return () => {
      started.closed = true
      reader.current = undefined
      setRecord(undefined)
    }
  }, [node])
  const sync = useCallback(() => reader.current?.sync(), [])
  return { record, sync }
}
