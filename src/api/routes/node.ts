import * as v from 'valibot'
import type { NodeStatus } from '../../node/notices.ts'
import type { BackupStatus } from '../../node/services/backup/backupService.ts'
import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'
import { addressString, decimalString } from '../schema.ts'

/** The backup service's status as the API spells it (snake_case, like the rest of GET /settings). */
function backupSettings(status: BackupStatus | undefined) {
  if (!status) return null
  const { lastPush, lastError, bytesPushed, ...rest } = status
  return {
    ...rest,
    bytes_pushed: bytesPushed,
    last_push: lastPush ?? null,
    last_error: lastError ?? null,
    restored: status.restored ?? null,
  }
}

/** The answers of these routes as a client receives them (openapi.json). */
export const addressAnswer = v.object({ our_address: addressString })
export const versionAnswer = v.object({ version: v.string() })
const since = v.pipe(v.string(), v.description('ISO 8601 UTC, with milliseconds'))
export const statusAnswer = v.object({
  status: v.picklist(['ready', 'syncing', 'unavailable']),
  blocks_to_sync: v.optional(
    v.pipe(decimalString, v.description("confirmed blocks not synced yet: the chain's confirmed head as the node knows it minus its synced block")),
  ),
  behind_since: v.optional(v.pipe(since, v.description('syncing after the first sync: when the node fell behind the chain'))),
  chain_unreachable_since: v.optional(v.pipe(since, v.description('unavailable: since when the chain endpoint fails'))),
  last_error: v.optional(v.pipe(v.object({ code: v.string(), message: v.string() }), v.description("unavailable: the endpoint's last failure"))),
  serving: v.optional(
    v.pipe(
      v.literal(true),
      v.description('the first sync is done: every route answers, though the node is behind the chain or cannot reach it (what needs the chain may fail)'),
    ),
  ),
  role: v.optional(
    v.pipe(
      v.picklist(['active', 'standby']),
      v.description(
        'only for a node whose store is in PostgreSQL (sluice serve --database): active, it holds the store and works; standby, another instance does, and this one takes over when that one dies (every other route 503)',
      ),
    ),
  ),
})
export const contractsAnswer = v.object({
  contracts_version: v.string(),
  token_network_registry_address: v.string(),
  secret_registry_address: v.string(),
  service_registry_address: v.string(),
  user_deposit_address: v.string(),
  monitoring_service_address: v.string(),
  one_to_n_address: v.string(),
})
export const shutdownAnswer = v.object({ status: v.literal('shutdown') })
const backupCopy = { version: v.string(), at: v.pipe(v.number(), v.description('unix ms')), bytes: v.number() }
export const settingsAnswer = v.object({
  pathfinding_service_address: v.pipe(
    v.nullable(v.string()),
    v.description('the pathfinding service in use (its URL), else as configured (a URL or auto), null without one'),
  ),
  routing_mode: v.pipe(v.picklist(['pfs', 'private', 'local']), v.description('--routing-mode (docs/decisions/0073)')),
  pathfinding_max_paths: v.number(),
  pathfinding_max_fee: v.pipe(
    decimalString,
    v.description('--pathfinding-max-fee: the most a payment may cost in mediation fees, and the most a route request may cost'),
  ),
  pathfinding_iou_timeout: decimalString,
  pathfinding: v.pipe(
    v.object({
      service: v.nullable(v.object({ url: v.string(), address: addressString, price: decimalString })),
      unavailable: v.nullable(v.object({ reason: v.string(), since: v.pipe(v.number(), v.description('unix ms')) })),
      announcements: v.object({
        waiting: v.pipe(v.number(), v.description('capacity and fee updates sent and not acknowledged yet, or waiting for a service')),
        acknowledged: v.number(),
      }),
      heard: v.pipe(
        v.object({
          held: v.pipe(v.number(), v.description('capacity and fee updates held, the newest of each channel and participant, ours included')),
          accepted: v.pipe(v.number(), v.description('updates received from peers that were valid and newer than those held')),
          refused: v.pipe(
            v.number(),
            v.description("updates received that were forged, stale, of another chain, of a channel not open in our graph, or over the peer's rate"),
          ),
          sent: v.pipe(v.number(), v.description('updates sent to our partners: ours, and those passed on')),
        }),
        v.description('the announcements the node hears from its partners and passes on, which its own routes use (docs/decisions/0074)'),
      ),
    }),
    v.description(
      'the pathfinding client: the service chosen, why none can be used now (payments route locally meanwhile), the announcements of our channels, what the node heard',
    ),
  ),
  monitoring_enabled: v.boolean(),
  monitoring_reward: decimalString,
  backup: v.pipe(
    v.nullable(
      v.object({
        url: v.string(),
        last_push: v.nullable(v.object({ ...backupCopy, ms: v.number() })),
        pushes: v.number(),
        bytes_pushed: v.number(),
        behind: v.pipe(v.boolean(), v.description('the state moved since the last copy acknowledged')),
        last_error: v.nullable(v.object({ code: v.string(), message: v.string(), at: v.number() })),
        failures: v.pipe(v.number(), v.description('failures in a row')),
        restored: v.pipe(v.nullable(v.object(backupCopy)), v.description('the copy this start restored')),
      }),
    ),
    v.description('The off-browser backup (docs/decisions/0034), null without a backup URL'),
  ),
})
export type AddressAnswer = v.InferOutput<typeof addressAnswer>
export type VersionAnswer = v.InferOutput<typeof versionAnswer>
export type StatusAnswer = v.InferOutput<typeof statusAnswer>
export type ContractsAnswer = v.InferOutput<typeof contractsAnswer>
export type ShutdownAnswer = v.InferOutput<typeof shutdownAnswer>
export type SettingsAnswer = v.InferOutput<typeof settingsAnswer>

