/**
 * `sluice/react`: a provider around `startNode()` and hooks whose data is kept current by the node's push events
 * (GET /api/v1/events), never by polling (docs/decisions/0047-sluice-react.md). Its own bundle, with `react`
 * and `sluice/browser` left as imports: a page that does not import it gets no React, and both entry points share
 * one node.
 *
 * Each hook reads a small per-node store through `useSyncExternalStore`. The store holds one subscription to the
 * node's events for all hooks, and refetches a query only when an event says its answer may have changed; an
 * answer equal to the last one keeps its object, so a component re-renders only when its data changed.
 */
import { createContext, createElement, useCallback, useContext, useEffect, useRef, useState, useSyncExternalStore, type ReactNode } from 'react'
import { startNode, type NodeClient, type PushEvent, type PushEventOf, type SluiceBrowserNode, type StartNodeOptions } from './browser.ts'

export type NodeStatus = Awaited<ReturnType<NodeClient['status']>>
export type Channels = Awaited<ReturnType<NodeClient['channels']>>
export type Payments = Awaited<ReturnType<NodeClient['payments']>>
export type PaymentsFilter = NonNullable<Parameters<NodeClient['payments']>[0]>
export type PendingTransfers = Awaited<ReturnType<NodeClient['pendingTransfers']>>
type Address = NonNullable<Parameters<NodeClient['channels']>[0]>

/** What a data hook gives: the last answer, or the error of the last fetch (a NodeApiError has `.code`). */
export type QueryResult<T> = {
  /** The last answer; kept (not cleared) while a refetch runs or after one failed. */
  data: T | undefined
  /** The last fetch's error, undefined once a later one succeeds. */
  error: unknown
  /** True until the first answer or error (and while the node starts). */
  loading: boolean
  /** Fetches again now: for what no push event tells (a transfer this page just started is pending at once). */
  refetch: () => void
}

/** `starting` until startNode resolves; `failed` if it threw; `stopped` once the node stopped (error tells why). */
export type SluiceState = { node: SluiceBrowserNode | undefined; status: 'starting' | 'ready' | 'failed' | 'stopped'; error: unknown }

// ---------------------------------------------------------------------------------------------------------------
// The per-node store

/** What a query's answer depends on; an event names the topics it may have changed. */
type Topic = 'status' | 'channels' | 'payments' | 'pending'
const ALL_TOPICS: readonly Topic[] = ['status', 'channels', 'payments', 'pending']

/**
 * Which answers an event may change. A payment moves balances (channels) and ends a pending transfer; a channel
 * event changes the channel and may unlock or expire its pending transfers; `events_missed` (the node restarted
 * or the page fell too far behind) may hide anything. Other events (message_rejected, node_error, ...) change no
 * answer. The `status` event carries the whole status: the store takes it as the answer without a fetch.
 */
export function topicsOf(event: string): readonly Topic[] {
  if (event === 'events_missed') return ALL_TOPICS
  if (event.startsWith('payment_')) return ['payments', 'channels', 'pending']
  if (event.startsWith('channel_') || event === 'stale_state' || event === 'partner_equivocated') return ['channels', 'pending']
  return []
}

type Snapshot<T> = { data: T | undefined; error: unknown; loading: boolean }
const LOADING: Snapshot<never> = Object.freeze({ data: undefined, error: undefined, loading: true })

class Query<T> {
  snapshot: Snapshot<T> = LOADING
  readonly listeners = new Set<() => void>()
  /** An event came while nobody listened: fetch on the next subscribe. */
  stale = true
  private running = false
  private again = false

  constructor(
    readonly topic: Topic,
    private readonly fetcher: () => Promise<T>,
  ) {}

  /** One fetch at a time; events during it cause exactly one more, so a burst of events costs at most two. */
  fetch(): void {
    this.stale = false
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    this.fetcher()
      .then(
        (data) => this.set({ data: same(this.snapshot.data, data), error: undefined, loading: false }),
        (error: unknown) => this.set({ data: this.snapshot.data, error, loading: false }),
      )
      .finally(() => {
        this.running = false
        if (this.again) {
          this.again = false
          this.fetch()
        }
      })
  }

  set(next: Snapshot<T>): void {
    const last = this.snapshot
    if (last.data === next.data && last.error === next.error && last.loading === next.loading) return
    this.snapshot = next
    for (const listener of this.listeners) listener()
  }
}

