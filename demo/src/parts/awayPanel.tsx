import { blockNumber } from '../chain.ts'
import { useLoad } from '../hooks.ts'
import { peerChannels, serviceRecord, type Peer, type PeerChannel } from '../others.ts'
import { units } from '../tokens.ts'
import { Failure, Panel, short, type Shared } from './common.tsx'
import { AskPeerToClose } from './peerSide.tsx'
import { ServiceRecordList, WhenAPartnerCloses } from './serviceRecord.tsx'

/**
 * While the node is stopped (as when its tab is closed): what the others see and do, from their own APIs through
 * the demo's server. The peers' view of their channels with us, with a close to ask for, and the monitoring
 * service's record for us; the chain's block, for the settle windows. Nothing here needs our node.
 */
export function AwayPanel({ shared }: { shared: Shared }) {
  const { config, address } = shared
  const peers = useLoad(() => Promise.all(config.peers.map(async (peer) => ({ peer, channels: await peerChannels(peer, address) }))), [shared.tick])
  const record = useLoad(() => serviceRecord(config, address), [shared.tick])
  const head = useLoad(() => blockNumber(config.rpc), [shared.tick])
  const channels = peers.data?.flatMap(({ peer, channels }) => channels.map((channel) => ({ peer, channel }))) ?? []
  return (
    <Panel title="While your node is stopped" id="away">
      <p>
        Your node <code title={address}>{short(address)}</code> is not running: nothing in this browser answers for it. This is what the others see and do
        meanwhile, from their own APIs{head.data !== undefined ? `, at block ${head.data}` : ''}.
      </p>
      <dl class="facts">
        <dt>Peers</dt>
        <dd>
          {!peers.data ? (
            '…'
          ) : channels.length === 0 ? (
            <span class="hint">no channel with you</span>
          ) : (
            <ul class="plain">
              {channels.map(({ peer, channel }) => (
                <AwayChannel key={`${peer.address}-${channel.channel_identifier}`} shared={shared} peer={peer} channel={channel} head={head.data} />
              ))}
            </ul>
          )}
        </dd>
        <dt>Monitoring service</dt>
        <dd data-testid="service-record">{record.data ? <ServiceRecordList shared={shared} record={record.data} /> : '…'}</dd>
      </dl>
      <WhenAPartnerCloses shared={shared} />
      <p class="hint">
        Start your node again (above) to find where the money went. With this tab closed instead, the terminal running <code>npm run demo</code> shows the
        service’s transactions (<code>devnet: monitor: sent MonitoringService.monitor(…)</code>).
      </p>
      <Failure error={peers.error ?? record.error ?? head.error} shared={shared} />
    </Panel>
  )
}

function AwayChannel({ shared, peer, channel, head }: { shared: Shared; peer: Peer; channel: PeerChannel; head: bigint | undefined }) {
  const token = shared.tokenOf(channel.token_address)
  const settle = channel.settle_block === undefined ? undefined : BigInt(channel.settle_block)
  return (
    <li data-testid="away-channel" data-peer={peer.address} data-state={channel.state}>
      <b>
        {peer.name} · {token.symbol} channel #{channel.channel_identifier}
      </b>
      : {peer.name} sees it {channel.state}
      {channel.state === 'opened' ? `, and could pay you ${units(channel.balance, token.decimals)} ${token.symbol}` : ''}
      {channel.closed_block ? `; closed in block ${channel.closed_block}` : ''}
      {settle !== undefined
        ? head === undefined || head <= settle
          ? `; its settle window ends at block ${settle}${head === undefined || head === settle ? '' : ` (in ${settle - head} blocks, about ${(settle - head) * BigInt(shared.config.blockTime)} s)`}`
          : `; its settle window ended at block ${settle}: it settles next`
        : ''}
      {channel.state === 'opened' ? <AskPeerToClose shared={shared} peer={peer} tokenAddress={channel.token_address} /> : null}
    </li>
  )
}
