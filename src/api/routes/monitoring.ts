import { apiChannelState } from '../channelJson.ts'
import type { ApiContextRef } from '../context.ts'
import * as v from 'valibot'
import { addressString as address, decimalString as decimal } from '../schema.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'

const isoTime = v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, with milliseconds'))
const time = v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('ISO 8601, UTC, with milliseconds; null before the first'))
const count = (description: string) => v.pipe(v.number(), v.integer(), v.minValue(0), v.description(description))

/** GET /monitoring's answer as a client receives it (openapi.json). */
export const monitoringAnswer = v.object({
  enabled: v.boolean(),
  reward: v.pipe(decimal, v.description('what each request offers, in the smallest unit of the service token')),
  user_deposit: v.pipe(
    v.nullable(v.object({ effective_balance: decimal, covers_reward: v.boolean(), block_number: decimal })),
    v.description('as last read, before signing a request (at most once a block); null before the first read'),
  ),
  registry_read_at: v.pipe(time, v.description('when the ServiceRegistry was last read; null before')),
  services: v.array(
    v.object({
      address,
      url: v.pipe(v.string(), v.description('the URL the service published in the registry')),
      acknowledged: count('requests it acknowledged since the node started'),
      last_acknowledged_at: time,
      waiting: count('requests sent to it and not yet acknowledged (resent with backoff)'),
    }),
  ),
  channels: v.array(
    v.object({
      token_address: address,
      token_network_address: address,
      channel_identifier: decimal,
      partner_address: address,
      state: v.picklist(['opened', 'closed', 'settled', 'gone']),
      requested_nonce: v.pipe(v.nullable(decimal), v.description("the nonce of the partner's newest proof a request was signed for; null before the first")),
      requested_at: time,
      acknowledged: v.array(v.object({ service_address: address, nonce: decimal, acknowledged_at: isoTime })),
    }),
  ),
})
export type MonitoringAnswer = v.InferOutput<typeof monitoringAnswer>
const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString())

/** GET /monitoring: what the node asked the monitoring services to guard, and what they acknowledged (docs/decisions/0035). */
export function monitoringRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/monitoring', {
    GET: {
      doc: {
        summary: 'The monitoring services that guard the channels while the node is away, and what each holds',
        description:
          'With monitoring on (sluice serve --enable-monitoring, startNode({ enableMonitoring: true })), the node sends every registered service of the ServiceRegistry a RequestMonitoring for the newest balance proof each partner sent, ' +
          'once the UserDeposit covers the reward, and resends it until the service acknowledges it. services: those the registry lists now, with how many requests each acknowledged and how many wait for it; ' +
          'channels: per channel the newest request signed and, per service, the newest it acknowledged. Kept in memory: after a restart the node asks again, and the lists fill as the services answer. ' +
          'With monitoring off: enabled false and empty lists.',
        responses: { 200: 'Monitoring object' },
        schema: monitoringAnswer,
      },
      handler: (c) => {
        const monitoring = ctx().services.monitoring
        const reward = ctx().client.config.monitoringReward
        if (!monitoring) return json(c, { enabled: false, reward, user_deposit: null, registry_read_at: null, services: [], channels: [] })
        const view = monitoring.view()
        return json(c, {
          enabled: true,
          reward,
          user_deposit: view.userDeposit
            ? { effective_balance: view.userDeposit.effectiveBalance, covers_reward: view.userDeposit.coversReward, block_number: view.userDeposit.block }
            : null,
          registry_read_at: iso(view.registry?.readAt),
          services: view.services.map((s) => ({
            address: s.address,
            url: s.url,
            acknowledged: s.acknowledged,
            last_acknowledged_at: iso(s.lastAcknowledgedAt),
            waiting: s.waiting,
          })),
          channels: view.channels.map((ch) => ({
            token_address: ch.token,
            token_network_address: ch.tokenNetwork,
            channel_identifier: ch.channelId,
            partner_address: ch.partner,
            state: ch.state === 'gone' ? 'gone' : apiChannelState[ch.state],
            requested_nonce: ch.request?.nonce ?? null,
            requested_at: iso(ch.request?.at),
            acknowledged: ch.acknowledged.map((a) => ({ service_address: a.service, nonce: a.nonce, acknowledged_at: iso(a.at) })),
          })),
        })
      },
    },
  })
}
