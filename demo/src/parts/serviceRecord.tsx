import type { MonitorCall, MonitorChannel, MonitorStep } from '../api.ts'
import { CHANNEL_TIMEOUTS } from '../config.ts'
import type { ServiceRecord } from '../others.ts'
import { monitorBlocks } from '../tokens.ts'
import { sameAddress, short, type Shared } from './common.tsx'

/**
 * What the monitoring service holds and did for our node, as its own API says (GET /channels, /monitor_calls through
 * the demo's server): per channel, the proof it holds, the partner's close, its monitor call and its reward.
 */
export function ServiceRecordList({ shared, record }: { shared: Shared; record: ServiceRecord }) {
  if (record.channels.length === 0) return <span class="hint">nothing yet: it holds a proof once a partner has paid you</span>
  return (
    <ul class="plain">
      {record.channels.map((c) => (
        <ServiceChannel key={`${c.token_network_address}-${c.channel_identifier}`} shared={shared} channel={c} calls={record.calls} />
      ))}
    </ul>
  )
}

function ServiceChannel({ shared, channel, calls }: { shared: Shared; channel: MonitorChannel; calls: MonitorCall[] }) {
  const ours = (a: string) => sameAddress(a, shared.address)
  const held = channel.requests.find((r) => ours(r.requester))
  const duty = channel.duties.find((d) => ours(d.requester))
  const call = calls.find((c) => sameAddress(c.token_network_address, channel.token_network_address) && c.channel_identifier === channel.channel_identifier)
  const partner = held?.partner ?? call?.closing_participant ?? channel.closed_by
  const partnerName = partner ? shared.nameOf(partner) : 'the partner'
  const token = shared.tokens.find((t) => t.network && sameAddress(t.network, channel.token_network_address))
  const lines: string[] = []
  if (held) lines.push(`holds your newest proof of ${partnerName}’s payments (nonce ${held.nonce}) since ${new Date(held.received_at).toLocaleTimeString()}`)
  if (channel.closed_by && channel.closed_block)
    lines.push(`${ours(channel.closed_by) ? 'you' : shared.nameOf(channel.closed_by)} closed it in block ${channel.closed_block}`)
  if (duty) lines.push(monitorWords(duty.monitor, call?.nonce))
  if (duty?.reward) lines.push(rewardWords(shared, duty.reward))
  if (channel.settled_block) lines.push(`settled in block ${channel.settled_block}`)
  return (
    <li data-testid="service-channel" data-monitor={duty?.monitor.status ?? 'none'}>
      <b>
        {token ? `${token.symbol} ` : ''}channel #{channel.channel_identifier} with {partnerName}
      </b>
      : {lines.join('; ')}
      {duty?.monitor.transaction_hash ? <span class="hint"> (transaction {short(duty.monitor.transaction_hash)})</span> : null}
    </li>
  )
}

/** The service's monitor call for us (records.ts of src/monitor names the states), in words. */
function monitorWords(step: MonitorStep, nonce: string | undefined): string {
  switch (step.status) {
    case 'due':
      return `it puts your proof on-chain once the contract lets it${step.note ? `: ${step.note}` : ''}`
    case 'sending':
    case 'sent':
      return 'it is putting your proof on-chain now'
    case 'done':
      return `it put your proof${nonce ? ` (nonce ${nonce})` : ''} on-chain${step.block_number ? ` in block ${step.block_number}` : ''}`
    case 'not_needed':
      return `it had nothing to do${step.note ? `: ${step.note}` : ''}`
    case 'missed':
      return `it missed the window${step.note ? `: ${step.note}` : ''}`
    default:
      return `it could not put your proof on-chain${step.note ? `: ${step.note}` : ''}`
  }
}

function rewardWords(shared: Shared, reward: MonitorStep & { amount: string }): string {
  const amount = shared.amount(reward.amount, shared.deployment.serviceToken)
  switch (reward.status) {
    case 'due':
      return `its reward, ${amount} from your user deposit, once the window is over`
    case 'sending':
    case 'sent':
      return `it is claiming its reward, ${amount}`
    case 'claimed':
      return `it took its reward, ${amount}, from your user deposit${reward.block_number ? ` in block ${reward.block_number}` : ''}`
    default:
      return `no reward${reward.note ? `: ${reward.note}` : ''}`
  }
}

/** What happens when, once a partner closes: the settle window, your node, the monitoring service. In plain words. */
export function WhenAPartnerCloses({ shared }: { shared: Shared }) {
  const window = CHANNEL_TIMEOUTS.settle
  return (
    <p class="hint" data-testid="when-a-partner-closes">
      When a partner closes a channel, its close carries only what you paid it. What it paid you counts only if your newest proof of its payments reaches the
      chain before the settle window ends: {window} blocks, about {window * shared.config.blockTime} s here. Your node sends it at once whenever it runs. While
      it does not, the monitoring service sends it, but the contract lets it only in the window’s last {monitorBlocks(shared.settleTimeoutMin)} blocks; the
      service then takes its reward from your user deposit.
    </p>
  )
}
