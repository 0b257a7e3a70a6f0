import { get } from '../api.ts'
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
          <li key={e.id}>
            <time>{e.at.toLocaleTimeString()}</time> <b>{e.event}</b> <code>{JSON.stringify(e.data)}</code>
          </li>
        ))}
      </ol>
    </Panel>
  )
}
