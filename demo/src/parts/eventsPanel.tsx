import { get, type Notification } from '../api.ts'
import { useLoad } from '../hooks.ts'
import type { RecordedEvent } from '../nodeRecord.ts'
import { units } from '../tokens.ts'
import { Failure, Panel, sameAddress, type Shared } from './common.tsx'

/** A `node_error` the event stream pushed: not recorded by the node, so shown for this page's life only. */
export type BackgroundError = { at: Date; where: string; message: string; code?: string }

/**
 * The node's notifications, and the events it recorded (nodeRecord.ts), newest first, each numbered by its place
 * in the node's record: the same numbers after a reload, in another tab, or against `sluice serve`.
 */
export function EventsPanel({ shared, problems }: { shared: Shared; problems: BackgroundError[] }) {
  const notifications = useLoad(() => get<Notification[]>('/notifications'), [shared.tick])
  const record = shared.record
  return (
    <Panel title="Events" id="events">
      {notifications.data?.length ? (
        <ul class="notifications">
          {notifications.data.map((n) => (
            <li key={n.id} class={n.urgency}>
              <b>{n.summary}</b> {n.body}
            </li>
          ))}
        </ul>
      ) : null}
      {problems.length ? (
        <div class="problems">
          <h3>Errors in the background since this page loaded</h3>
          <ul>
            {problems.map((p) => (
              <li key={`${p.at.getTime()}-${p.message}`}>
                <time>{p.at.toLocaleTimeString()}</time> {p.where}: {p.message}
                {p.code ? ` (${p.code})` : ''}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <Failure error={record?.error} shared={shared} />
      <p class="hint">
        {!record
          ? 'Reading what the node recorded…'
          : record.count === 0
            ? 'Nothing recorded yet: fund the node and open a channel.'
            : `${record.count} events recorded by the node${record.count > record.events.length ? `; the last ${record.events.length} shown` : ''}, newest first.`}
      </p>
      <ol class="log" data-testid="event-log">
        {record?.events.map((e) => (
          <li key={e.n} data-testid="event">
            <span class="n" data-testid="event-number">
              {e.n}
            </span>
            <div class="entry">
              <time>{new Date(e.log_time).toLocaleTimeString()}</time> <b>{eventName(e)}</b> <span>{summary(shared, e)}</span>
              <details>
                <summary>data</summary>
                <pre>{JSON.stringify(withoutNumber(e), null, 2)}</pre>
              </details>
            </div>
          </li>
        ))}
      </ol>
    </Panel>
  )
}

function withoutNumber({ n: _, ...entry }: RecordedEvent): Record<string, unknown> {
  return entry
}

/** The names the event stream (GET /events) gives the same events. */
const NAMES: Record<string, string> = {
  EventPaymentSentSuccess: 'payment_sent_success',
  EventPaymentSentFailed: 'payment_sent_failed',
  EventPaymentReceivedSuccess: 'payment_received_success',
  EventMediationSucceeded: 'payment_mediated',
  EventWithdrawExpired: 'channel_withdraw_expired',
}

export function eventName(e: RecordedEvent): string {
  if (e.event === 'EventChannelStateChanged' && typeof e.state === 'string') return `channel_${e.state}`
  return NAMES[e.event] ?? e.event.replace(/^Event/, '').replace(/[A-Z]/g, (c, i: number) => `${i ? '_' : ''}${c.toLowerCase()}`)
}

const text = (v: unknown) => (typeof v === 'string' ? v : undefined)

/** The few things a person reads first: who, how much (in the token's units), what happened. */
function summary(shared: Shared, e: RecordedEvent): string {
  const directory = shared.record?.directory
  const network = text(e.token_network_identifier)
  const token = text(e.token_address) ?? (network ? directory?.tokens[network.toLowerCase()] : undefined)
  const amount = (v: unknown) => (typeof v !== 'string' ? '' : token ? shared.amount(v, token) : units(v))
  const name = (v: unknown) => (typeof v === 'string' ? shared.nameOf(v) : '?')
  const channel = text(e.channel_identifier)
  const participants = network && channel ? directory?.channels[`${network.toLowerCase()}:${channel}`] : undefined
  const partner = participants?.find((p) => !sameAddress(p, shared.address))
  const inChannel = `${token ? `${shared.tokenOf(token).symbol} ` : ''}channel #${channel ?? '?'}${partner ? ` with ${shared.nameOf(partner)}` : ''}`
  switch (e.event) {
    case 'EventPaymentSentSuccess': {
      const via = Array.isArray(e.route) && e.route.length > 1 ? ` via ${(e.route as string[]).slice(0, -1).map(name).join(' → ')}` : ''
      return `${amount(e.amount)} to ${name(e.target)}${via}`
    }
    case 'EventPaymentSentFailed':
      return `${amount(e.amount)} to ${name(e.target)}: ${text(e.reason) ?? ''}`
    case 'EventPaymentReceivedSuccess':
      return `${amount(e.amount)} from ${name(e.initiator)}`
    case 'EventMediationSucceeded':
      return `${amount(e.amount)} passed on`
    case 'EventChannelStateChanged':
      return inChannel
    case 'EventChannelDeposit':
      return `${name(e.participant)}: ${amount(e.total_deposit)} deposited in all · ${inChannel}`
    case 'EventChannelWithdraw':
      return `${name(e.participant)}: ${amount(e.total_withdraw)} withdrawn in all · ${inChannel}`
    case 'EventWithdrawExpired':
      return `the withdraw to ${amount(e.total_withdraw)} in all expired · ${inChannel}`
    case 'EventMessageRejected':
      return `${text(e.message_type) ?? 'a message'} from ${name(e.sender)}: ${text(e.reason) ?? ''}`
    case 'EventActionRejected':
      return `${text(e.action) ?? 'an action'}: ${text(e.reason) ?? ''}`
    default:
      return [channel ? inChannel : undefined, text(e.reason)].filter(Boolean).join(': ')
  }
}
