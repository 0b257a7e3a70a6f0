import { startNode, type SluiceBrowserNode } from 'sluice/browser'
import { SluiceProvider } from 'sluice/react'
import type { ComponentChildren, FunctionComponent } from 'preact'
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks'
import { get, type Address, type NodeError } from './api.ts'
import { CHANNEL_TIMEOUTS, type DemoConfig } from './config.ts'
import { useNodeRecord } from './nodeRecord.ts'
import { AwayPanel } from './parts/awayPanel.tsx'
import { ChannelsPanel } from './parts/channelsPanel.tsx'
import { Failure, sameAddress, short, type Routing, type Shared } from './parts/common.tsx'
import { ConsolePanel } from './parts/consolePanel.tsx'
import { EventsPanel, type BackgroundError } from './parts/eventsPanel.tsx'
import { FundingPanel } from './parts/fundingPanel.tsx'
import { NetworkPanel } from './parts/networkPanel.tsx'
import { NodePanel } from './parts/nodePanel.tsx'
import { PaymentsPanel } from './parts/paymentsPanel.tsx'
import { ProtectionPanel } from './parts/protectionPanel.tsx'
import { baseUnits, units, type Deployment, type Token } from './tokens.ts'

/** Remembered so that a reload starts the node again by itself (its key is kept in IndexedDB). */
const STARTED = 'sluice-demo:started'
/** The node's address, remembered so that the page shows what the others see of it while it is stopped. */
const ADDRESS = 'sluice-demo:address'
const EVENTS_SHOWN = 200
/**
 * Pushed events reload the panels at most this often: the first at once, the rest of a burst once at its end. Each
 * reload is about fifteen requests to the node, which a payment after it then waits behind (issue 19: payments in a
 * row took 100 ms each in the demo, 30 in a bare page).
 */
const RELOAD_EVERY_MS = 500
const PROBLEMS_SHOWN = 20
/** What each monitoring request offers, in service tokens (the funding step deposits 10). */
const MONITORING_REWARD = '1'
/** Every event GET /events pushes: each moves the tick (panels reload) and has the node's record read again. */
const EVENT_NAMES = [
  'status',
  'payment_sent_success',
  'payment_sent_failed',
  'payment_received_success',
  'payment_mediated',
  'channel_opened',
  'channel_closing',
  'channel_closed',
  'channel_settling',
  'channel_settled',
  'channel_deposit',
  'channel_withdraw',
  'channel_withdraw_expired',
  'message_rejected',
  'action_rejected',
  'node_error',
  'partner_equivocated',
  'stale_state',
  'events_missed',
  'payment_route_failed',
]
/** The pathfinding client's events (docs/decisions/0073): how the node routed its last payment. */
const ROUTING_EVENTS = ['pathfinding_routes', 'payment_routed_locally']

/** sluice/react's provider, typed for Preact's JSX (preact/compat is React's API at run time, not its types). */
const NodeProvider = SluiceProvider as unknown as FunctionComponent<{ node: SluiceBrowserNode; children: ComponentChildren }>

