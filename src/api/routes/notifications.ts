import type { ApiContext } from '../context.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'

/** GET /notifications: the conditions that need the user's attention. */
export function notificationsRoutes(resources: Resources, ctx: ApiContext): void {
  resources.add('/notifications', {
    GET: {
      doc: {
        summary: 'Conditions that need attention',
        description:
          'Ids: low_service_token (the UserDeposit balance is below the minimum services need), missing_gas_reserve (the native balance is below the gas estimated to close, settle and unlock every channel), ' +
          'version_outdated and version_security_warning (from the release feed, when the node has one), partner_equivocation (a partner signed two messages under one nonce), ' +
          'monitoring_unavailable and monitoring_reward_not_covered (monitoring on: no service registered or acknowledging, or a UserDeposit below the reward). Each stays listed while its condition holds and goes at the first check after it stops holding: ' +
          'reading is not destructive. Checked when the node is ready and then every few blocks. urgency is low, normal or critical.',
        responses: { 200: 'array of Notification objects (empty when nothing needs attention)' },
        schema: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: {
                enum: [
                  'low_service_token',
                  'missing_gas_reserve',
                  'version_outdated',
                  'version_security_warning',
                  'partner_equivocation',
                  'monitoring_unavailable',
                  'monitoring_reward_not_covered',
                ],
              },
              summary: { type: 'string' },
              body: { type: 'string' },
              urgency: { enum: ['low', 'normal', 'critical'] },
            },
            required: ['id', 'summary', 'body', 'urgency'],
          },
        },
      },
      handler: async (c) => json(c, await ctx.services.notifications.list()),
    },
  })
}
