/**
 * Browser commands (they run in Node) for the page's node on several endpoints: test/support/faultyRpc.ts endpoints in
 * front of the run's anvil, which the page reaches cross-origin as a public endpoint (CORS), put down and up on command.
 */
import type { BrowserCommand } from 'vitest/node'
import { startFaultyRpc, type EndpointMode, type FaultyRpc } from '../../support/faultyRpc.ts'

const running = new Map<string, FaultyRpc>()

/** An endpoint in front of `target`, in `mode`; resolves with its URL. */
export const startFaultyEndpoint: BrowserCommand<[target: string, mode?: EndpointMode]> = async (_ctx, target, mode = 'up') => {
  const rpc = await startFaultyRpc(target, { seed: 1 })
  running.set(rpc.url, rpc)
  await rpc.setMode(mode)
  return rpc.url
}

export const setFaultyEndpointMode: BrowserCommand<[url: string, mode: EndpointMode]> = async (_ctx, url, mode) => {
  await running.get(url)?.setMode(mode)
}

/** The calls the endpoint received, by method. */
export const faultyEndpointCalls: BrowserCommand<[url: string]> = async (_ctx, url) => ({ ...running.get(url)?.stats.calls })

export const stopFaultyEndpoints: BrowserCommand<[]> = async () => {
  for (const rpc of running.values()) await rpc.close()
  running.clear()
}

export const rpcEndpointCommands = { startFaultyEndpoint, setFaultyEndpointMode, faultyEndpointCalls, stopFaultyEndpoints }

declare module 'vitest/browser' {
  interface BrowserCommands {
    startFaultyEndpoint(target: string, mode?: EndpointMode): Promise<string>
    setFaultyEndpointMode(url: string, mode: EndpointMode): Promise<void>
    faultyEndpointCalls(url: string): Promise<Record<string, number>>
    stopFaultyEndpoints(): Promise<void>
  }
}
