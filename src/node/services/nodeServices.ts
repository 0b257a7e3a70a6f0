import type { NodeClient } from '../actions/client.ts'
import { TokenNetworkConnections } from './connections.ts'
import { MonitoringRequests } from './monitoring.ts'
import { NodeNotifications } from './notifications.ts'
import { PartnerLinks } from './partnerLinks.ts'
import { PathfindingService } from './pathfinding.ts'
import { BackupService } from './backup/backupService.ts'
import type { Restored } from './backup/restore.ts'
import type { Service } from './service.ts'

/**
 * The node's background services: the one place a service is registered (service.ts says when they start and
 * stop). Each is made here from the node's client; the node starts them in this order once it is ready and stops
 * them in the reverse order. To add one, write its module (made from the client, a `Service`) and add it here; a
 * service the config does not ask for is `undefined`. The REST API reaches them as `ctx.services.<name>`.
 */
export function createServices(client: NodeClient, started: { restored?: Restored } = {}) {
  const { backupUrl, backup } = client.config
  /** The requests to the monitoring services (`enableMonitoring`, GET /monitoring); the notifications look at it. */
  const monitoring = client.config.enableMonitoring ? new MonitoringRequests(client) : undefined
  return {
    /** The transport's way to each open channel's partner, opened ahead of the first message. */
    partnerLinks: new PartnerLinks(client),
    /** The connection manager (PUT/DELETE /connections). */
    connections: new TokenNetworkConnections(client),
    monitoring,
    /** The notifications of GET /notifications. */
    notifications: new NodeNotifications(client, { monitoring }),
    /** The pathfinding service chosen and told of our channels (docs/decisions/0073); its state in GET /settings. */
    pathfinding: new PathfindingService(client),
    /** Sealed copies to the backup server (`backupUrl`, docs/decisions/0034); its status in GET /settings. */
    backup: backupUrl ? new BackupService(client, { ...backup, url: backupUrl }, started.restored) : undefined,
  } satisfies Record<string, Service | undefined>
}

export type NodeServices = ReturnType<typeof createServices>
