// The node in this page against the world it is for: headless peers (`sluice serve` processes) reached over libp2p
// through a real `sluice relay`, on the run's anvil, every call made as a dApp makes it: fetch('/api/v1/...')
// through the service worker.
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import type { PushEvent } from '../../worker/subscription.ts'
import type { Peer, Peers } from './commands/peers.ts'
import { api, type Answer } from './support/api.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken, deployToken } from './support/token.ts'
import { eventually } from '../integration/support/eventually.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')

const key = generatePrivateKey()
const address = privateKeyToAddress(key)
let world: Peers
let hub: Peer
let far: Peer
let token: Address
let node: SluiceBrowserNode
/** What the concurrent payments with one identifier paid (the winner's amount). */
let paidAtOnce = 0n

beforeAll(async () => {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  ;[world, { token }] = await Promise.all([commands.startPeers(rpc, deployment, 2), deployTestToken(rpc, deployment, key, 1000n)])
  ;[hub, far] = world.peers as [Peer, Peer]
  // The hub has a channel to the far peer, so the page can pay the far peer through it.
  expect((await commands.peerRequest(hub.api, 'POST', `/_testing/tokens/${token}/mint`, { to: hub.address, value: '500' })).status).toBe(200)
  // Once the hub has seen the token's registration.
  await eventually(async () => {
    const opened = await commands.peerRequest(hub.api, 'PUT', '/channels', { token_address: token, partner_address: far.address, total_deposit: '200' })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
  }, 20_000)
  node = await startNode(nodeOptions({ key, relay: [world.relay] }))
}, 120_000)

afterAll(async () => {
  await node?.stop()
  await commands.closeAllTabs()
  await commands.stopPeers()
})

