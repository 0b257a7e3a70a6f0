import { get } from '../api.ts'
import { units } from '../chain.ts'
import { useLoad } from '../hooks.ts'
import { Panel, type Shared } from './common.tsx'

export type LoggedEvent = { id: string; event: string; data: Record<string, unknown>; at: Date }
type Notification = { id: string; summary: string; body: string; urgency: string; created?: string }

/** The node's notifications, and every event GET /api/v1/events pushes, newest first. */
export function EventsPanel({ shared, events }: { shared: Shared; events: LoggedEvent[] }) {
  const notifications = useLoad(() => get<Notification[]>('/notifications'), [shared.tick])
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
      <ol class="log" data-testid="event-log" reversed>
        {events.map((e) => (
          <li key={`${e.id}-${e.event}`}>
            <time>{e.at.toLocaleTimeString()}</time> <b>{e.event}</b> {summary(shared, e.data)}
            <details>
              <summary>data</summary>
              <pre>{JSON.stringify(e.data, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>
    </Panel>
  )
}

/** The few fields a person reads first: who, how much, which state. */
function summary(shared: Shared, data: Record<string, unknown>): string {
  const parts: string[] = []
  const who = data.target ?? data.initiator ?? data.partner_address ?? data.participant ?? data.sender
  if (typeof who === 'string') parts.push(shared.nameOf(who))
  if (typeof data.amount === 'string') parts.push(units(data.amount))
  for (const key of ['state', 'status', 'total_deposit', 'total_withdraw', 'reason', 'message'] as const) {
    const value = data[key]
    if (typeof value === 'string') parts.push(key.startsWith('total_') ? `${key.replace('total_', '')} ${units(value)}` : value)
  }
  return parts.join(' · ')
}
