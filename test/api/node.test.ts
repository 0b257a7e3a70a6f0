import { getAddress } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { serveNode, startApiNet, type ApiNet, createApiNode } from './support/apiNet.ts'

let net: ApiNet
beforeAll(async () => {
  net = await startApiNet({ nodes: 1 })
})
afterAll(() => net?.stopAll())

describe('node information', () => {
  it('GET /address is the node address, EIP-55', async () => {
    const r = await net.nodes[0]!.get('/address')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toMatch(/^application\/json/)
    expect(r.body).toEqual({ our_address: net.nodes[0]!.node.address })
    expect(getAddress(r.body.our_address)).toBe(r.body.our_address)
  })

  it('GET /version, /settings, /status', async () => {
    const n = net.nodes[0]!
    expect((await n.get('/version')).body).toEqual({ version: '0.1.0' })
    expect((await n.get('/settings')).body).toEqual({
      pathfinding_service_address: null,
      // Routing locally, no pathfinding service (docs/decisions/0073): Raiden's other defaults. No channel: nothing heard (0074).
      routing_mode: 'local',
      pathfinding_max_paths: 3,
      pathfinding_max_fee: '50000000000000000',
      pathfinding_iou_timeout: '200000',
      pathfinding: {
        service: null,
        unavailable: null,
        announcements: { waiting: 0, acknowledged: 0 },
        heard: { held: 0, accepted: 0, refused: 0, sent: 0 },
      },
      monitoring_enabled: false,
      monitoring_reward: '5000000000000000000',
      backup: null,
    })
    expect((await n.get('/monitoring')).body).toEqual({
      enabled: false,
      reward: '5000000000000000000',
      user_deposit: null,
      registry_read_at: null,
      services: [],
      channels: [],
    })
    expect(await n.get('/status')).toMatchObject({ status: 200, body: { status: 'ready' } })
  })

  it('GET /contracts names every deployed contract', async () => {
    const c = net.deployment.contracts
    expect((await net.nodes[0]!.get('/contracts')).body).toEqual({
      contracts_version: '0.40.0',
      token_network_registry_address: c.TokenNetworkRegistry.address,
      secret_registry_address: c.SecretRegistry.address,
      service_registry_address: c.ServiceRegistry.address,
      user_deposit_address: c.UserDeposit.address,
      monitoring_service_address: c.MonitoringService.address,
      one_to_n_address: c.OneToN.address,
    })
  })

  it('an unknown path, or a trailing slash, is 404 with an errors body', async () => {
    for (const path of ['/nothing', '/address/', '/channels/x/y/z']) {
      const r = await net.nodes[0]!.get(path)
      expect(r.status, path).toBe(404)
      expect(r.body, path).toEqual({ errors: 'invalid endpoint', code: 'NOT_FOUND' })
    }
  })

  it('a method a path does not serve is 405 with Allow and an errors body', async () => {
    const r = await net.nodes[0]!.request('DELETE', '/address')
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toBe('GET')
    expect(typeof r.body.errors).toBe('string')
  })
})

describe('503 while syncing, then ready', () => {
  it('answers /status with blocks to sync, and /version, while the rest is 503', async () => {
    const node = await createApiNode(net, anvilKeys[5]!)
    const served = await serveNode(node)
    try {
      const status = await served.get('/status')
      expect(status.status).toBe(200)
      expect(status.body.status).toBe('syncing')
      expect(status.body.blocks_to_sync).toMatch(/^\d+$/)
      // A page checks that the node it reached is of its own build before the first sync ends.
      expect((await served.get('/version')).status).toBe(200)
      const address = await served.get('/address')
      expect(address.status).toBe(503)
      expect(address.body.errors).toMatch(/Try again later/)
      await node.run()
      expect((await served.get('/status')).body).toEqual({ status: 'ready' })
      expect((await served.get('/address')).status).toBe(200)
    } finally {
      await served.server.close(100)
      await node.stop()
    }
  })
})

describe('POST /shutdown', () => {
  it('answers shutdown, then every request is 503', async () => {
    const node = await createApiNode(net, anvilKeys[6]!)
    await node.run()
    const served = await serveNode(node)
    try {
      expect(await served.request('POST', '/shutdown')).toMatchObject({ status: 200, body: { status: 'shutdown' } })
      expect(served.shutdowns).toBe(1)
      for (const path of ['/address', '/status', '/nothing']) {
        const r = await served.get(path)
        expect(r.status, path).toBe(503)
        expect(r.body.errors).toMatch(/shutting down/)
      }
    } finally {
      await served.server.close(100)
      await node.stop()
    }
  })
})
