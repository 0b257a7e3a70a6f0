/**
 * What `npm run demo` tells the page about the world it started (scripts/demo.ts writes it as /demo.json): the
 * chain, the relay, the headless peers and the backup server. A dApp on a real network would have these in its own
 * configuration.
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
  /** The headless peers: their names, addresses and REST APIs (for the curl lines, never called by the page). */
  peers: { name: string; address: `0x${string}`; api: string }[]
  /** Seconds between blocks. */
  blockTime: number
  /** The backup server's API (`sluice backup-server`, http://127.0.0.1:PORT/backup/v1), for the node's sealed copies. */
  backup: string
  /** The monitoring service (`sluice devnet --monitoring`): its address and REST API. */
  monitor: { address: `0x${string}`; api: string }
}

export async function loadConfig(): Promise<DemoConfig> {
  const response = await fetch('/demo.json')
  if (!response.ok) throw new Error(`/demo.json: HTTP ${response.status}; start the demo with npm run demo`)
  return (await response.json()) as DemoConfig
}
