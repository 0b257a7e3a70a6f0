import { apiChannelState } from '../channelJson.ts'
import type { ApiContextRef } from '../context.ts'
import { addressSchema as address, decimalSchema as decimal } from '../schema.ts'
import type { Resources } from '../resource.ts'
import { json } from '../resource.ts'

const time = { type: ['string', 'null'], format: 'date-time', description: 'ISO 8601, UTC, with milliseconds' }
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
        schema: {
          type: 'object',
          properties: {
            enabled: { type: 'boolean' },
            reward: { ...decimal, description: 'what each request offers, in the smallest unit of the service token' },
            user_deposit: {
              type: ['object', 'null'],
              description: 'as last read, before signing a request (at most once a block); null before the first read',
              properties: { effective_balance: decimal, covers_reward: { type: 'boolean' }, block_number: decimal },
              required: ['effective_balance', 'covers_reward', 'block_number'],
            },
            registry_read_at: { ...time, description: 'when the ServiceRegistry was last read; null before' },
            services: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  address,
                  url: { type: 'string', description: 'the URL the service published in the registry' },
                  acknowledged: { type: 'integer', description: 'requests it acknowledged since the node started' },
                  last_acknowledged_at: time,
                  waiting: { type: 'integer', description: 'requests sent to it and not yet acknowledged (resent with backoff)' },
                },
                required: ['address', 'url', 'acknowledged', 'last_acknowledged_at', 'waiting'],
              },
            },
            channels: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  token_address: address,
                  token_network_address: address,
                  channel_identifier: decimal,
                  partner_address: address,
                  state: { enum: ['opened', 'closed', 'settled', 'gone'] },
                  requested_nonce: {
                    ...decimal,
                    type: ['string', 'null'],
                    description: "the nonce of the partner's newest proof a request was signed for; null before the first",
                  },
                  requested_at: time,
                  acknowledged: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: { service_address: address, nonce: decimal, acknowledged_at: time },
                      required: ['service_address', 'nonce', 'acknowledged_at'],
                    },
                  },
                },
                required: [
                  'token_address',
                  'token_network_address',
                  'channel_identifier',
                  'partner_address',
                  'state',
                  'requested_nonce',
                  'requested_at',
                  'acknowledged',
                ],
              },
            },
          },
          required: ['enabled', 'reward', 'user_deposit', 'registry_read_at', 'services', 'channels'],
        },
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
