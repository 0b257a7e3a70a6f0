import * as v from 'valibot'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import type { Api } from '../../src/api/app.ts'
import { stringify } from '../../src/api/bigintJson.ts'
import { pushEventSchema, toPushEvent } from '../../src/api/routes/events.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import { expectAnswer } from './support/answers.ts'
import { eventually } from '../integration/support/eventually.ts'
import { serveNode, startApiNet, type ApiNet, type ApiNode, createApiNode } from './support/apiNet.ts'
import { openEvents, type SseClient, type SseEvent } from './support/sse.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'

let net: ApiNet
beforeAll(async () => {
  net = await startApiNet({ nodes: 3 })
})
afterAll(() => net?.stopAll())

/** How many streams follow an API's event log: every stream must give its subscription back. */
const listeners = (api: { api: Api }) => api.api.events.listenerCount
const named =
  (name: string, data: Record<string, unknown> = {}) =>
  (e: SseEvent) =>
    e.event === name && Object.entries(data).every(([k, v]) => e.data[k] === v)
const mine = (blocks: number) => createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).mine({ blocks })

const seqOf = (id: string | undefined) => Number(/^[0-9a-z]+-(\d+)$/.exec(id ?? '')?.[1] ?? Number.NaN)

/** Every event a stream read is one openapi.json documents: its name, its id and its data's fields. */
function expectDocumented(stream: SseClient) {
  for (const { event, id, data } of stream.events) expectAnswer(pushEventSchema, { event, id, data }, event)
}

/** The ids of one run that grow by one from the first (which, for a status that starts a stream, may repeat once). */
function expectIncreasingIds(stream: SseClient) {
  const [first, ...rest] = stream.events
  const run = first!.id!.split('-')[0]
  for (const e of stream.events) expect(e.id!.split('-')[0]).toBe(run)
  const seqs = rest.map((e) => seqOf(e.id))
  expect(seqs).toEqual(seqs.map((_, i) => seqOf(first!.id) + i + 1))
}

