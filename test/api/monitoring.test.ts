import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { ApiContext } from '../../src/api/context.ts'
import { Resources } from '../../src/api/resource.ts'
import { monitoringAnswer, monitoringRoutes } from '../../src/api/routes/monitoring.ts'
import type { MonitoringView } from '../../src/node/services/monitoring.ts'
import { expectAnswer } from './support/answers.ts'

const [service, other, token, tokenNetwork, partner] = ['11', '22', '33', '44', '55'].map((b) => `0x${b.repeat(20)}` as const) as [
  `0x${string}`,
  `0x${string}`,
  `0x${string}`,
  `0x${string}`,
  `0x${string}`,
]

/** GET /monitoring of an API whose node has this monitoring service (undefined: monitoring off). */
async function monitoring(view: MonitoringView | undefined) {
  const ctx = { client: { config: { monitoringReward: 7n } }, services: { monitoring: view && { view: () => view } } } as unknown as ApiContext
  const resources = new Resources()
  monitoringRoutes(resources, () => ctx)
  const app = new Hono()
  resources.mount(app, () => {})
  const r = await app.request('/monitoring')
  expect(r.status).toBe(200)
  return r.json()
}

describe('GET /monitoring', () => {
  it('answers what openapi.json documents, with monitoring off and with services, requests and acknowledgements of every kind', async () => {
    expect(expectAnswer(monitoringAnswer, await monitoring(undefined))).toMatchObject({ enabled: false, reward: '7', services: [], channels: [] })
    const at = Date.UTC(2026, 10, 28, 12)
    const channel = { tokenNetwork, token, partner, acknowledged: [] }
    const full = expectAnswer(
      monitoringAnswer,
      await monitoring({
        enabled: true,
        reward: 7n,
        userDeposit: { effectiveBalance: 10n ** 20n, coversReward: true, block: 123n },
        registry: { readAt: at },
        services: [
          { address: service, url: 'https://ms.example', acknowledged: 2, lastAcknowledgedAt: at, waiting: 0 },
          { address: other, url: 'https://other.example', acknowledged: 0, waiting: 1 },
        ],
        channels: [
          { ...channel, channelId: 1n, state: 'closing', request: { nonce: 9n, at }, acknowledged: [{ service, nonce: 9n, at }] },
          { ...channel, channelId: 2n, state: 'gone' },
          { ...channel, channelId: 3n, state: 'opened' },
        ],
      }),
    )
    expect(full.channels.map((c) => [c.state, c.requested_nonce, c.requested_at])).toEqual([
      ['opened', '9', new Date(at).toISOString()],
      ['gone', null, null],
      ['opened', null, null],
    ])
    expect(full.services[1]!.last_acknowledged_at).toBeNull()
    expect(full.user_deposit).toEqual({ effective_balance: (10n ** 20n).toString(), covers_reward: true, block_number: '123' })
  })
})