/** The previous answer when the new one is equal (JSON), so that its users do not re-render. */
function same<T>(previous: T | undefined, next: T): T {
  return previous !== undefined && JSON.stringify(previous) === JSON.stringify(next) ? previous : next
}

class NodeStore {
  private readonly queries = new Map<string, Query<unknown>>()
  private readonly eventListeners = new Set<(event: PushEvent) => void>()
  private users = 0
  private unsubscribe: (() => void) | undefined
  /** The first event of a subscription: what happened before it opened is not replayed. */
  private fresh = true

  constructor(readonly node: SluiceBrowserNode) {}

  query<T>(key: string, topic: Topic, fetcher: () => Promise<T>): Query<T> {
    const query = this.queries.get(key) as Query<T> | undefined
    if (query) return query
    const made = new Query(topic, fetcher)
    this.queries.set(key, made as Query<unknown>)
    return made
  }

  subscribeQuery(query: Query<unknown>, onChange: () => void): () => void {
    query.listeners.add(onChange)
    const release = this.use()
    if (query.stale) query.fetch()
    return () => {
      query.listeners.delete(onChange)
      release()
    }
  }

  subscribeEvents(listener: (event: PushEvent) => void): () => void {
    this.eventListeners.add(listener)
    const release = this.use()
    return () => {
      this.eventListeners.delete(listener)
      release()
    }
  }

  /** One subscription to the node's events while anything uses the store. */
  private use(): () => void {
    this.users++
    if (!this.unsubscribe) {
      this.fresh = true
      this.unsubscribe = this.node.subscribe((event) => this.onEvent(event))
    }
    let released = false
    return () => {
      if (released) return
      released = true
      this.users--
      // StrictMode unsubscribes and subscribes again within one commit: keep the stream over that.
      queueMicrotask(() => {
        if (this.users > 0 || !this.unsubscribe) return
        this.unsubscribe()
        this.unsubscribe = undefined
        // Events go unheard from now on: every answer must be fetched again when used again.
        for (const query of this.queries.values()) query.stale = true
      })
    }
  }

  private onEvent(event: PushEvent): void {
    // The stream's first event: changes between a first fetch and the stream's opening were not pushed.
    const topics = this.fresh ? ALL_TOPICS : topicsOf(event.event)
    this.fresh = false
    for (const query of this.queries.values()) {
      if (event.event === 'status' && query.topic === 'status') {
        query.set({ data: same(query.snapshot.data, event.data), error: undefined, loading: false })
        continue
      }
      // A node that answered 503 while syncing answers once its status changes.
      if (!topics.includes(query.topic) && !(event.event === 'status' && query.snapshot.error !== undefined)) continue
      if (query.listeners.size > 0) query.fetch()
      else query.stale = true
    }
    for (const listener of this.eventListeners) {
      try {
        listener(event)
      } catch (e) {
        globalThis.reportError(e)
      }
    }
  }
}

const stores = new WeakMap<SluiceBrowserNode, NodeStore>()
function storeOf(node: SluiceBrowserNode): NodeStore {
  const known = stores.get(node)
  if (known) return known
  const store = new NodeStore(node)
  stores.set(node, store)
  return store
}

// ---------------------------------------------------------------------------------------------------------------
// The provider

const SluiceContext = createContext<SluiceState | undefined>(undefined)

export type SluiceProviderProps = {
  children?: ReactNode
} & (
  | {
      /** startNode's options: the provider starts the node once, and stops it when it unmounts. */
      options: StartNodeOptions
      node?: undefined
    }
  | {
      /** A node started by the page (or its promise): the provider uses it and leaves stopping it to the page. */
      node: SluiceBrowserNode | Promise<SluiceBrowserNode>
      options?: undefined
    }
)

/** What one provider started: kept in a ref, which StrictMode's second mount of the same component shares. */
type Ownership = { starting: Promise<SluiceBrowserNode>; owned: boolean; mounted: number }

