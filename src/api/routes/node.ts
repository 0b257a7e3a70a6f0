import * as v from 'valibot'
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
export const statusAnswer = v.object({ status: v.picklist(['ready', 'syncing', 'unavailable']), blocks_to_sync: v.optional(decimalString) })
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
  pathfinding_service_address: v.nullable(v.string()),
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
        const { status, blocksToSync } = ctx().client.status
        if (status === 'ready') return json(c, { status: 'ready' })
        if (status === 'syncing') return json(c, { status: 'syncing', blocks_to_sync: blocksToSync })
        return json(c, { status: 'unavailable' })
      },
    },
  })
  resources.add('/settings', {
    GET: {
      doc: {
        summary: 'Node settings',
        responses: { 200: 'Settings object' },
        description:
          'Beyond Raiden: monitoring_enabled, whether the node asks the monitoring services to guard its channels while it is away (GET /monitoring shows them), monitoring_reward, what each request offers, in the smallest unit of the service token, and backup, the off-browser backup.',
        schema: settingsAnswer,
      },
      handler: (c) =>
        json(c, {
          pathfinding_service_address: ctx().pathfindingServiceAddress,
          monitoring_enabled: ctx().client.config.enableMonitoring,
          monitoring_reward: ctx().client.config.monitoringReward,
          backup: backupSettings(ctx().services.backup?.status()),
        }),
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
