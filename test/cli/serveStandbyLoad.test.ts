import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { eventually } from '../integration/support/eventually.ts'
import { postgresBin } from '../support/postgres.ts'
import { activeApi, standbyApi, startHubWorld, statusOf, waitForStatus, type HubWorld } from '../support/standbyHub.ts'
import { call } from './devnetProcess.ts'
import type { SluiceProcess } from './sluiceProcess.ts'

/**
 * A hub with a hot standby under payment load (issue 31, docs/decisions/0076): the hub's two `sluice serve
 * --database` processes share one key and one PostgreSQL database, a partner `sluice serve` on LevelDB pays it and is
 * paid by it in a loop through the REST API, and the active hub is killed with SIGKILL three times, the dead one
 * started again each time as the new standby. What a user would notice: a payment the API acknowledged is never lost,
 * the two ends agree on the books, and the partner never sees two balance proofs under one nonce of the hub.
 */

const [hubKey, peerKey] = [anvilKeys[5] as Hex, anvilKeys[6] as Hex]
const [hub, peer] = [hubKey, peerKey].map((k) => privateKeyToAddress(k)) as [Address, Address]
const DEPOSIT = 100_000n
const KILLS = 3
/** Payments each way between two kills (and after the last one), so each instance works under load before it dies. */
const PAYMENTS_BETWEEN_KILLS = 15
/** Concurrent payment loops in each direction. */
const LANES = 2

let world: HubWorld

beforeAll(async () => {
  world = await startHubWorld([hubKey, peerKey])
}, 120_000)

afterAll(async () => {
  await world?.stop()
})

type Outcome = 'succeeded' | 'failed' | 'refused' | 'unanswered'
type Payment = { id: bigint; amount: bigint; from: 'hub' | 'partner'; outcome?: Outcome; detail?: string; answeredAt?: number }

