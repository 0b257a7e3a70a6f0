// Mediation fees between real `sluice serve` processes (docs/decisions/0069): A pays C through B, who charges a flat
// and a proportional fee; A pays the amount and the route's fee with its margin, B earns what its history says, C gets
// the rest, and every node's REST API says so. Then A, started again with a fee limit below that route's fee, is
// refused the payment with a 409 and locks nothing. On the run's anvil, with accounts and a token network of their own.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { feeMargin, ppmFeePerChannel, routeAmountWithFees, amountWithoutFees, type FeeSchedule } from '../../src/protocol/fees/index.ts'
import { call } from '../cli/devnetProcess.ts'
import { quickServeFlags, relayListening, startSluice, stopSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { freshAccount, mint, ownTokenNetwork, type FreshAccount } from '../support/sharedChain.ts'
import { eventually } from './support/eventually.ts'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-fees-'))
  dirs.push(dir)
  return dir
}

const rpcUrl = inject('rpcUrl')
const deployment = inject('deployment')
const DEPOSIT = 1000n
/** B's fees for a mediation of the token: 10 flat, 1 % (Raiden's flags: per mediation; each channel takes its share). */
const FLAT = 10n
const PROPORTIONAL = 10_000n

let relay: SluiceProcess
let relayAddress: string
let deploymentFile: string
let token: Address
let a: FreshAccount
let b: FreshAccount
let c: FreshAccount
const nodes: Record<'A' | 'B' | 'C', { sluice: SluiceProcess; api: string; dataDir: string } | undefined> = { A: undefined, B: undefined, C: undefined }

async function serve(name: 'A' | 'B' | 'C', account: FreshAccount, dataDir: string, ...more: string[]) {
  const sluice = startSluice(
    [
      'serve',
      '--rpc',
      rpcUrl,
      '--deployment',
      deploymentFile,
      '--key',
      account.key,
      '--data-dir',
      dataDir,
      '--relay',
      relayAddress,
      ...quickServeFlags,
      ...more,
    ],
    tempDir(),
  )
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  nodes[name] = { sluice, api: api!, dataDir }
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 60_000)
  return api!
}

const api = (name: 'A' | 'B' | 'C') => nodes[name]!.api
const feeFlags = () => ['--flat-fee', token, String(FLAT), '--proportional-fee', token, String(PROPORTIONAL)]

beforeAll(async () => {
  relay = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'], tempDir())
  ;[a, b, c] = await Promise.all([freshAccount(rpcUrl), freshAccount(rpcUrl), freshAccount(rpcUrl)])
  const [network] = await Promise.all([ownTokenNetwork(a, deployment), relay.waitForOutput(/Press Ctrl-C to stop/)])
  token = network.token
  await Promise.all([mint(a, token, 10n ** 21n), mint(b, token, 10n ** 21n)])
  relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, deployment)
  // A charges what B charges: without a pathfinding service, that is how it guesses B's fee.
  await Promise.all([serve('A', a, tempDir(), ...feeFlags()), serve('B', b, tempDir(), ...feeFlags(), '--metrics', '127.0.0.1:0'), serve('C', c, tempDir())])
  for (const [from, to] of [
    ['A', b.address],
    ['B', c.address],
  ] as const) {
    const opened = await call('PUT', `${api(from)}/channels`, { partner_address: to, token_address: token, total_deposit: String(DEPOSIT) })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
  }
  // Every node has synced both channels (A routes over B-C, C takes locks on it).
  await eventually(async () => {
    for (const name of ['A', 'B', 'C'] as const) {
      const network = await call('GET', `${api(name)}/tokens/${token}/network`)
      expect(network.body.channels, name).toHaveLength(2)
    }
    expect((await call('GET', `${api('C')}/channels/${token}/${b.address}`)).status).toBe(200)
  }, 60_000)
}, 180_000)

