/**
 * What the others see of our node, read from their own APIs through the demo's server (`via` in /demo.json,
 * scripts/demoProxy.ts): a headless peer's view of its channels with us, and what the monitoring service holds and did
 * for us. Both answer whether our node runs or not: that is how a person watches them while it is stopped.
 */
import { get, type Channel, type MonitorCall, type MonitorChannel, type Network } from './api.ts'
import type { DemoConfig } from './config.ts'

export type Peer = DemoConfig['peers'][number]

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export const peerOf = (config: DemoConfig, address: string): Peer | undefined => config.peers.find((p) => same(p.address, address))

/** A channel as a peer's node holds it, with the closed and settle blocks of its network view once closed. */
export type PeerChannel = Channel & { closed_block?: string; settle_block?: string }

/** A peer's unsettled channels with `ours` (its GET /channels; a settled one is no longer listed). */
export async function peerChannels(peer: Peer, ours: string): Promise<PeerChannel[]> {
  const withUs = (await get<Channel[]>('/channels', peer.via)).filter((c) => same(c.partner_address, ours))
  const closedTokens = [...new Set(withUs.filter((c) => c.state === 'closed').map((c) => c.token_address))]
  const networks = await Promise.all(closedTokens.map((t) => get<Network>(`/tokens/${t}/network`, peer.via)))
  return withUs.map((c) => {
    const seen = networks
      .find((n) => same(n.token_network_address, c.token_network_address))
      ?.channels.find((n) => n.channel_identifier === c.channel_identifier)
    return { ...c, ...(seen?.closed_block ? { closed_block: seen.closed_block } : {}), ...(seen?.settle_block ? { settle_block: seen.settle_block } : {}) }
  })
}

/** What the monitoring service holds and did for `ours`: the channels it watches for us, and its monitor calls for us. */
export type ServiceRecord = { channels: MonitorChannel[]; calls: MonitorCall[] }

export async function serviceRecord(config: DemoConfig, ours: string): Promise<ServiceRecord> {
  const [channels, calls] = await Promise.all([
    get<MonitorChannel[]>('/channels?limit=1000', config.monitor.via),
    get<MonitorCall[]>('/monitor_calls?limit=1000', config.monitor.via),
  ])
  return {
    channels: channels.filter((c) => c.requests.some((r) => same(r.requester, ours)) || c.duties.some((d) => same(d.requester, ours))),
    calls: calls.filter((c) => same(c.non_closing_participant, ours)),
  }
}
