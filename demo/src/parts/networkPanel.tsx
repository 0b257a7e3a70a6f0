import { useState } from 'preact/hooks'
import { get, type Network } from '../api.ts'
import { units } from '../chain.ts'
import { useLoad } from '../hooks.ts'
import { Failure, Panel, TokenSelect, type Shared } from './common.tsx'

const SIZE = 320
const RADIUS = 120

/** The channel network the node knows (GET /tokens/<token>/network), with the route of the last payment drawn on it. */
export function NetworkPanel({ shared }: { shared: Shared }) {
  const [token, setToken] = useState(Object.values(shared.config.tokens)[0]!)
  const network = useLoad(() => get<Network>(`/tokens/${token}/network`), [token, shared.tick])
  const channels = network.data?.channels ?? []
  const key = (a: string) => a.toLowerCase()
  // Us first (at the top), then everyone else the node has seen in a channel.
  const nodes = [shared.address, ...new Set(channels.flatMap((c) => [c.participant1, c.participant2]))].filter(
    (a, i, all) => all.findIndex((b) => key(b) === key(a)) === i,
  )
  const at = new Map(
    nodes.map((a, i) => [
      key(a),
      { x: SIZE / 2 + RADIUS * Math.sin((2 * Math.PI * i) / nodes.length), y: SIZE / 2 - RADIUS * Math.cos((2 * Math.PI * i) / nodes.length) },
    ]),
  )
  const hops = shared.lastRoute ? [shared.address, ...shared.lastRoute].map(key) : []
  const onRoute = (a: string, b: string) => hops.some((h, i) => i > 0 && ((hops[i - 1] === key(a) && h === key(b)) || (hops[i - 1] === key(b) && h === key(a))))
  return (
    <Panel title="Network" id="network">
      <div class="row">
        <TokenSelect shared={shared} name="network-token" value={token} onChange={setToken} />
      </div>
      <Failure error={network.error} />
      <svg viewBox={`0 0 ${SIZE} ${SIZE}`} class="graph" role="img" aria-label="the channel network this node knows" data-testid="network-graph">
        {channels.map((c) => {
          const [a, b] = [at.get(key(c.participant1))!, at.get(key(c.participant2))!]
          const route = onRoute(c.participant1, c.participant2)
          return (
            <g key={c.channel_identifier} data-route={route ? 'yes' : undefined}>
              <line x1={a.x} y1={a.y} x2={b.x} y2={b.y} class={`edge ${c.state}${route ? ' route' : ''}`} />
              <title>{`#${c.channel_identifier}: ${shared.nameOf(c.participant1)} ${units(c.balance1)} | ${shared.nameOf(c.participant2)} ${units(c.balance2)}`}</title>
            </g>
          )
        })}
        {nodes.map((a) => {
          const p = at.get(key(a))!
          const us = key(a) === key(shared.address)
          return (
            <g key={a}>
              <circle cx={p.x} cy={p.y} r={us ? 16 : 12} class={us ? 'vertex us' : hops.includes(key(a)) ? 'vertex route' : 'vertex'} />
              <text x={p.x} y={p.y + (p.y > SIZE / 2 ? 30 : -22)} text-anchor="middle" class="label">
                {shared.nameOf(a)}
              </text>
            </g>
          )
        })}
      </svg>
      <p class="hint">
        {shared.lastRoute ? `Last payment: ${['You', ...shared.lastRoute.map(shared.nameOf)].join(' → ')}` : 'Make a payment to see its route here.'}
      </p>
    </Panel>
  )
}