afterAll(async () => {
  for (const node of Object.values(nodes)) if (node) await stopSluice(node.sluice)
  if (relay) await stopSluice(relay)
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

/** B's schedule for a channel of `capacity` with no imbalance penalty: half the flat fee, the per-channel share of 1 %. */
const schedule: FeeSchedule = { cap_fees: true, flat: FLAT / 2n, proportional: ppmFeePerChannel(PROPORTIONAL), imbalance_penalty: null }
/** B's two channels as it mediates its first payment: nothing yet towards A (A can send it 1000), 1000 towards C. */
const mediation = { payer: { balance: 0n, receivable: DEPOSIT, schedule }, payee: { balance: DEPOSIT, schedule } }
const balanceOf = async (name: 'A' | 'B' | 'C', partner: Address) => BigInt((await call('GET', `${api(name)}/channels/${token}/${partner}`)).body.balance)

describe('three sluice serve nodes, B mediating for a fee', () => {
  test("A pays the amount and the fee; B earns what its history says; C receives the rest; each node's API says so", async () => {
    const amount = 100n
    // What the route costs: B's fee as a pathfinding service would compute it, and Raiden's margin on it.
    const fee = routeAmountWithFees(amount, [mediation])!.fees[0]!
    const locked = amount + fee + feeMargin(amount, fee)
    const forwarded = amountWithoutFees(locked, mediation)!
    // 10 flat and about 1 % of 100: 11, a margin of 1; B keeps 11 of the 112 and forwards 101.
    expect([fee, locked, forwarded]).toEqual([11n, 112n, 101n])

    const paid = await call('POST', `${api('A')}/payments/${token}/${c.address}`, { amount: String(amount), identifier: '30' })
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body).toMatchObject({ amount: '100', fee: String(locked - amount), route: [b.address, c.address] })

    await eventually(async () => {
      expect(await balanceOf('C', b.address)).toBe(forwarded)
      expect(await balanceOf('B', a.address)).toBe(locked)
    })
    expect(await balanceOf('A', b.address)).toBe(DEPOSIT - locked)
    expect(await balanceOf('B', c.address)).toBe(DEPOSIT - forwarded)

    const history = async (name: 'A' | 'B' | 'C') => (await call('GET', `${api(name)}/payments/${token}`)).body as Record<string, string>[]
    expect(await history('A')).toEqual([
      expect.objectContaining({ event: 'EventPaymentSentSuccess', amount: '100', fee: '12', target: c.address, identifier: '30' }),
    ])
    await eventually(async () =>
      expect(await history('B')).toEqual([
        expect.objectContaining({ event: 'EventPaymentMediated', amount: '112', fee: '11', initiator: a.address, target: c.address, identifier: '30' }),
      ]),
    )
    // What B's history says it earned is what its channels hold beyond its deposit.
    const earned = BigInt((await history('B'))[0]!.fee!)
    expect((await balanceOf('B', a.address)) + (await balanceOf('B', c.address)) - DEPOSIT).toBe(earned)
    // B's metrics (docs/decisions/0078): one mediation, timed from A's LockedTransfer to A's unlock; no payment of its own.
    const bMetrics = await scrape(metricsUrlOf(nodes.B!.sluice.stdout()))
    expect(sampleValue(bMetrics, 'sluice_payments_mediated_total', { outcome: 'success' })).toBe(1)
    expect(sampleValue(bMetrics, 'sluice_payment_mediated_seconds_count')).toBe(1)
    expect(sampleValue(bMetrics, 'sluice_payment_mediated_seconds_sum')).toBeGreaterThan(0)
    expect(sampleValue(bMetrics, 'sluice_payments_sent_total', { outcome: 'success' })).toBe(0)
    expect(sampleValue(bMetrics, 'sluice_payments_received_total', { outcome: 'success' })).toBe(0)
    expect(sampleValue(bMetrics, 'sluice_channels', { state: 'opened' })).toBe(2)
    await eventually(async () =>
      expect(await history('C')).toEqual([
        expect.objectContaining({ event: 'EventPaymentReceivedSuccess', amount: '101', initiator: a.address, identifier: '30' }),
      ]),
    )
  }, 60_000)

  test('A started again with --pathfinding-max-fee below the route fee: 409 at once, nothing locked, nothing moved', async () => {
    const before = await Promise.all([balanceOf('A', b.address), balanceOf('B', a.address), balanceOf('C', b.address)])
    await stopSluice(nodes.A!.sluice)
    await serve('A', a, nodes.A!.dataDir, ...feeFlags(), '--pathfinding-max-fee', '5')
    const refused = await call('POST', `${api('A')}/payments/${token}/${c.address}`, { amount: '100', identifier: '31' })
    expect(refused.status, JSON.stringify(refused.body)).toBe(409)
    expect(refused.body).toMatchObject({ code: 'PAYMENT_FAILED' })
    expect(refused.body.errors).toMatch(/its estimated fee \d+ and margin \d+ exceed the most the payment may cost in fees, 5 \(--pathfinding-max-fee\)/)
    expect((await call('GET', `${api('A')}/pending_transfers`)).body).toEqual([])
    expect(await Promise.all([balanceOf('A', b.address), balanceOf('B', a.address), balanceOf('C', b.address)])).toEqual(before)
    // The failure is in A's history, the earlier payment still with its fee.
    const history = (await call('GET', `${api('A')}/payments/${token}/${c.address}`)).body as Record<string, string>[]
    expect(history.map((e) => [e.event, e.fee])).toEqual([
      ['EventPaymentSentSuccess', '12'],
      ['EventPaymentSentFailed', undefined],
    ])
    // A direct payment to B passes no mediator: the limit does not stand in its way.
    expect((await call('POST', `${api('A')}/payments/${token}/${b.address}`, { amount: '7', identifier: '32' })).body).toMatchObject({ amount: '7', fee: '0' })
  }, 90_000)
})