describe('the node in the page, with headless peers through a relay', () => {
  test('every endpoint group answers through the service worker as sluice serve does; it pays a peer directly and one through a hub', async () => {
    // Node
    expect(await api('GET', '/address')).toEqual({ status: 200, body: { our_address: address } })
    expect((await api('GET', '/version')).body).toEqual({ version: expect.any(String) })
    expect((await api('GET', '/status')).body).toMatchObject({ status: 'ready' })
    expect((await api('GET', '/settings')).status).toBe(200)
    expect((await api('GET', '/contracts')).body).toMatchObject({ token_network_registry_address: deployment.contracts.TokenNetworkRegistry.address })
    expect((await api('GET', '/openapi.json')).body).toMatchObject({ openapi: expect.stringMatching(/^3\./) })

    // Tokens: register one, list, look up
    const fresh = await deployToken(rpc, key)
    expect((await api('PUT', `/tokens/${fresh}`)).status).toBe(201)
    expect((await api('GET', '/tokens')).body).toEqual(expect.arrayContaining([token, fresh]))
    expect((await api('GET', `/tokens/${token}`)).status).toBe(200)
    expect((await api('POST', `/_testing/tokens/${token}/mint`, { to: address, value: '100' })).status).toBe(200)

    // Channels: open with a deposit, deposit more, read them every way
    const opened = await api('PUT', '/channels', { token_address: token, partner_address: hub.address, total_deposit: '300' })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
    expect(opened.body).toMatchObject({ partner_address: hub.address, state: 'opened', total_deposit: '300', balance: '300' })
    expect((await api('PATCH', `/channels/${token}/${hub.address}`, { total_deposit: '400' })).body).toMatchObject({ total_deposit: '400' })
    expect((await api('GET', '/channels')).body).toEqual(expect.arrayContaining([expect.objectContaining({ partner_address: hub.address })]))
    expect((await api('GET', `/channels/${token}`)).body).toHaveLength(1)
    expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toMatchObject({ balance: '400' })
    expect((await api('GET', `/tokens/${token}/partners`)).body).toEqual([expect.objectContaining({ partner_address: hub.address })])

    // Payments: direct to the hub, then to the far peer through it (once the page's node has seen the hub's channel)
    const direct = await api('POST', `/payments/${token}/${hub.address}`, { amount: '5', identifier: '1' })
    expect(direct.status, JSON.stringify(direct.body)).toBe(200)
    expect(direct.body).toMatchObject({ initiator_address: address, target_address: hub.address, amount: '5', identifier: '1' })
    let mediated: Answer | undefined
    await expect
      .poll(
        async () => {
          mediated = await api('POST', `/payments/${token}/${far.address}`, { amount: '3', identifier: '2' })
          return mediated.status
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(200)
    expect(mediated!.body).toMatchObject({ target_address: far.address, amount: '3', identifier: '2' })
    await expect
      .poll(async () => (await commands.peerRequest(far.api, 'GET', `/payments/${token}`)).body, { timeout: 20_000 })
      .toEqual([expect.objectContaining({ event: 'EventPaymentReceivedSuccess', initiator: address, amount: '3', identifier: '2' })])
    const history = (await api('GET', `/payments/${token}`)).body as { event: string; identifier: string }[]
    expect(history.filter((p) => p.event === 'EventPaymentSentSuccess').map((p) => p.identifier)).toEqual(['1', '2'])
    expect((await api('GET', `/payments/${token}/${hub.address}`)).status).toBe(200)
    expect((await api('GET', '/pending_transfers')).body).toEqual([])
    expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toMatchObject({ balance: '392' })

    // The rest of the API: connections, notifications, debug, state export
    expect((await api('GET', '/connections')).status).toBe(200)
    expect((await api('GET', '/_debug/node_events')).status).toBe(200)
    expect((await api('GET', '/notifications')).status).toBe(200)
    expect((await api('GET', '/_debug/blockchain_events/network')).status).toBe(200)
    expect((await api('GET', '/_state/export')).body).toMatchObject({ meta: { address } })

    // Bad input is a clear 4xx in JSON and changes nothing; an unknown path is answered here, never by the host
    const before = (await api('GET', `/channels/${token}/${hub.address}`)).body
    for (const [method, path, body, status] of [
      ['PUT', '/channels', '{"token_address": ', 400],
      ['PUT', '/channels', { token_address: token }, 400],
      ['POST', `/payments/${token}/${hub.address}`, { amount: '-1' }, 409],
      ['POST', `/payments/${token}/${hub.address}`, { amount: '6', identifier: '1' }, 409],
      ['PATCH', `/channels/${token}/${hub.address}`, { total_withdraw: '100000' }, 409],
      ['GET', '/no/such/thing', undefined, 404],
    ] as const) {
      const answer = await api(method, path, body)
      expect(answer.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status)
      expect(typeof answer.body.errors).toBe('string')
    }
    expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toEqual(before)

    // Withdraw (the hub co-signs over libp2p)
    const withdrawn = await api('PATCH', `/channels/${token}/${hub.address}`, { total_withdraw: '10' })
    expect(withdrawn.status, JSON.stringify(withdrawn.body)).toBe(200)
    expect(withdrawn.body).toMatchObject({ total_withdraw: '10' })
  }, 120_000)

  test('a payment received shows up live on EventSource through the service worker and on the proxy’s subscribe', async () => {
    const source = new EventSource('/api/v1/events')
    const pushed: PushEvent[] = []
    const off = node.subscribe((e) => pushed.push(e))
    const streamed: Record<string, unknown>[] = []
    source.addEventListener('payment_received_success', (e) => streamed.push(JSON.parse(e.data)))
    try {
      await new Promise<void>((resolve) => source.addEventListener('status', () => resolve(), { once: true }))
      const paid = await commands.peerRequest(hub.api, 'POST', `/payments/${token}/${address}`, { amount: '4', identifier: '31' })
      expect(paid.status, JSON.stringify(paid.body)).toBe(200)
      const expected = expect.objectContaining({
        event: 'EventPaymentReceivedSuccess',
        initiator: hub.address,
        amount: '4',
        identifier: '31',
        token_address: token,
      })
      await expect.poll(() => streamed, { timeout: 20_000 }).toEqual([expected])
      await expect.poll(() => pushed.filter((e) => e.event === 'payment_received_success').map((e) => e.data), { timeout: 20_000 }).toEqual([expected])
    } finally {
      source.close()
      off()
    }
  }, 60_000)

  test('50 identical and 50 conflicting payments at once with one identifier, through the service worker and the proxy: one payment', async () => {
    const before = (await api('GET', `/channels/${token}/${hub.address}`)).body.balance as string
    const identifier = '4000'
    // Half through fetch (the service worker), half through the proxy (the request channel); identical and
    // conflicting requests interleaved, all in flight together.
    const requests = Array.from({ length: 100 }, (_, i) => ({ amount: i % 2 === 0 ? 2 : 3 + (i >> 1), viaProxy: i % 4 >= 2 }))
    const answers = await Promise.all(
      requests.map(async ({ amount, viaProxy }): Promise<Answer> => {
        if (!viaProxy) return api('POST', `/payments/${token}/${hub.address}`, { amount: String(amount), identifier })
        try {
          return { status: 200, body: await node.pay(token, hub.address, { amount: BigInt(amount), identifier: BigInt(identifier) }) }
        } catch (error) {
          const { status, code, message } = error as { status: number; code: string; message: string }
          return { status, body: { code, errors: message } }
        }
      }),
    )
    const paid = answers.filter((a) => a.status === 200)
    expect(paid.length, answers.map((a) => a.status).join(',')).toBeGreaterThan(0)
    const amount = paid[0]!.body.amount as string
    for (const [i, answer] of answers.entries()) {
      if (String(requests[i]!.amount) === amount) expect(answer.body).toEqual(paid[0]!.body)
      else expect(answer).toMatchObject({ status: 409, body: { code: 'CONFLICT' } })
    }
    await expect
      .poll(
        async () => {
          const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { identifier: string; event: string }[]
          return received.filter((p) => p.identifier === identifier && p.event === 'EventPaymentReceivedSuccess').map((p) => p)
        },
        { timeout: 20_000 },
      )
      .toEqual([expect.objectContaining({ amount })])
    paidAtOnce = BigInt(amount)
    expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toMatchObject({ balance: String(BigInt(before) - paidAtOnce) })
  }, 60_000)

  test('a tab reloaded with a payment in flight resumes it; the same POST again pays nothing twice', async () => {
    // The node moves to a tab of its own, which the test can reload.
    await node.stop()
    const tab = await commands.openTab()
    const options = { rpc, deployment, key, relay: [world.relay], confirmations: 0, pollingInterval: 50, environment: 'development' }
    expect(await commands.inTab(tab, 'start', [options])).toMatchObject({ ok: true, value: { leader: true } })
    const pay = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amount: '7', identifier: '777' }) }
    const path = `/api/v1/payments/${token}/${hub.address}`
    await commands.inTab(tab, 'send', [path, pay])
    // The reload kills the worker wherever the payment is: before it was stored, or on its way to the hub.
    await commands.reloadTab(tab, false)
    expect(await commands.inTab(tab, 'start', [options])).toMatchObject({ ok: true })

    // A client that lost the answer sends the same payment again: the first one's result, never a second payment.
    const again = await commands.inTab<{ ok: boolean; value: Answer }>(tab, 'fetch', [path, pay])
    expect(again.value.status, JSON.stringify(again.value.body)).toBe(200)
    expect(again.value.body).toMatchObject({ identifier: '777', amount: '7' })
    await expect
      .poll(
        async () => {
          const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { identifier: string; event: string }[]
          return received.filter((p) => p.identifier === '777' && p.event === 'EventPaymentReceivedSuccess').length
        },
        { timeout: 20_000 },
      )
      .toBe(1)
    const channel = await commands.inTab<{ ok: boolean; value: Answer }>(tab, 'fetch', [`/api/v1/channels/${token}/${hub.address}`])
    // 400 deposited, 5 + 3 + 7 and the concurrent payment paid, 4 received, 10 withdrawn.
    expect(channel.value.body).toMatchObject({ balance: String(400n - 5n - 3n - 7n - paidAtOnce + 4n - 10n), total_withdraw: '10' })
    await commands.inTab(tab, 'stop', [])
  }, 120_000)
})