describe('GET /events', () => {
  it('starts with the status, sends heartbeat comments, and gives its listener back when the client leaves', async () => {
    const a = net.nodes[0]!
    const before = listeners(a)
    const stream = await openEvents(`${a.url}/events?heartbeat=1`)
    expect(stream.status).toBe(200)
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
    // The status is true as of the last event the node logged, whose id it carries.
    expect(await stream.next(() => true)).toEqual({ event: 'status', data: { status: 'ready' }, id: a.api.events.headId, retry: 2000 })
    expect(listeners(a)).toBe(before + 1)
    await eventually(() => expect(stream.comments.filter((c) => c === 'heartbeat').length).toBeGreaterThanOrEqual(2), 5_000)
    stream.close()
    await eventually(() => expect(listeners(a)).toBe(before), 5_000)
  })

  it("pushes a channel's whole life and its payments to both participants, amounts as decimal strings", async () => {
    const [a, b] = net.nodes as [(typeof net.nodes)[0], (typeof net.nodes)[0]]
    const [sa, sb] = await Promise.all([openEvents(`${a.url}/events`), openEvents(`${b.url}/events`)])
    const tokenNetwork = net.tokenNetwork
    const channel = await openChannelOnChain(a.node.client, { tokenNetwork, partner: b.node.address, totalDeposit: 1000n })
    const ids = { token_network_address: tokenNetwork, token_address: net.token, channel_identifier: String(channel.id) }
    for (const [stream, partner] of [
      [sa, b.node.address],
      [sb, a.node.address],
    ] as const) {
      expect((await stream.next(named('channel_opened'))).data).toEqual({ ...ids, partner_address: partner, state: 'opened' })
      expect((await stream.next(named('channel_deposit', { participant: a.node.address }))).data).toEqual({
        ...ids,
        partner_address: partner,
        participant: a.node.address,
        total_deposit: '1000',
      })
    }

    await b.node.client.waitForBlock(channel.openedBlock)
    await depositOnChain(b.node.client, { tokenNetwork, partner: a.node.address, totalDeposit: 500n })
    for (const stream of [sa, sb]) expect((await stream.next(named('channel_deposit', { participant: b.node.address }))).data.total_deposit).toBe('500')

    const paid = await sendPayment(a.node.client, { token: net.token, target: b.node.address, amount: 70n, identifier: 1234n })
    const sent = await sa.next(named('payment_sent_success'))
    expect(sent.data).toEqual({
      event: 'EventPaymentSentSuccess',
      amount: '70',
      target: b.node.address,
      identifier: '1234',
      token_address: net.token,
      secret_hash: paid.secrethash,
      route: [b.node.address],
      fee: '0',
      log_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    })
    const received = await sb.next(named('payment_received_success'))
    expect(received.data).toMatchObject({
      event: 'EventPaymentReceivedSuccess',
      amount: '70',
      initiator: a.node.address,
      identifier: '1234',
      token_address: net.token,
      secret_hash: paid.secrethash,
    })

    await a.node.client.dispatch({ type: 'withdraw', tokenNetwork, channelId: channel.id, totalWithdraw: 100n })
    for (const stream of [sa, sb])
      expect((await stream.next(named('channel_withdraw'))).data).toMatchObject({ ...ids, participant: a.node.address, total_withdraw: '100' })

    await a.node.client.dispatch({ type: 'closeChannel', tokenNetwork, channelId: channel.id })
    expect((await sa.next(named('channel_closing'))).data).toMatchObject({ ...ids, state: 'closing' })
    for (const stream of [sa, sb]) await stream.next(named('channel_closed'))
    await mine(Number(channel.settleTimeout) + 2)
    for (const stream of [sa, sb]) expect((await stream.next(named('channel_settled'), 30_000)).data).toMatchObject({ ...ids, state: 'settled' })

    for (const stream of [sa, sb]) {
      expectIncreasingIds(stream)
      expectDocumented(stream)
      // Every event is JSON with its name, and nothing in it is a JSON number (amounts are decimal strings).
      for (const e of stream.events) for (const value of Object.values(e.data)) expect(typeof value).not.toBe('number')
      stream.close()
    }
  })

  it('a client that reconnects with Last-Event-ID gets every event it missed, once and in order, then the live ones', async () => {
    const [, b, c] = net.nodes as [ApiNode, ApiNode, ApiNode]
    await openChannelOnChain(c.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 1000n })
    await net.synced()
    const pay = (identifier: bigint) => sendPayment(c.node.client, { token: net.token, target: b.node.address, amount: 1n, identifier })
    const received = named('payment_received_success')

    const first = await openEvents(`${b.url}/events`)
    await pay(1n)
    const seen = await first.next(received)
    first.close()
    // While the client is away: four payments arrive.
    for (const id of [2n, 3n, 4n, 5n]) await pay(id)

    const resumed = await openEvents(`${b.url}/events`, { lastEventId: seen.id! })
    await pay(6n)
    await resumed.next(named('payment_received_success', { identifier: '6' }))
    expect(resumed.events.filter(received).map((e) => e.data.identifier)).toEqual(['2', '3', '4', '5', '6'])
    // No status first: the stream goes on right after the event the client saw, with nothing between left out.
    expect(seqOf(resumed.events[0]!.id)).toBe(seqOf(seen.id) + 1)
    expect(resumed.events[0]!.retry).toBe(2000)
    expectIncreasingIds({ ...resumed, events: [seen, ...resumed.events] })
    resumed.close()

    // A new EventSource cannot set headers: the same id as a query parameter; a header, when given, wins.
    for (const [url, header] of [
      [`${b.url}/events?last_event_id=${seen.id}`, undefined],
      [`${b.url}/events?last_event_id=garbage`, seen.id!],
    ] as const) {
      const again = await openEvents(url, header ? { lastEventId: header } : {})
      await again.next(named('payment_received_success', { identifier: '6' }))
      expect(
        again.events.filter(received).map((e) => e.data.identifier),
        url,
      ).toEqual(['2', '3', '4', '5', '6'])
      again.close()
    }
  })

  it('a Last-Event-ID it cannot resume from starts the stream with events_missed and the status', async () => {
    const [, b, c] = net.nodes as [ApiNode, ApiNode, ApiNode]
    const log = b.api.events
    for (const id of ['garbage', 'zzzzz-1', `${log.run}-x`, `${log.run}-${log.next + 1000}`, `${log.run}--1`, `earlier${log.run}-1`]) {
      const stream = await openEvents(`${b.url}/events`, { lastEventId: id })
      expect(await stream.next(() => true), id).toEqual({
        event: 'events_missed',
        data: { last_event_id: id, reason: 'unknown', oldest_event_id: log.idOf(log.first) },
        id: log.headId,
        retry: 2000,
      })
      expect(await stream.next(named('status')), id).toMatchObject({ data: { status: 'ready' }, id: log.headId })
      stream.close()
    }

    // An API that keeps two events: after three more, the id from before them is too old.
    const small = await serveNode(c.node, { eventLogCapacity: 2 })
    try {
      const before = small.api.events.headId
      for (const id of [11n, 12n, 13n]) await sendPayment(c.node.client, { token: net.token, target: b.node.address, amount: 1n, identifier: id })
      await eventually(() => expect(small.api.events.next).toBeGreaterThan(seqOf(before) + 3), 5_000)
      const stream = await openEvents(`${small.url}/events`, { lastEventId: before })
      expect((await stream.next(() => true)).data).toEqual({
        last_event_id: before,
        reason: 'too_old',
        oldest_event_id: small.api.events.idOf(small.api.events.first),
      })
      await stream.next(named('status', { status: 'ready' }))
      expectDocumented(stream)
      stream.close()
    } finally {
      small.api.shuttingDown()
      await small.server.close(100)
    }
  })

  it('maps every node notice to a named event with decimal strings', () => {
    const node = net.nodes[0]!.node
    const token = net.token
    const tokenNetwork = net.tokenNetwork
    const target = net.nodes[1]!.node.address
    const secrethash = `0x${'ab'.repeat(32)}` as const
    const failed = toPushEvent(
      { type: 'paymentSentFailed', token, tokenNetwork, target, amount: 5n, paymentId: 9n, secrethash, reason: 'lock expired' },
      node.client,
    )
    expect(failed).toEqual({
      event: 'payment_sent_failed',
      data: {
        event: 'EventPaymentSentFailed',
        target,
        identifier: 9n,
        log_time: expect.any(String),
        token_address: token,
        reason: 'lock expired',
        amount: 5n,
        secret_hash: secrethash,
      },
    })
    const mediated = { type: 'mediationSucceeded', token, tokenNetwork, secrethash, paymentId: 9n, initiator: target, target, amount: 3n, fee: 1n } as const
    expect(toPushEvent(mediated, node.client)).toEqual({
      event: 'payment_mediated',
      data: {
        token_network_address: tokenNetwork,
        token_address: token,
        amount: 3n,
        fee: 1n,
        initiator: target,
        target,
        identifier: 9n,
        secret_hash: secrethash,
      },
    })
    expect(toPushEvent({ type: 'messageRejected', sender: target, messageType: 'LockedTransfer', reason: 'bad nonce' }, node.client)).toEqual({
      event: 'message_rejected',
      data: { sender: target, message_type: 'LockedTransfer', reason: 'bad nonce' },
    })
    expect(toPushEvent({ type: 'actionRejected', action: 'close', reason: 'no such channel' }, node.client)).toEqual({
      event: 'action_rejected',
      data: { action: 'close', reason: 'no such channel' },
    })
    expect(toPushEvent({ type: 'error', where: 'chain sync', error: new Error('rpc down\nwith details') }, node.client)).toEqual({
      event: 'node_error',
      data: { where: 'chain sync', message: 'rpc down', code: 'INTERNAL' },
    })
    expect(
      toPushEvent(
        {
          type: 'transactionRisk',
          id: 'nonce:4',
          risk: {
            reason: 'fee_cap',
            needed: 371n * 10n ** 9n,
            description: 'TokenNetwork.updateNonClosingBalanceProof(77)',
            deadline: 600n,
            head: 500n,
            nonce: 4,
          },
        },
        node.client,
      ),
    ).toEqual({
      event: 'transaction_at_risk',
      data: {
        id: 'nonce:4',
        description: 'TokenNetwork.updateNonClosingBalanceProof(77)',
        reason: 'fee_cap',
        deadline: 600n,
        block_number: 500n,
        nonce: 4n,
        transaction_hash: null,
        needed: 371n * 10n ** 9n,
        message:
          'TokenNetwork.updateNonClosingBalanceProof(77) (nonce 4) must be mined by block 600 (100 blocks left), but the chain asks more per gas than the cap allows: raise --max-fee-per-gas to at least 371 gwei',
      },
    })
    expect(toPushEvent({ type: 'transactionRisk', id: 'nonce:4', risk: undefined }, node.client)).toEqual({
      event: 'transaction_risk_cleared',
      data: { id: 'nonce:4' },
    })
    expect(toPushEvent({ type: 'withdrawExpired', tokenNetwork, channelId: 77n, totalWithdraw: 4n }, node.client)).toEqual({
      event: 'channel_withdraw_expired',
      data: { token_network_address: tokenNetwork, token_address: token, partner_address: null, channel_identifier: 77n, total_withdraw: 4n },
    })
  })

  it("gives every notice's event the data openapi.json documents for its name, and the schema refuses data that is not it", () => {
    const node = net.nodes[0]!.node
    const [token, tokenNetwork] = [net.token, net.tokenNetwork]
    const [partner, other] = [net.nodes[1]!.node.address, net.nodes[2]!.node.address]
    const secrethash = `0x${'ab'.repeat(32)}` as const
    const copy = (type: string) => ({ type, signed: '0x0102', signature: `0x${'cd'.repeat(65)}` }) as const
    const channel = { tokenNetwork, channelId: 77n }
    const payment = { token, tokenNetwork, amount: 5n, paymentId: 9n, secrethash }
    // One of each notice the stream shows (the compiler names any type left out); an RPC endpoint's state and a
    // presence record not used are the log's.
    const notices: {
      [T in Exclude<NodeNotice['type'], 'status' | 'transactionFailed' | 'rpcEndpoint' | 'peerRecordDropped'>]: Extract<NodeNotice, { type: T }>[]
    } = {
      paymentSentSuccess: [{ type: 'paymentSentSuccess', ...payment, target: partner, secret: `0x${'01'.repeat(32)}`, route: [other, partner], fee: 1n }],
      paymentSentFailed: [{ type: 'paymentSentFailed', ...payment, target: partner, reason: 'no route' }],
      paymentReceivedSuccess: [{ type: 'paymentReceivedSuccess', ...payment, initiator: partner }],
      pathfinding: [
        { type: 'pathfinding', what: 'chosen', url: 'http://pfs.example', address: other, price: 10n, operator: 'op', registered: true },
        { type: 'pathfinding', what: 'unavailable', url: undefined, reason: 'the ServiceRegistry lists no service with a URL' },
        { type: 'pathfinding', what: 'available', url: 'http://pfs.example' },
        { type: 'pathfinding', what: 'routedLocally', target: partner, amount: 5n, reason: 'the pathfinding service is unavailable' },
        {
          type: 'pathfinding',
          what: 'routes',
          url: 'http://pfs.example',
          target: partner,
          amount: 5n,
          routes: [{ route: [other, partner], fee: -2n }],
          iou: 20n,
        },
      ],
      routeFailed: [{ type: 'routeFailed', tokenNetwork, target: partner, paymentId: 9n, secrethash, route: [other, partner], reason: 'refunded' }],
      mediationSucceeded: [{ type: 'mediationSucceeded', ...payment, initiator: other, target: partner, amount: 3n, fee: 1n }],
      messageRejected: [{ type: 'messageRejected', sender: partner, messageType: 'LockedTransfer', reason: 'bad nonce' }],
      channelStateChanged: ['opened', 'closing', 'closed', 'settling', 'settled'].map((state) => ({ type: 'channelStateChanged', ...channel, state })),
      withdrawExpired: [{ type: 'withdrawExpired', ...channel, totalWithdraw: 4n }],
      channelDeposit: [{ type: 'channelDeposit', ...channel, participant: partner, totalDeposit: 10n }],
      channelWithdraw: [{ type: 'channelWithdraw', ...channel, participant: partner, totalWithdraw: 2n }],
      actionRejected: [{ type: 'actionRejected', action: 'close', reason: 'no such channel' }],
      partnerEquivocated: [{ type: 'partnerEquivocated', ...channel, partner, nonce: 3n, applied: copy('LockedTransfer'), second: copy('Unlock') }],
      channelSynced: [{ type: 'channelSynced', ...channel, partner, ourNonce: 4n, partnerNonce: 6n, adopted: { ours: false, partner: true } }],
      staleState: [{ type: 'staleState', ...channel, nonce: 5n, ourNonce: 4n, source: 'chain', reason: 'our nonce 5 came back' }],
      transactionRisk: [
        {
          type: 'transactionRisk',
          id: 'nonce:4',
          risk: {
            reason: 'fee_cap',
            needed: 200n * 10n ** 9n,
            description: 'TokenNetwork.updateNonClosingBalanceProof(77)',
            deadline: 600n,
            head: 500n,
            nonce: 4,
            hash: secrethash,
          },
        },
        {
          type: 'transactionRisk',
          id: 'tx-9',
          risk: { reason: 'balance', needed: 10n ** 16n, description: 'update of channel 77', deadline: 600n, head: 590n },
        },
        {
          type: 'transactionRisk',
          id: 'nonce:5',
          risk: { reason: 'not_mined', description: 'SecretRegistry.registerSecret(0xab)', deadline: 600n, head: 595n, nonce: 5 },
        },
        { type: 'transactionRisk', id: 'nonce:4', risk: undefined },
      ],
      error: [
        { type: 'error', where: 'chain sync', error: new Error('rpc down') },
        { type: 'error', where: 'transaction', detail: 'close', error: 'not an Error' },
      ],
    }
    const events = Object.values(notices)
      .flat()
      .map((notice, i) => {
        const e = toPushEvent(notice as NodeNotice, node.client)!
        return { event: e.event, id: `run-${i + 1}`, data: JSON.parse(stringify(e.data)) }
      })
    for (const e of events) expectAnswer(pushEventSchema, e, e.event)
    expect(events.map((e) => e.event)).toContain('channel_settling')

    // The schema is not a formality: a missing field, a field of the wrong kind, or data under another name fail.
    const sent = events[0]!
    const { secret_hash: _, ...withoutHash } = sent.data
    expect(v.safeParse(pushEventSchema, { ...sent, data: withoutHash }).success).toBe(false)
    expect(v.safeParse(pushEventSchema, { ...sent, data: { ...sent.data, amount: 5 } }).success).toBe(false)
    expect(v.safeParse(pushEventSchema, { ...sent, event: 'payment_received_success' }).success).toBe(false)
    expect(() => expectAnswer(pushEventSchema, { ...sent, data: { ...sent.data, secret: '0x01' } })).toThrow(/does not document/)
  })

  it('answers while the node syncs, pushes the status changes, and ends when the API shuts down or the node stops', async () => {
    const node = await createApiNode(net, anvilKeys[5]!)
    // Two APIs on one node: shutting one down ends its streams only.
    const [first, second] = [await serveNode(node), await serveNode(node)]
    try {
      expect((await first.get('/address')).status).toBe(503)
      const s1 = await openEvents(`${first.url}/events`)
      const s2 = await openEvents(`${second.url}/events`)
      const syncing = await s1.next(() => true)
      expect(syncing.event).toBe('status')
      expect(syncing.data).toEqual({ status: 'syncing', blocks_to_sync: expect.stringMatching(/^\d+$/) })
      await node.run()
      await s1.next(named('status', { status: 'ready' }))
      await s2.next(named('status', { status: 'ready' }))
      expect([listeners(first), listeners(second)]).toEqual([1, 1])

      second.api.shuttingDown()
      await s2.ended
      expect((await second.get('/events')).status).toBe(503)
      expect([listeners(first), listeners(second)]).toEqual([1, 0])

      await node.stop()
      await s1.ended
      expect(s1.events.at(-1)).toMatchObject({ event: 'status', data: { status: 'unavailable' } })
      expectIncreasingIds(s1)
      expect(listeners(first)).toBe(0)
      // A stopped node has nothing more to push.
      const late = await first.get('/events')
      expect(late.status).toBe(503)
      expect(late.body.errors).toMatch(/stopped/)
    } finally {
      await first.server.close(100)
      await second.server.close(100)
      await node.stop()
    }
  })

  it('rejects a bad heartbeat or an unknown query parameter with 400, before streaming', async () => {
    const a = net.nodes[0]!
    for (const query of [
      `last_event_id=${'a'.repeat(65)}`,
      'heartbeat=0',
      'heartbeat=301',
      'heartbeat=abc',
      'heartbeat=1.5',
      'heartbeat=-1',
      'heartbeat=',
      'heartbeat=1&heartbeat=2',
      'foo=1',
    ]) {
      const r = await a.get(`/events?${query}`)
      expect(r.status, query).toBe(400)
      expect(r.headers.get('content-type'), query).toMatch(/^application\/json/)
      expect(typeof r.body.errors, query).toBe('string')
    }
  })

  it('fuzz: any heartbeat value is a stream (1 to 300) or a 400, never a 500, and leaves no listener behind', async () => {
    const a = net.nodes[0]!
    const before = listeners(a)
    const channelsBefore = JSON.stringify(a.node.state.channels, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string(), fc.integer({ min: -5, max: 400 }).map(String), fc.constantFrom('1', '15', '300', '01', '1e2', '0x10', ' 5')),
        async (value) => {
          const abort = new AbortController()
          const response = await fetch(`${a.url}/events?heartbeat=${encodeURIComponent(value)}`, { signal: abort.signal })
          const valid = /^(0|[1-9]\d*)$/.test(value) && Number(value) >= 1 && Number(value) <= 300
          expect(response.status, value).toBe(valid ? 200 : 400)
          abort.abort()
          await response.body?.cancel().catch(() => {})
        },
      ),
      { numRuns: 60 },
    )
    await eventually(() => expect(listeners(a)).toBe(before), 5_000)
    expect(JSON.stringify(a.node.state.channels, (_, v) => (typeof v === 'bigint' ? v.toString() : v))).toBe(channelsBefore)
  })
})
