import type { NodeClient } from '../actions/client.ts'
import type { Service } from './service.ts'

/**
 * The pathfinding client's background part (docs/decisions/0073): once the node is ready, it chooses the service and
 * announces every channel of ours to it (nothing kept the announcements of the last run), and whenever none is chosen
 * (unreachable, or `auto` finding none in the ServiceRegistry, or forgetting one that failed) it tries again every
 * `retryAfterMs`. A node that neither announces nor asks (private, or no service named) does nothing more than tell
 * its partners of its channels at the start (not private: docs/decisions/0074).
 */
export class PathfindingService implements Service {
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false

  constructor(private readonly client: NodeClient) {}

  start(): void {
    const { pathfinder } = this.client
    // Our partners hear of every channel of ours at a start: what they heard last may be older (docs/decisions/0074).
    pathfinder.announceToPartners()
    if (!pathfinder.announces && !pathfinder.asks) return
    void this.look(true)
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.client.pathfinder.stop()
    this.client.gossip.stop()
  }

  private async look(first: boolean): Promise<void> {
    if (this.stopped) return
    const { pathfinder } = this.client
    const before = pathfinder.view().service
    const service = await pathfinder.service().catch(() => undefined)
    // Chosen before the start (a payment asked): the start's announcements still go.
    if (first && service && before) pathfinder.announceAll()
    if (this.stopped) return
    // Looked at again: a service that failed since (`auto` forgets it then) is chosen anew.
    this.timer = setTimeout(() => void this.look(false), this.client.config.pathfinding.retryAfterMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }
}