export function App({
  config,
  deployment,
  tokens,
  settleTimeoutMin,
}: {
  config: DemoConfig
  deployment: Deployment
  tokens: Token[]
  settleTimeoutMin: number
}) {
  const [node, setNode] = useState<SluiceBrowserNode | undefined>()
  const [address, setAddress] = useState<`0x${string}` | undefined>(() => (localStorage.getItem(ADDRESS) as `0x${string}` | null) ?? undefined)
  const [starting, setStarting] = useState(false)
  const [error, setError] = useState<unknown>()
  const [passphrase, setPassphrase] = useState('')
  const [tick, setTick] = useState(0)
  const [problems, setProblems] = useState<BackgroundError[]>([])
  const [routing, setRouting] = useState<Routing | undefined>()
  const refresh = useCallback(() => setTick((t) => t + 1), [])
  const { record, sync } = useNodeRecord(node, EVENTS_SHOWN)

  const start = useCallback(
    async (withPassphrase: string) => {
      setStarting(true)
      setError(undefined)
      // The devnet runs a monitoring service, and funding the node deposits 10 service tokens: ten times the reward.
      const serviceToken = tokens.find((t) => sameAddress(t.address, deployment.serviceToken))
      try {
        const started = await startNode({
          rpc: config.rpc,
          deployment: config.deployment,
          relay: config.relay,
          environment: 'development',
          confirmations: 0,
          pollingInterval: 250,
          // The devnet's channels: a lock must fit their settle timeout of 40 blocks.
          defaultRevealTimeout: CHANNEL_TIMEOUTS.reveal,
          defaultSettleTimeout: CHANNEL_TIMEOUTS.settle,
          waitForSync: false,
          ...(config.monitor && serviceToken ? { enableMonitoring: true, monitoringReward: baseUnits(MONITORING_REWARD, serviceToken) } : {}),
          // The devnet's pathfinding service chooses the routes of a payment no direct channel carries.
          ...(config.pathfinding ? { routingMode: 'pfs' as const, pathfindingServiceAddress: config.pathfinding.url } : {}),
          // Sealed copies to the devnet's backup server. The key stays in IndexedDB only, so a copy cannot outlive it
          // here: the protection panel says so.
          backupUrl: config.backup,
          ...(withPassphrase ? { passphrase: withPassphrase } : {}),
        })
        started.onStopped((stopped) => {
          setError(`The node stopped: ${stopped.reason}`)
          setNode(undefined)
        })
        const { our_address } = await get<Address>('/address')
        setAddress(our_address)
        setNode(started)
        localStorage.setItem(STARTED, '1')
        localStorage.setItem(ADDRESS, our_address)
      } catch (e) {
        const code = (e as { code?: string }).code
        setError(code === 'PASSPHRASE_REQUIRED' ? 'This node’s key is protected: enter its passphrase.' : e)
      } finally {
        setStarting(false)
      }
    },
    [config, deployment, tokens],
  )

  // A reload starts the node it ran before, as a dApp would.
  useEffect(() => {
    if (localStorage.getItem(STARTED)) void start('')
  }, [start])

  // Blocks move the tick (countdowns), with the node or without it (what the others see of it meanwhile).
  useEffect(() => {
    const timer = setInterval(refresh, Math.max(1, config.blockTime) * 2_000)
    return () => clearInterval(timer)
  }, [config.blockTime, refresh])

  // Pushed events move the tick (panels reload) and have the record read again: at once, then at most every
  // RELOAD_EVERY_MS while they keep coming.
  useEffect(() => {
    if (!node) return
    const source = new EventSource('/api/v1/events')
    let last = 0
    let trailing: ReturnType<typeof setTimeout> | undefined
    const reload = () => {
      last = Date.now()
      trailing = undefined
      sync()
      refresh()
    }
    const onEvent = (e: MessageEvent<string>) => {
      if (e.type === 'node_error') {
        const data = JSON.parse(e.data) as NodeError
        setProblems((list) => [{ at: new Date(), ...data }, ...list].slice(0, PROBLEMS_SHOWN))
      }
      if (trailing !== undefined) return
      const wait = last + RELOAD_EVERY_MS - Date.now()
      if (wait <= 0) reload()
      else trailing = setTimeout(reload, wait)
    }
    for (const name of EVENT_NAMES) source.addEventListener(name, onEvent as EventListener)
    const onRouting = (e: MessageEvent<string>) => {
      const data = JSON.parse(e.data) as Omit<Routing, 'kind'>
      setRouting({ kind: e.type === 'pathfinding_routes' ? 'service' : 'local', ...data } as Routing)
    }
    for (const name of ROUTING_EVENTS) source.addEventListener(name, onRouting as EventListener)
    return () => {
      clearTimeout(trailing)
      source.close()
    }
  }, [node, refresh, sync])

  const names = useMemo(() => {
    const known = new Map<string, string>(config.peers.map((p) => [p.address.toLowerCase(), p.name]))
    if (address) known.set(address.toLowerCase(), 'You')
    return known
  }, [config, address])
  const knownName = useCallback((a: string) => names.get(a.toLowerCase()), [names])
  const nameOf = useCallback((a: string) => names.get(a.toLowerCase()) ?? short(a), [names])
  const tokenOf = useCallback(
    (a: string): Token => tokens.find((t) => sameAddress(t.address, a)) ?? { address: a as `0x${string}`, symbol: short(a), decimals: 18 },
    [tokens],
  )
  const amount = useCallback(
    (base: bigint | string, token: string) => {
      const t = tokenOf(token)
      return `${units(base, t.decimals)} ${t.symbol}`
    },
    [tokenOf],
  )

  const stop = async () => {
    await node?.stop()
    localStorage.removeItem(STARTED)
    setNode(undefined)
  }

  const shared: Shared | undefined = address
    ? { config, deployment, tokens, settleTimeoutMin, address, tick, refresh, knownName, nameOf, tokenOf, amount, record: node ? record : undefined, routing }
    : undefined
  return (
    <>
      <header>
        <h1>
          Sluice <span>a payment-channel node in your browser</span>
        </h1>
        <p class="hint">
          Chain {config.chainId} at {config.rpc} (a block every {config.blockTime} s) · relay {short(config.relay[0] ?? '')} · {config.peers.length} headless
          peers
        </p>
      </header>
      {node && shared ? (
        // Two columns on a wide screen: the node and what it sees beside the actions; one column, in the order
        // a person goes, on a narrow one (style.css).
        // The node is the page's (started by the button, stopped by its own button): the provider uses it, and its
        // hooks keep the node, channels and payments panels current from the node's events.
        <NodeProvider node={node}>
          <main class="dashboard">
            <div class="column side">
              <NodePanel shared={shared} node={node} onStop={stop} />
              <ProtectionPanel shared={shared} />
              <FundingPanel shared={shared} />
              <NetworkPanel shared={shared} />
              <EventsPanel shared={shared} problems={problems} />
            </div>
            <div class="column actions">
              {error ? <Failure error={error} shared={shared} /> : null}
              <ChannelsPanel shared={shared} />
              <PaymentsPanel shared={shared} />
              <ConsolePanel />
            </div>
          </main>
        </NodeProvider>
      ) : (
        <main class="starting">
          <section class="panel start" id="start">
            <h2>Start your node</h2>
            <p>
              The node runs in a worker of this page: its key is generated on the first start and kept in this browser (IndexedDB), encrypted with the
              passphrase if you give one. Every call below is a plain <code>fetch('/api/v1/...')</code>, answered by it through a service worker.
            </p>
            <form
              class="fields"
              onSubmit={(e) => {
                e.preventDefault()
                void start(passphrase)
              }}
            >
              <input
                name="passphrase"
                type="password"
                placeholder="passphrase (optional)"
                aria-label="passphrase (optional)"
                autocomplete="current-password"
                value={passphrase}
                onInput={(e) => setPassphrase(e.currentTarget.value)}
              />
              <button type="submit" disabled={starting} data-testid="start">
                {starting ? 'Starting…' : 'Start my node'}
              </button>
            </form>
            <Failure error={error} />
          </section>
          {shared ? <AwayPanel shared={shared} /> : null}
        </main>
      )}
    </>
  )
}
