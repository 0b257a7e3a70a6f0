import type { NodeClient } from '../node/actions/client.ts'
import type { NodeServices } from '../node/services/nodeServices.ts'
import type { EventLog } from './eventLog.ts'

export type Environment = 'development' | 'production'

/** What every resource module gets: the node's client and services, and the settings the API reports. */
export type ApiContext = {
  /** What the routes call the actions with. */
  client: NodeClient
  services: NodeServices
  /** The package version (GET /version). */
  version: string
  /** `production` disables token registration and minting (501), as the Raiden node's default does. */
  environment: Environment
  /** The API's own base path, for links (partners' `channel`). */
  basePath: string
  /** POST /shutdown: stops the API and the node; set by whoever serves the API. */
  shutdown(): void
  /** Aborted when the API closes (shutdown or internal error): long-lived answers (event streams) end then. */
  closing: AbortSignal
  /** The node's recent push events, numbered, for GET /events and its Last-Event-ID replay. */
  events: EventLog
  /** Every request must carry `Authorization: Bearer <token>` (`--api-token-file`): openapi.json says so. */
  tokenRequired: boolean
  /**
   * A node that shares its store with a standby (`sluice serve --database`, docs/decisions/0076): whether it is the
   * active one (it holds the store's lease) or stands by. GET /status says so as `role`; absent for other nodes.
   */
  role?: () => 'active' | 'standby'
}

/**
 * The context as the routes take it: read by their handlers when a request comes, never when they register, so
 * the route table (and openapi.json) can be built without a node (describeApi.ts).
 */
export type ApiContextRef = () => ApiContext
