import { useState } from 'preact/hooks'
import { get, type Network } from '../api.ts'
import { useLoad } from '../hooks.ts'
import { Failure, Panel, TokenSelect, type Shared } from './common.tsx'

const SIZE = 320
const RADIUS = 120
/** Room beside the circle for a label under a node at its side (a short address is about 80 units wide). */
const MARGIN = 40

/**
 * The channel network the node knows (GET /tokens/<token>/network), with the route of the last payment the node
 * sent in that token drawn on it (from the payment history: it survives a reload).
 */
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
  const last = shared.record?.lastPayments[key(token)]
  const hops = last ? [shared.address, ...last.route].map(key) : []
  const onRoute = (a: string, b: string) => hops.some((h, i) => i > 0 && ((hops[i - 1] === key(a) && h === key(b)) || (hops[i - 1] === key(b) && h === key(a))))
  return (
    <Panel title="Network" id="network" tools={<TokenSelect shared={shared} name="network-token" value={token} onChange={setToken} inline />}>
      <Failure error={network.error} shared={shared} />
      <svg
        viewBox={`${-MARGIN} 0 ${SIZE + 2 * MARGIN} ${SIZE}`}
        class="graph"
        role="img"
        aria-label="the channel network this node knows"
        data-testid="network-graph"
      >
        {channels.map((c) => {
          const [a, b] = [at.get(key(c.participant1))!, at.get(key(c.participant2))!]
          const route = onRoute(c.participant1, c.participant2)
          return (
            <g key={c.channel_identifier} data-route={route ? 'yes' : undefined}>
              <line x1={a.x} y1={a.y} x2={b.x} y2={b.y} class={`edge ${c.state}${route ? ' route' : ''}`} />
              <title>{`#${c.channel_identifier}: ${shared.nameOf(c.participant1)} ${shared.amount(c.balance1, token)} | ${shared.nameOf(c.participant2)} ${shared.amount(c.balance2, token)}`}</title>
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
      <p class="hint" data-testid="last-route">
        {last
          ? `Last payment in ${shared.tokenOf(token).symbol}: ${['You', ...last.route.map(shared.nameOf)].join(' → ')}, at ${new Date(last.log_time).toLocaleTimeString()}`
          : `Pay someone in ${shared.tokenOf(token).symbol} to see the route here.`}
      </p>
    </Panel>
  )
}
