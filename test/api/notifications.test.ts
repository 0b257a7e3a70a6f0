import fc from 'fast-check'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseEther } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintTokens } from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { compareVersions } from '../../src/node/services/notifications.ts'
import { eventually } from '../integration/support/eventually.ts'
import { createApiNode, startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'

let net: ApiNet
let a: ApiNode
let b: ApiNode
let devnet: ReturnType<typeof createDevnetClient>

/** A real release feed on loopback; `feed` is what it answers next (a status and a body). */
let feedServer: Server
let feedUrl: string
let feed: { status: number; body: string } = { status: 200, body: '{"latest":"0.1.0","security":[]}' }
let feedRequests = 0
/** When set, the next request to the feed waits for it before being answered. */
let holdNext: Promise<void> | undefined

beforeAll(async () => {
  net = await startApiNet({ nodes: 2 })
  ;[a, b] = net.nodes as [ApiNode, ApiNode]
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  feedServer = createServer(async (req, res) => {
    feedRequests++
    // The answer is what the feed says when the request comes, even if it is held back.
    // ?latest=X answers a feed whose latest release is X (and 0.1.0 insecure), whatever `feed` holds.
    const latest = new URL(req.url ?? '/', 'http://feed').searchParams.get('latest')
    const answer = latest ? { status: 200, body: JSON.stringify({ latest, security: ['0.1.0'] }) } : feed
    const hold = holdNext
    holdNext = undefined
    await hold
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body)
  })
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/releases.json`
})
afterAll(async () => {
  await new Promise((resolve) => feedServer?.close(resolve))
  await net?.stopAll()
})

const ids = async (n: ApiNode = a) => {
  const r = await n.get('/notifications')
  expect(r.status).toBe(200)
  return (r.body as { id: string }[]).map((x) => x.id).sort()
}
type Listed = { id: string; summary: string; body: string; urgency: string }
const notification = async (id: string, n: ApiNode = a) => ((await n.get('/notifications')).body as Listed[]).find((x) => x.id === id)
/** Mines one block and waits until the node has synced it (the checks run every block in these tests). */
const block = async () => {
  await devnet.mine({ blocks: 1 })
  const head = await devnet.getBlockNumber()
  await a.node.client.waitForBlock(head)
}

describe('GET /notifications as served (no release feed)', () => {
  it('lists low_service_token at start (empty UserDeposit), never a version notification; reading is not destructive', async () => {
    const r = await a.get('/notifications')
    expect(r.status).toBe(200)
    expect(Array.isArray(r.body)).toBe(true)
    expect(r.body).toEqual([
      {
        id: 'low_service_token',
        summary: 'Service token balance too low',
        body: expect.stringMatching(/is 0 \(planned withdrawals excluded\), below the minimum of 5500000000000000000/),
        urgency: 'normal',
      },
    ])
    expect((await a.get('/notifications')).body).toEqual(r.body)
  })

  it('other methods are 405', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await a.request(method, '/notifications')
      expect(r.status, method).toBe(405)
      expect(r.headers.get('allow')).toBe('GET')
    }
  })
})

describe('each notification is raised by its condition and cleared when it no longer holds', () => {
  beforeAll(() => {
    a.node.services.notifications.configure({ version: '0.1.0', minServiceTokenBalance: 100n, checkEveryBlocks: 1n })
  })

  it('low_service_token: goes once the UDC holds the minimum, comes back when a planned withdrawal lowers it', async () => {
    expect(await ids()).toContain('low_service_token')
    await mintTokens(a.node.client.chain, a.node.client.queue, { token: net.deployment.serviceToken, amount: 1000n })
    expect((await a.request('POST', '/user_deposit', { total_deposit: '99' })).status).toBe(200)
    await block()
    await eventually(async () => expect((await notification('low_service_token'))?.body).toMatch(/is 99 /))
    expect((await a.request('POST', '/user_deposit', { total_deposit: '100' })).status).toBe(200)
    await block()
    await eventually(async () => expect(await ids()).not.toContain('low_service_token'))
    expect((await a.request('POST', '/user_deposit', { planned_withdraw_amount: '1' })).status).toBe(200)
    await block()
    await eventually(async () => expect(await ids()).toContain('low_service_token'))
    expect((await a.request('POST', '/user_deposit', { total_deposit: '200' })).status).toBe(200)
    await block()
    await eventually(async () => expect(await ids()).not.toContain('low_service_token'))
  })

  it('missing_gas_reserve: only with channels to close; raised when the balance is below their gas, cleared when topped up', async () => {
    // No channel: nothing to close, settle or unlock, so even an empty account needs no reserve.
    await devnet.setBalance({ address: a.node.address, value: 0n })
    await block()
    await block()
    expect(await ids()).not.toContain('missing_gas_reserve')
    await devnet.setBalance({ address: a.node.address, value: parseEther('10000') })

    await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 10n })
    await block()
    expect(await ids()).not.toContain('missing_gas_reserve')
    await devnet.setBalance({ address: a.node.address, value: 1000n })
    await block()
    await eventually(async () => expect(await ids()).toContain('missing_gas_reserve'))
    const raised = await notification('missing_gas_reserve')
    expect(raised).toMatchObject({ summary: 'Native balance below the gas reserve', urgency: 'critical' })
    expect(raised?.body).toMatch(/holds 1000 wei, but closing, settling and unlocking its 1 channel\(s\) is estimated to need \d+ wei/)
    await devnet.setBalance({ address: a.node.address, value: parseEther('10000') })
    await block()
    await eventually(async () => expect(await ids()).not.toContain('missing_gas_reserve'))
  })
})

describe('version notifications from a release feed', () => {
  beforeAll(() => {
    feed = { status: 200, body: JSON.stringify({ latest: '0.2.0', security: ['0.1.0'] }) }
    a.node.services.notifications.configure({ version: '0.1.0', releaseFeedUrl: feedUrl, minServiceTokenBalance: 0n, checkEveryBlocks: 1n })
  })

  it('an outdated version with a security problem raises both', async () => {
    const r = await a.get('/notifications')
    expect(r.body).toEqual([
      {
        id: 'version_outdated',
        summary: 'Your version is outdated',
        body: expect.stringMatching(/running version 0\.1\.0; the latest release is 0\.2\.0/),
        urgency: 'normal',
      },
      {
        id: 'version_security_warning',
        summary: 'Security update required',
        body: expect.stringMatching(/Version 0\.1\.0.*known security problem/),
        urgency: 'critical',
      },
    ])
    expect(feedRequests).toBeGreaterThan(0)
  })

  it('a feed that cannot be read leaves them as they were', async () => {
    for (const broken of [
      { status: 500, body: '{}' },
      { status: 200, body: 'not json' },
      { status: 200, body: '{"latest": 2}' },
      { status: 200, body: '{"latest": "0.3.0", "security": "0.1.0"}' },
    ]) {
      feed = broken
      // Two more reads of the feed: checks run one after the other, so the first has been applied.
      for (let i = 0; i < 2; i++) {
        const asked = feedRequests
        await block()
        await eventually(() => expect(feedRequests).toBeGreaterThan(asked))
      }
      expect(await ids()).toEqual(['version_outdated', 'version_security_warning'])
    }
  })

  it('a newer release without a security note raises only version_outdated; the current release clears both', async () => {
    feed = { status: 200, body: JSON.stringify({ latest: '0.1.1', security: ['0.0.9'] }) }
    await block()
    await eventually(async () => expect(await ids()).toEqual(['version_outdated']))
    feed = { status: 200, body: JSON.stringify({ latest: '0.1.0' }) }
    await block()
    await eventually(async () => expect(await ids()).toEqual([]))
    // An older "latest" (a feed behind the node) is no reason to warn either.
    feed = { status: 200, body: JSON.stringify({ latest: '0.0.5', security: [] }) }
    await block()
    await block()
    expect(await ids()).toEqual([])
  })

  it('options changed while a check waits for the feed: the list waits for a check under the new ones, and the old check changes nothing', async () => {
    const notifications = a.node.services.notifications
    const options = (latest: string) => ({
      version: '0.1.0',
      releaseFeedUrl: `${feedUrl}?latest=${latest}`,
      minServiceTokenBalance: 0n,
      checkEveryBlocks: 1_000n,
    })
    // Each way round: the first feed's answer would be wrong under the second.
    for (const [first, second, expected] of [
      ['0.1.0', '0.2.0', ['version_outdated', 'version_security_warning']],
      ['0.2.0', '0.1.0', ['version_security_warning']],
    ] as const) {
      let release!: () => void
      holdNext = new Promise((resolve) => (release = resolve))
      const asked = feedRequests
      notifications.configure(options(first))
      void notifications.check()
      await eventually(() => expect(feedRequests).toBeGreaterThan(asked))
      notifications.configure(options(second))
      const listed = a.get('/notifications')
      release()
      expect(((await listed).body as { id: string }[]).map((x) => x.id).sort()).toEqual(expected)
      expect(await ids()).toEqual(expected)
    }
  })

  it('a check asked for while one is in flight is another check after it: it sees what changed since', async () => {
    const notifications = a.node.services.notifications
    feed = { status: 200, body: JSON.stringify({ latest: '0.1.0' }) }
    notifications.configure({ version: '0.1.0', releaseFeedUrl: feedUrl, minServiceTokenBalance: 0n, checkEveryBlocks: 1_000n })
    await notifications.check()
    expect(await ids()).toEqual([])
    let release!: () => void
    holdNext = new Promise((resolve) => (release = resolve))
    const asked = feedRequests
    const first = notifications.check()
    await eventually(() => expect(feedRequests).toBeGreaterThan(asked))
    // A release comes out while the first check waits for its (older) answer.
    feed = { status: 200, body: JSON.stringify({ latest: '0.2.0' }) }
    const second = notifications.check()
    const third = notifications.check()
    release()
    await Promise.all([first, second, third])
    // The second (and the third, which shares it) read the feed again, after the release came out.
    expect(feedRequests).toBeGreaterThanOrEqual(asked + 2)
    expect(await ids()).toEqual(['version_outdated'])
  })

  it('a host that starts the services later (servicesWhen, as the page does): no check before, a list asked for meanwhile checks, and the checks run once they start; never after a stop', async () => {
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    const notifications = { version: '0.1.0', releaseFeedUrl: `${feedUrl}?latest=0.2.0`, minServiceTokenBalance: 0n, checkEveryBlocks: 1n }
    const node = await createApiNode(net, anvilKeys[5]!, { servicesWhen: () => gate, notifications })
    const stoppedEarly = await createApiNode(net, anvilKeys[6]!, { servicesWhen: () => gate, notifications })
    try {
      const asked = feedRequests
      await Promise.all([node.run(), stoppedEarly.run()])
      await stoppedEarly.stop()
      await devnet.mine({ blocks: 2 })
      await node.client.waitForBlock(await devnet.getBlockNumber())
      expect(feedRequests).toBe(asked)
      // Asked before the services start: it checks rather than answer an empty list.
      expect((await node.services.notifications.list()).map((x) => x.id).sort()).toEqual(['version_outdated', 'version_security_warning'])
      expect(feedRequests).toBe(asked + 1)
      open()
      // Started: a check at once, then one every block; the stopped node's service never starts.
      await eventually(() => expect(feedRequests).toBe(asked + 2))
      await devnet.mine({ blocks: 1 })
      await eventually(() => expect(feedRequests).toBe(asked + 3))
    } finally {
      await node.stop()
    }
  })

  it('semantic-version order: numeric parts, pre-releases before their release', () => {
    expect(compareVersions('0.1.0', '0.2.0')).toBe(-1)
    expect(compareVersions('0.10.0', '0.9.9')).toBe(1)
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBe(-1)
    expect(compareVersions('1.0.0-rc.2', '1.0.0-rc.10')).toBe(-1)
    expect(compareVersions('v1.2.3', '1.2.3+build.5')).toBe(0)
    expect(compareVersions('garbage', '1.0.0')).toBe(0)
    fc.assert(
      fc.property(fc.tuple(fc.nat(20), fc.nat(20), fc.nat(20)), fc.tuple(fc.nat(20), fc.nat(20), fc.nat(20)), (x, y) => {
        const [vx, vy] = [x.join('.'), y.join('.')]
        // Antisymmetric; a sum, since toBe tells 0 from -0 (which the negation of an equal pair gives).
        expect(compareVersions(vx, vy) + compareVersions(vy, vx)).toBe(0)
        expect(compareVersions(vx, vx)).toBe(0)
      }),
    )
  })
})

describe('GET /notifications: fuzzing', () => {
  it('any method, query and body: never a 500, and the list does not change by being asked', async () => {
    const before = await a.get('/notifications')
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
        fc.string(),
        fc.oneof(fc.jsonValue(), fc.string()),
        async (method, query, body) => {
          const r = await a.request(
            method,
            `/notifications?${encodeURIComponent(query)}`,
            method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
          )
          expect([200, 405]).toContain(r.status)
          if (r.status === 200) expect(r.body).toEqual(before.body)
          else expect(typeof r.body.errors).toBe('string')
        },
      ),
      { numRuns: 60 },
    )
    expect((await a.get('/notifications')).body).toEqual(before.body)
    expect(a.internalErrors).toEqual([])
  })
})