export function SluiceProvider(props: SluiceProviderProps): ReactNode {
  const [state, setState] = useState<SluiceState>({ node: undefined, status: 'starting', error: undefined })
  const ownership = useRef<Ownership | undefined>(undefined)
  // The first options (or node) win: starting again on a new options object each render would be a second node.
  const source = useRef(props)

  useEffect(() => {
    // StrictMode runs this twice (mount, unmount, mount) on the same ref: startNode is called once.
    ownership.current ??= source.current.node
      ? { starting: Promise.resolve(source.current.node), owned: false, mounted: 0 }
      : { starting: startNode(source.current.options!), owned: true, mounted: 0 }
    const own = ownership.current
    own.mounted++
    let active = true
    let stopListening: (() => void) | undefined
    own.starting.then(
      (node) => {
        if (!active) return
        stopListening = node.onStopped((stopped) => setState({ node, status: 'stopped', error: stopped.error }))
        setState({ node, status: 'ready', error: undefined })
      },
      (error: unknown) => active && setState({ node: undefined, status: 'failed', error }),
    )
    return () => {
      active = false
      stopListening?.()
      own.mounted--
      // A real unmount, not StrictMode's rehearsal (which mounts again before microtasks run): stop what we started.
      queueMicrotask(() => {
        if (own.mounted > 0 || !own.owned) return
        own.starting.then((node) => node.stop()).catch(() => {})
      })
    }
  }, [])

  return createElement(SluiceContext.Provider, { value: state }, props.children)
}

/** The node and where it is in its life; throws outside a SluiceProvider. */
export function useSluice(): SluiceState {
  const state = useContext(SluiceContext)
  if (!state) throw new Error('useSluice() and the sluice/react hooks must be used inside a <SluiceProvider>')
  return state
}

// ---------------------------------------------------------------------------------------------------------------
// The hooks

const noSubscription = () => () => {}
const loading = () => LOADING

function useQuery<T>(key: string, topic: Topic, fetcher: (node: SluiceBrowserNode) => Promise<T>): QueryResult<T> {
  const { node, status, error } = useSluice()
  // The key names the request; its first fetcher stays (another with the same key asks the same).
  const query = node && status === 'ready' ? storeOf(node).query(key, topic, () => fetcher(node)) : undefined
  const subscribe = useCallback((onChange: () => void) => storeOf(node!).subscribeQuery(query as Query<unknown>, onChange), [node, query])
  const getSnapshot = useCallback(() => query!.snapshot, [query])
  const snapshot = useSyncExternalStore(query ? subscribe : noSubscription, query ? getSnapshot : loading, query ? getSnapshot : loading)
  const refetch = useCallback(() => query?.fetch(), [query])
  if (!query && status !== 'starting') return { data: undefined, error, loading: false, refetch }
  return { ...snapshot, refetch }
}

/** GET /status: from the `status` push event once the stream is open. */
export function useNodeStatus(): QueryResult<NodeStatus> {
  return useQuery('status', 'status', (node) => node.status())
}

/** GET /channels[/token]: refetched on channel and payment events. */
export function useChannels(token?: Address): QueryResult<Channels> {
  return useQuery(`channels ${token ?? ''}`, 'channels', (node) => node.channels(token))
}

/** GET /payments[/token[/partner]]: refetched on payment events. */
export function usePayments(filter: PaymentsFilter = {}): QueryResult<Payments> {
  const { token, partner, limit, offset } = filter
  return useQuery(`payments ${token ?? ''} ${partner ?? ''} ${limit ?? ''} ${offset ?? ''}`, 'payments', (node) =>
    node.payments({
      ...(token ? { token } : {}),
      ...(partner ? { partner } : {}),
      ...(limit !== undefined ? { limit } : {}),
      ...(offset !== undefined ? { offset } : {}),
    }),
  )
}

/** GET /pending_transfers[/token[/partner]]: refetched on payment and channel events (and by `refetch`). */
export function usePendingTransfers(token?: Address, partner?: Address): QueryResult<PendingTransfers> {
  return useQuery(`pending ${token ?? ''} ${partner ?? ''}`, 'pending', (node) => node.pendingTransfers(token, partner))
}

/**
 * Calls `listener` with each push event (only those named in `names`, when given, its data typed for those names),
 * over the store's one subscription. The listener may change from render to render; the latest one is called.
 */
export function useNodeEvents<E extends PushEvent['event'] = PushEvent['event']>(listener: (event: PushEventOf<E>) => void, names?: readonly E[]): void {
  const { node } = useSluice()
  const latest = useRef(listener)
  useEffect(() => {
    latest.current = listener
  })
  const wanted = names?.join(' ')
  useEffect(() => {
    if (!node) return
    const only = wanted === undefined ? undefined : new Set(wanted.split(' '))
    return storeOf(node).subscribeEvents((event) => {
      // Without names E is every name; with them, only events of those names pass.
      if (!only || only.has(event.event)) latest.current(event as PushEventOf<E>)
    })
  }, [node, wanted])
}
