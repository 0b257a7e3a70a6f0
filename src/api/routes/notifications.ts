import * as v from 'valibot'
import type { NotificationId, NotificationUrgency } from '../../node/services/notifications.ts'
import type { ApiContextRef } from '../context.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'

// Every id the service raises, checked by the compiler: the list written by hand had lost channels_waiting_sync.
const ids = {
  low_service_token: true,
  missing_gas_reserve: true,
  version_outdated: true,
  version_security_warning: true,
  partner_equivocation: true,
  monitoring_unavailable: true,
  monitoring_reward_not_covered: true,
  channels_waiting_sync: true,
  transaction_at_risk: true,
} satisfies Record<NotificationId, true>
const urgencies = { low: true, normal: true, critical: true } satisfies Record<NotificationUrgency, true>

/** A Notification object as a client receives it (openapi.json). */
export const notificationSchema = v.object({
  id: v.picklist(Object.keys(ids) as NotificationId[]),
  summary: v.string(),
  body: v.string(),
  urgency: v.picklist(Object.keys(urgencies) as NotificationUrgency[]),
})
export type NotificationAnswer = v.InferOutput<typeof notificationSchema>

/** GET /notifications: the conditions that need the user's attention. */
export function notificationsRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/notifications', {
    GET: {
      doc: {
        summary: 'Conditions that need attention',
        description:
          'Ids: low_service_token (the UserDeposit balance is below the minimum services need), missing_gas_reserve (the native balance is below the gas estimated to close, settle and unlock every channel), ' +
          'version_outdated and version_security_warning (from the release feed, when the node has one), partner_equivocation (a partner signed two messages under one nonce), ' +
          'monitoring_unavailable and monitoring_reward_not_covered (monitoring on: no service registered or acknowledging, or a UserDeposit below the reward), channels_waiting_sync (channels of a node restored from a copy wait for their partner), transaction_at_risk (critical: a transaction with a deadline, such as an update of a partner close or a secret registration, may miss it: the cap, the balance or the chain; raised and cleared as it happens). Each stays listed while its condition holds and goes at the first check after it stops holding: ' +
          'reading is not destructive. Checked when the node is ready and then every few blocks. urgency is low, normal or critical.',
        responses: { 200: 'array of Notification objects (empty when nothing needs attention)' },
        schema: v.array(notificationSchema),
      },
      handler: async (c) => json(c, await ctx().services.notifications.list()),
    },
  })
}