/**
 * The status as GET /status and the status push event show it (docs/rest-api.md). `ready` only when the first sync
 * is done and the node follows the chain within a few blocks; `syncing` during the first sync, and after it while the
 * node is behind (`behind_since`); `unavailable` while the chain cannot be reached (`chain_unreachable_since`,
 * `last_error`) and once stopped. `serving` tells a node past its first sync, whose every route answers.
 */
export function statusAnswerOf(status: NodeStatus): Omit<StatusAnswer, 'blocks_to_sync'> & { blocks_to_sync?: bigint } {
  const { chain } = status
  if (status.status === 'stopped') return { status: 'unavailable' }
  if (status.status === 'ready' && chain.state === 'following') return { status: 'ready' }
  const serving = status.status === 'ready' ? { serving: true as const } : {}
  if (chain.state === 'unreachable')
    return {
      status: 'unavailable',
      blocks_to_sync: status.blocksToSync,
      chain_unreachable_since: new Date(chain.since).toISOString(),
      last_error: chain.error,
      ...serving,
    }
  const behind = status.status === 'ready' && chain.state === 'behind' ? { behind_since: new Date(chain.since).toISOString() } : {}
  return { status: 'syncing', blocks_to_sync: status.blocksToSync, ...behind, ...serving }
}

/** Who the node is and how it runs: address, version, status, settings, contracts, shutdown. */
export function nodeRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/address', {
    GET: {
      doc: { summary: "The node's address", responses: { 200: 'Address object' }, schema: addressAnswer },
      handler: (c) => json(c, { our_address: ctx().client.address }),
    },
  })
  resources.add('/version', {
    GET: {
      doc: {
        summary: 'The node software version',
        responses: { 200: 'Version object' },
        schema: versionAnswer,
      },
      handler: (c) => json(c, { version: ctx().version }),
    },
  })
  resources.add('/status', {
    GET: {
      doc: {
        summary: 'Whether the node is ready, syncing (with the blocks still to sync) or unavailable',
        description: 'Answered during the initial sync too. blocks_to_sync is a decimal string, as the API description says.',
        responses: { 200: 'Status object' },
        schema: statusAnswer,
      },
      handler: (c) => {
        const { role } = ctx()
        return json(c, { ...statusAnswerOf(ctx().client.status), ...(role ? { role: role() } : {}) })
      },
    },
  })
  resources.add('/settings', {
    GET: {
      doc: {
        summary: 'Node settings',
        responses: { 200: 'Settings object' },
        description:
          'pathfinding_service_address is the service in use, else as configured. Beyond Raiden: routing_mode, pathfinding_max_paths, pathfinding_max_fee, pathfinding_iou_timeout and pathfinding, the pathfinding client (docs/decisions/0073); monitoring_enabled, whether the node asks the monitoring services to guard its channels while it is away (GET /monitoring shows them), monitoring_reward, what each request offers, in the smallest unit of the service token, and backup, the off-browser backup.',
        schema: settingsAnswer,
      },
      handler: (c) => {
        const { config, pathfinder } = ctx().client
        const view = pathfinder.view()
        return json(c, {
          pathfinding_service_address: view.service?.url ?? view.serviceAddress ?? null,
          routing_mode: view.routingMode,
          pathfinding_max_paths: config.pathfindingMaxPaths,
          pathfinding_max_fee: config.pathfindingMaxFee,
          pathfinding_iou_timeout: config.pathfindingIouTimeout,
          pathfinding: {
            service: view.service ?? null,
            unavailable: view.unavailable ?? null,
            announcements: view.announcements,
            heard: view.heard ?? { held: 0, accepted: 0, refused: 0, sent: 0 },
          },
          monitoring_enabled: ctx().client.config.enableMonitoring,
          monitoring_reward: ctx().client.config.monitoringReward,
          backup: backupSettings(ctx().services.backup?.status()),
        })
      },
    },
  })
  resources.add('/contracts', {
    GET: {
      doc: {
        summary: 'The on-chain contracts the node uses',
        responses: { 200: 'Contracts object' },
        schema: contractsAnswer,
      },
      handler: (c) => {
        const { deployment } = ctx().client.config
        return json(c, {
          contracts_version: deployment.contracts_version,
          token_network_registry_address: deployment.contracts.TokenNetworkRegistry.address,
          secret_registry_address: deployment.contracts.SecretRegistry.address,
          service_registry_address: deployment.contracts.ServiceRegistry.address,
          user_deposit_address: deployment.contracts.UserDeposit.address,
          monitoring_service_address: deployment.contracts.MonitoringService.address,
          one_to_n_address: deployment.contracts.OneToN.address,
        })
      },
    },
  })
  resources.add('/shutdown', {
    POST: {
      doc: {
        summary: 'Stops the node',
        description: 'Answers at once; later requests get 503 while the node finishes what it is committing and stops.',
        responses: { 200: 'Shutdown result' },
        schema: shutdownAnswer,
      },
      handler: (c) => {
        ctx().shutdown()
        return json(c, { status: 'shutdown' })
      },
    },
  })
}
