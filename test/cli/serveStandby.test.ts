import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { eventually } from '../integration/support/eventually.ts'
import { activeApi, startHubWorld, type HubWorld } from '../support/standbyHub.ts'
import { call } from './devnetProcess.ts'

/**
 * A hub with a hot standby (docs/decisions/0076): two `sluice serve --database` processes with the same key and
 * database, a real PostgreSQL server, a real relay, a partner node in a process of its own, all on a real anvil.
 */

const [hubKey, peerKey, payerKey] = [anvilKeys[5] as Hex, anvilKeys[6] as Hex, anvilKeys[7] as Hex]
const [hub, peer] = [hubKey, peerKey].map((k) => privateKeyToAddress(k)) as [`0x${string}`, `0x${string}`]
let world: HubWorld

beforeAll(async () => {
  world = await startHubWorld([hubKey, peerKey, payerKey])
}, 120_000)

afterAll(async () => {
  await world?.stop()
})

async function waitReady(api: string, expected: object = { status: 'ready' }) {
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual(expected), 60_000)
}

describe('sluice serve --database: a hub with a hot standby', () => {
  test('the standby answers /status as standby, takes over within seconds of a kill -9 of the active one, with the same address, channels and history, pays both ways and mediates', async () => {
    const { net, pg, serveArgs, startServe, tempDir } = world
    const database = await pg.createDatabase('standby_a')
    const hubArgs = serveArgs(hubKey, ['--database', database, '--lease-seconds', '2'])
    const first = startServe(hubArgs)
    const firstApi = await activeApi(first)
    await waitReady(firstApi, { status: 'ready', role: 'active' })

    const second = startServe(hubArgs)
    const [, standbyApi] = await second.waitForOutput(/REST API \(standing by\): (\S+)\n/, 60_000)
    expect(second.stdout()).toMatch(/Standing by: another instance \(\S+\) holds the store of 0x/)
    expect((await call('GET', `${standbyApi}/status`)).body).toEqual({ status: 'unavailable', role: 'standby' })
    const refused = await call('GET', `${standbyApi}/channels`)
    expect(refused.status).toBe(503)
    expect(refused.body).toMatchObject({ errors: expect.stringContaining('stands by'), code: 'STANDBY' })

    const partner = startServe(serveArgs(peerKey, ['--data-dir', tempDir()]))
    const peerApi = await activeApi(partner)
    await waitReady(peerApi)

    const opened = await call('PUT', `${firstApi}/channels`, { partner_address: peer, token_address: net.token, total_deposit: '1000' })
    expect(opened.status).toBe(201)
    expect((await call('POST', `${firstApi}/payments/${net.token}/${peer}`, { amount: '10', identifier: '1' })).status).toBe(200)
    await eventually(async () => expect((await call('GET', `${peerApi}/channels/${net.token}/${hub}`)).body.balance).toBe('10'))
    // A third node with a channel to the hub, to pay the partner through it once the standby has taken over.
    const payer = startServe(serveArgs(payerKey, ['--data-dir', tempDir()]))
    const payerApi = await activeApi(payer)
    await waitReady(payerApi)
    expect((await call('PUT', `${payerApi}/channels`, { partner_address: hub, token_address: net.token, total_deposit: '1000' })).status).toBe(201)
    await eventually(async () => expect((await call('GET', `${firstApi}/channels/${net.token}/${privateKeyToAddress(payerKey)}`)).status).toBe(200))

    // kill -9 of the active hub: the standby takes the store once the lease has run out.
    const killedAt = performance.now()
    first.child.kill('SIGKILL')
    await first.exited
    const secondApi = await activeApi(second, 30_000)
    await waitReady(secondApi, { status: 'ready', role: 'active' })
    const takeover = performance.now() - killedAt
    expect(second.stdout()).toMatch(/Took over the store of 0x\S+ after standing by/)

    // The same node: address, channel, history.
    expect((await call('GET', `${secondApi}/address`)).body).toEqual({ our_address: hub })
    expect((await call('GET', `${secondApi}/channels/${net.token}/${peer}`)).body).toMatchObject({ balance: '990', total_deposit: '1000', state: 'opened' })
    expect((await call('GET', `${secondApi}/payments/${net.token}/${peer}`)).body).toEqual([
      expect.objectContaining({ event: 'EventPaymentSentSuccess', target: peer, amount: '10', identifier: '1' }),
    ])

    // And it goes on paying, and being paid.
    const tPay = performance.now()
    expect((await call('POST', `${secondApi}/payments/${net.token}/${peer}`, { amount: '5', identifier: '2' })).status).toBe(200)
    expect((await call('POST', `${peerApi}/payments/${net.token}/${hub}`, { amount: '3', identifier: '3' })).status).toBe(200)
    await eventually(async () => expect((await call('GET', `${secondApi}/channels/${net.token}/${peer}`)).body.balance).toBe('988'))
    await eventually(async () => expect((await call('GET', `${peerApi}/channels/${net.token}/${hub}`)).body.balance).toBe('12'))
    // And it goes on mediating: the third node pays the partner through it.
    const mediated = await call('POST', `${payerApi}/payments/${net.token}/${peer}`, { amount: '6', identifier: '4' })
    expect(mediated.status, JSON.stringify(mediated.body)).toBe(200)
    expect(mediated.body.route).toEqual([hub, peer])
    await eventually(async () => expect((await call('GET', `${peerApi}/channels/${net.token}/${hub}`)).body.balance).toBe('18'))
    await eventually(async () =>
      expect((await call('GET', `${secondApi}/payments/${net.token}`)).body).toContainEqual(
        expect.objectContaining({ event: 'EventPaymentMediated', identifier: '4', amount: '6' }),
      ),
    )
    const paid = performance.now() - tPay

    for (const p of [second, partner, payer]) p.child.kill('SIGTERM')
    expect(await second.exited).toEqual({ code: 0, signal: null })
    expect(await partner.exited).toEqual({ code: 0, signal: null })
    expect(await payer.exited).toEqual({ code: 0, signal: null })
    console.log(
      `hot standby: takeover ${Math.round(takeover)} ms after kill -9 (lease 2 s), payments both ways through it and one it mediated ${Math.round(paid)} ms`,
    )
  }, 180_000)
})
