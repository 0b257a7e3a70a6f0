/**
 * What `npm run demo` tells the page about the world it started (scripts/demo.ts writes it as /demo.json): the
 * chain, the relay, the headless peers, the monitoring and pathfinding services and the backup server. A dApp on a real network would
 * have these in its own configuration.
 */
export type DemoConfig = {
  /** anvil's JSON-RPC URL. */
  rpc: string
  /** The deployment file's URL on this origin. */
  deployment: string
  chainId: number
  /** Multiaddrs of the libp2p relay the peers use. */
  relay: string[]
  /** Test tokens by symbol. */
  tokens: Record<string, `0x${string}`>
  /**
   * The headless peers: their names, addresses and REST APIs (`api`, for the curl lines: they refuse this page's
   * origin), and `via`, the same API through this page's own server (scripts/demoProxy.ts), for the routes the page
   * uses: the peer's view of a channel, a payment to us, a close.
   */
  peers: { name: string; address: `0x${string}`; api: string; via: string }[]
  /** Seconds between blocks. */
  blockTime: number
  /** The backup server's API (`sluice backup-server`, http://127.0.0.1:PORT/backup/v1), for the node's sealed copies. */
  backup: string
  /** The monitoring service (`sluice devnet --monitoring`): its address, its REST API, and that API through this page's server. */
  monitor: { address: `0x${string}`; api: string; via: string }
  /**
   * The pathfinding service (`sluice devnet --pathfinding`, free): its address and URL. The page's node asks it for the
   * routes of a payment no direct channel carries (docs/decisions/0073); the peers tell it of their channels.
   */
  pathfinding?: { address: `0x${string}`; url: string }
}

/**
 * The timeouts of the devnet's channels, in blocks, which the page's node gives its own (decision 0023): a lock it
 * sends through a peer must fit the peers' channels. The settle window is as long as a partner's close waits.
 */
export const CHANNEL_TIMEOUTS = { reveal: 10, settle: 40 } as const

export async function loadConfig(): Promise<DemoConfig> {
  const response = await fetch('/demo.json')
  if (!response.ok) throw new Error(`/demo.json: HTTP ${response.status}; start the demo with npm run demo`)
  return (await response.json()) as DemoConfig
}