/** One POST /payments: succeeded (200 with the result), failed (a 4xx: the node says it did not pay), refused (503: a standby or a stopped node took nothing), or unanswered (the connection broke: the process died). */
async function pay(api: string, target: Address, p: Payment): Promise<void> {
  try {
    const r = await fetch(`${api}/payments/${world.net.token}/${target}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: String(p.amount), identifier: String(p.id) }),
      // The partner never dies: its payments to the hub must be answered once a hub instance is active again.
      signal: AbortSignal.timeout(30_000),
    })
    const body = (await r.json()) as { identifier?: string; errors?: string }
    p.answeredAt = performance.now()
    if (r.status === 200 && body.identifier === String(p.id)) p.outcome = 'succeeded'
    else if (r.status === 503) p.outcome = 'refused'
    else if (r.status >= 400 && r.status < 500) p.outcome = 'failed'
    else throw new Error(`POST /payments answered ${r.status}: ${JSON.stringify(body)}`)
    p.detail = body.errors
  } catch (e) {
    if ((e as Error).name === 'TimeoutError') throw new Error(`payment ${p.id} from the ${p.from} unanswered after 30 s`)
    if ((e as Error).message.startsWith('POST /payments')) throw e
    p.outcome = 'unanswered'
    p.detail = String((e as Error).cause ?? e)
  }
}

type HistoryEntry = { event: string; identifier: string; amount: string }
async function history(api: string): Promise<HistoryEntry[]> {
  const r = await call('GET', `${api}/payments/${world.net.token}?limit=1000000`)
  expect(r.status).toBe(200)
  return r.body as HistoryEntry[]
}

/**
 * Evidence of a nonce signed twice, as a node surfaces it (docs/decisions/0029): a partner's second, different
 * message under a nonce it used is kept as a `partnerEquivocated` node event (GET /_debug/node_events, event
 * EventPartnerEquivocated, src/api/routes/debug.ts nodeEventEntry) and raised as the critical notification
 * `partner_equivocation` (src/node/services/notifications.ts checkEquivocations); a node whose own nonce comes back
 * with content it never signed stops with a `staleState` event (EventStaleState). The test below this one shows this
 * function finding a real equivocation: a hub started on a stale copy of its store signs under a used nonce.
 */
async function nonceEvidence(api: string): Promise<unknown[]> {
  const notifications = (await call('GET', `${api}/notifications`)).body as { id: string }[]
  const events = (await call('GET', `${api}/_debug/node_events?limit=1000000`)).body as { event: string }[]
  return [
    ...notifications.filter((n) => n.id === 'partner_equivocation'),
    ...events.filter((e) => e.event === 'EventPartnerEquivocated' || e.event === 'EventStaleState'),
  ]
}

const channelOf = async (api: string, partner: Address) =>
  (await call('GET', `${api}/channels/${world.net.token}/${partner}`)).body as { balance: string; total_deposit: string }

describe('sluice serve --database: a hub with a hot standby under payment load', () => {
  let hubArgs: string[]
  let peerApi: string
  let hubApi: string
  let hubs: SluiceProcess[]
  /** A dump of the hub's database taken halfway (pg_dump, as an operator's backup would be): a stale store. */
  let staleDump: string

  test('three kill -9 of the active hub while payments flow both ways: nothing acknowledged is lost, both ends agree, no nonce signed twice', async () => {
    const { net, pg, serveArgs, startServe, tempDir } = world
    hubArgs = serveArgs(hubKey, ['--database', await pg.createDatabase('standby_load'), '--lease-seconds', '1'])
    const first = startServe(hubArgs)
    const partner = startServe(serveArgs(peerKey, ['--data-dir', tempDir()]))
    hubApi = await activeApi(first)
    await waitForStatus(hubApi, { status: 'ready', role: 'active' })
    const second = startServe(hubArgs)
    const secondApi = await standbyApi(second)
    hubs = [first, second]
    peerApi = await activeApi(partner)
    await waitForStatus(peerApi, { status: 'ready' })

    // A channel funded both ways.
    expect((await call('PUT', `${hubApi}/channels`, { partner_address: peer, token_address: net.token, total_deposit: String(DEPOSIT) })).status).toBe(201)
    await eventually(async () => expect((await call('GET', `${peerApi}/channels/${net.token}/${hub}`)).status).toBe(200))
    expect((await call('PATCH', `${peerApi}/channels/${net.token}/${hub}`, { total_deposit: String(DEPOSIT) })).status).toBe(200)

    // Which instance serves: the one whose /status says role active (each has an API of its own).
    const apiOf = new Map<SluiceProcess, string>([
      [first, hubApi],
      [second, secondApi],
    ])
    const payments: Payment[] = []
    let nextId = 0n
    let running = true
    const newPayment = (from: Payment['from']): Payment => {
      const p: Payment = { id: ++nextId, amount: (nextId % 7n) + 1n, from }
      payments.push(p)
      return p
    }
    const hubLane = async () => {
      while (running) {
        const api = hubApi
        const p = newPayment('hub')
        await pay(api, peer, p)
        // The hub instance paying died or stands by: wait until the test found the active one.
        if (p.outcome === 'unanswered' || p.outcome === 'refused') while (running && hubApi === api) await sleep(20)
      }
    }
    const partnerLane = async () => {
      while (running) await pay(peerApi, hub, newPayment('partner'))
    }
    const succeededSince = (from: Payment['from'], t: number) =>
      payments.filter((p) => p.from === from && p.outcome === 'succeeded' && p.answeredAt! > t).length
    const untilPaidBothWays = async (since: number) => {
      const deadline = performance.now() + 30_000
      while (succeededSince('hub', since) < PAYMENTS_BETWEEN_KILLS || succeededSince('partner', since) < PAYMENTS_BETWEEN_KILLS) {
        if (performance.now() > deadline) throw new Error(`fewer than ${PAYMENTS_BETWEEN_KILLS} payments each way in 30 s: ${summary(payments)}`)
        await sleep(20)
      }
    }
    const lanes = [...Array.from({ length: LANES }, hubLane), ...Array.from({ length: LANES }, partnerLane)]

    const takeovers: { active: number; paid: number }[] = []
    try {
      let since = performance.now()
      for (let kill = 1; kill <= KILLS; kill++) {
        await untilPaidBothWays(since)
        // Only the dump now (one read-only snapshot): restoring it is heavy enough on the server (fsync on) to hold up
        // the active hub's lease renewals past a 1 s lease, so it waits for the test below.
        if (kill === 2) staleDump = await dumpDatabase(hubArgs[hubArgs.indexOf('--database') + 1]!)
        const [dead] = hubs.filter((h) => apiOf.get(h) === hubApi)
        const standby = hubs.find((h) => h !== dead)!
        const killedAt = performance.now()
        dead!.child.kill('SIGKILL')
        expect(await dead!.exited).toEqual({ code: null, signal: 'SIGKILL' })
        // The standby's API moves to the active node's server once it took over: follow its output, then its /status.
        const api = await activeApi(standby, 30_000)
        await waitForStatus(api, { status: 'ready', role: 'active' }, 30_000)
        const active = performance.now() - killedAt
        apiOf.set(standby, api)
        hubApi = api
        await untilPaidBothWays(killedAt)
        const paid =
          Math.min(...payments.filter((p) => p.from === 'hub' && p.outcome === 'succeeded' && p.answeredAt! > killedAt).map((p) => p.answeredAt!)) - killedAt
        takeovers.push({ active, paid })
        // The dead one, started again (as a supervisor would), stands by.
        const restarted = startServe(hubArgs)
        apiOf.set(restarted, await standbyApi(restarted))
        expect(await statusOf(apiOf.get(restarted)!)).toEqual({ status: 'unavailable', role: 'standby' })
        hubs = [standby, restarted]
        since = performance.now()
      }
      await untilPaidBothWays(since)
    } finally {
      running = false
      await Promise.all(lanes)
    }
    for (const [i, t] of takeovers.entries())
      console.log(
        `takeover ${i + 1}: kill -9 to the standby's /status role active ${Math.round(t.active)} ms, to its first payment done ${Math.round(t.paid)} ms`,
      )
    console.log(`payments: ${summary(payments)}`)

    // Settled: no lock pending on either end (what was in flight at a kill finished or expired).
    await eventually(async () => {
      for (const [api, partnerOf] of [
        [hubApi, peer],
        [peerApi, hub],
      ] as const)
        expect((await call('GET', `${api}/pending_transfers/${net.token}/${partnerOf}`)).body).toEqual([])
    }, 30_000)

    // Nothing acknowledged lost: every payment answered as succeeded is in both ends' history, by identifier.
    const [hubHistory, peerHistory] = await Promise.all([history(hubApi), history(peerApi)])
    const done = (entries: HistoryEntry[], event: string) => new Set(entries.filter((e) => e.event === event).map((e) => e.identifier))
    const hubSent = done(hubHistory, 'EventPaymentSentSuccess')
    const hubReceived = done(hubHistory, 'EventPaymentReceivedSuccess')
    const peerSent = done(peerHistory, 'EventPaymentSentSuccess')
    const peerReceived = done(peerHistory, 'EventPaymentReceivedSuccess')
    const [sentBy, receivedBy] = [(p: Payment) => (p.from === 'hub' ? hubSent : peerSent), (p: Payment) => (p.from === 'hub' ? peerReceived : hubReceived)]
    const inHistory = (p: Payment) => [sentBy(p).has(String(p.id)), receivedBy(p).has(String(p.id))]
    for (const p of payments) {
      const [sent, received] = inHistory(p)
      // Never half: an ending on one side only would mean the books differ.
      expect({ id: p.id, from: p.from, outcome: p.outcome, sent, received }).toEqual({ id: p.id, from: p.from, outcome: p.outcome, sent: received, received })
      if (p.outcome === 'succeeded') expect({ id: p.id, sent }).toEqual({ id: p.id, sent: true })
      // A node that answered "failed" or "refused" kept the money where it was.
      if (p.outcome === 'failed' || p.outcome === 'refused') expect({ id: p.id, sent, detail: p.detail }).toEqual({ id: p.id, sent: false, detail: p.detail })
    }
    // Nothing paid that the test did not ask for.
    const asked = new Set(payments.map((p) => String(p.id)))
    expect([...hubSent, ...hubReceived, ...peerSent, ...peerReceived].filter((id) => !asked.has(id))).toEqual([])

    // The books: both ends agree, and equal the deposits plus and minus every payment that went through.
    const through = payments.filter((p) => inHistory(p)[0])
    const sum = (from: Payment['from']) => through.filter((p) => p.from === from).reduce((s, p) => s + p.amount, 0n)
    const hubBalance = DEPOSIT - sum('hub') + sum('partner')
    expect(await channelOf(hubApi, peer)).toMatchObject({ balance: String(hubBalance), total_deposit: String(DEPOSIT) })
    expect(await channelOf(peerApi, hub)).toMatchObject({ balance: String(2n * DEPOSIT - hubBalance), total_deposit: String(DEPOSIT) })

    // No nonce signed twice: neither end holds evidence of one.
    expect(await nonceEvidence(peerApi)).toEqual([])
    expect(await nonceEvidence(hubApi)).toEqual([])
    // No hub instance stopped by itself (a lost lease or a stale state exits 1): the dead were killed by the test.
    for (const h of hubs) expect(h.child.exitCode).toBeNull()
  }, 120_000)

  test('the check above finds a nonce signed twice: a hub started on a stale copy of its store pays, and the partner keeps the evidence', async () => {
    // The check must be able to fail: a hub instance that signs from an older state than the one its partner holds
    // (here a copy of its store taken halfway through the run above) signs its next LockedTransfer under a nonce the
    // partner already applied from the newer instance, with other content: the equivocation 0029 keeps.
    for (const h of hubs) h.child.kill('SIGTERM')
    // Its log's end beside a wrong exit, so a failure under load says why the instance stopped as it did.
    for (const h of hubs) {
      const exit = await h.exited
      expect({ ...exit, log: exit.code === 0 ? '' : h.stderr().slice(-3000) }).toEqual({ code: 0, signal: null, log: '' })
    }
    // Checked before the stale hub starts, not after it is ready: once it runs it may equivocate before it is asked to
    // pay (a message its partner resends, or a lock it sees expire, can have it sign under a nonce the newer instance
    // already used), and that is the evidence this test wants too.
    expect(await nonceEvidence(peerApi)).toEqual([])
    const staleDatabase = await restoreDatabase(staleDump, 'standby_stale')
    const stale = world.startServe([...hubArgs.slice(0, hubArgs.indexOf('--database') + 1), staleDatabase, ...hubArgs.slice(hubArgs.indexOf('--database') + 2)])
    const staleApi = await activeApi(stale)
    await waitForStatus(staleApi, { status: 'ready', role: 'active' })
    // Not acknowledged by the partner, so it is never answered: started, not awaited.
    void fetch(`${staleApi}/payments/${world.net.token}/${peer}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '1', identifier: '999999' }),
      signal: AbortSignal.timeout(20_000),
    }).catch(() => {})
    // Both the event and the notification: the two are read by separate requests, so one may be seen before the other.
    await eventually(async () => {
      expect(await nonceEvidence(peerApi)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: 'partner_equivocation' }),
          expect.objectContaining({ event: 'EventPartnerEquivocated', partner: hub }),
        ]),
      )
    }, 20_000)
  }, 60_000)
})

const run = promisify(execFile)

/** A dump of a live database, as pg_dump sees it (one consistent snapshot, writers running): its file. */
async function dumpDatabase(url: string): Promise<string> {
  const file = join(world.tempDir(), 'dump.sql')
  await run(postgresBin('pg_dump'), ['-d', url, '-f', file, '--no-owner'], { timeout: 30_000 })
  return file
}

/** A new database `name` holding the dump `file`: its URL. */
async function restoreDatabase(file: string, name: string): Promise<string> {
  const copy = await world.pg.createDatabase(name)
  await run(postgresBin('psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', copy, '-f', file], { timeout: 30_000 })
  return copy
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function summary(payments: Payment[]): string {
  const count = (from: Payment['from'], outcome: Outcome) => payments.filter((p) => p.from === from && p.outcome === outcome).length
  return (['hub', 'partner'] as const)
    .map((from) => `from the ${from}: ${(['succeeded', 'failed', 'refused', 'unanswered'] as const).map((o) => `${count(from, o)} ${o}`).join(', ')}`)
    .join('; ')
}
