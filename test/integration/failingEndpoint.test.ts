// Two nodes with a channel on a private anvil that mines a block every second; the payer reaches the chain through
// an endpoint that fails on command (test/support/faultyRpc.ts), the payee directly. Payments need no chain: they
// must go on whatever the payer's endpoint does, the payer must never lock with an expiry its payee refuses, its
// /status must say how it follows the chain, and it must catch up once the endpoint answers again.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { hostNode, type HostedNode } from '../../src/host/hostNode.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startFaultyRpc, type FaultKind, type FaultyRpc } from '../support/faultyRpc.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

const [keyA, keyB] = [anvilKeys[1], anvilKeys[2]]
const seed = Number(process.env.FAULTY_RPC_SEED ?? Math.floor(Math.random() * 2 ** 31))
/** What the payee's lock checks judge against: its reveal timeout (the payer's lock timeout is twice it). */
const revealTimeout = 10
const confirmations = 1
let net: Devnet
let rpc: FaultyRpc
let a: SluiceNode
let b: SluiceNode
let hosted: HostedNode
const noticesOfB: NodeNotice[] = []

beforeAll(async () => {
  console.info(`faulty RPC seed ${seed} (FAULTY_RPC_SEED=${seed} repeats its choices)`)
  net = await startDevnet([keyA, keyB])
  rpc = await startFaultyRpc(net.anvil.rpcUrl, { seed })
  const options = { confirmations, pollingInterval: 500, defaultRevealTimeout: revealTimeout, defaultSettleTimeout: 100 }
  ;[a, b] = await Promise.all([startNode(net, keyA, { ...options, rpc: rpc.url }), startNode(net, keyB, options)])
  hosted = hostNode({ node: a, version: 'test', environment: 'development' })
  b.notices.subscribe((n) => void noticesOfB.push(n))
  // From now on a block every second, as a real chain has them (the confirmations need blocks after a transaction's).
  await createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).setIntervalMining({ interval: 1 })
  await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 10_000n })
  await b.client.waitForBlock(await b.client.chain.publicClient.getBlockNumber())
}, 60_000)

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await rpc?.close()
  await net?.stop()
})

type StatusAnswer = { status: string; blocks_to_sync?: string; [field: string]: unknown }
const status = async (): Promise<StatusAnswer> => (await hosted.fetch(new Request('http://localhost/api/v1/status'))).json() as Promise<StatusAnswer>
const chainHead = async () => (await b.client.chain.publicClient.getBlockNumber()) - BigInt(confirmations)

/** What /status said while the payer's true lag (the chain's confirmed head minus its synced block) was `lag`. */
type Sample = { lag: bigint; answer: StatusAnswer; at: number }

/** Samples /status every 250 ms against the truth until `until` resolves. */
async function sampleStatus(until: Promise<unknown>): Promise<Sample[]> {
  const samples: Sample[] = []
  let done = false
  void until.finally(() => (done = true))
  while (!done) {
    const head = await chainHead()
    const answer = await status()
    const synced = a.state.blockNumber
    // The head read before the answer, the synced block after it: the lag is never overstated.
    samples.push({ lag: head - synced, answer, at: Date.now() })
    await new Promise((r) => setTimeout(r, 250))
  }
  return samples
}

/** Pays 1 every `everyMs` for `ms`: the reasons of those that failed. */
async function payFor(ms: number, everyMs: number): Promise<{ sent: number; failed: string[] }> {
  const end = Date.now() + ms
  const payments: Promise<string | undefined>[] = []
  while (Date.now() < end) {
    payments.push(sendPayment(a.client, { token: net.token, target: b.address, amount: 1n }).then(() => undefined, String))
    await new Promise((r) => setTimeout(r, everyMs))
  }
  const results = await Promise.all(payments)
  return { sent: results.length, failed: results.filter((r) => r !== undefined) }
}

/** Locks the payee took but judged too close to their expiry to ask for the secret, or refused outright. */
const refusedLocks = () => noticesOfB.filter((n) => n.type === 'messageRejected' && /expir/.test(n.reason))

const kinds: FaultKind[] = [...Array(4).fill(['500', '502', '503', '429', 'rpcError', 'reset']).flat(), 'hang']

describe('a payer whose endpoint fails', () => {
  test('a third of its calls failing for a minute: payments go on, no lock is refused, /status tells the lag, it catches up', async () => {
    rpc.setFaults({ failRate: 1 / 3, kinds })
    const paying = payFor(60_000, 2_000)
    const samples = await sampleStatus(paying)
    const { sent, failed } = await paying
    rpc.setFaults({})
    const stats = { calls: Object.values(rpc.stats.calls).reduce((x, y) => x + y, 0), failed: rpc.stats.failed }
    const worst = samples.reduce((m, s) => (s.lag > m ? s.lag : m), 0n)
    console.info(`${sent - failed.length} of ${sent} payments succeeded; the payer lagged up to ${worst} blocks; endpoint ${JSON.stringify(stats)}`)
    expect(Object.values(rpc.stats.failed).reduce((x, y) => x + y, 0)).toBeGreaterThan(20)

    expect(failed).toEqual([])
    expect(refusedLocks()).toEqual([])
    checkSamples(samples)
    // Caught up within a few seconds of the faults ending.
    const faultsEnded = Date.now()
    await eventually(async () => {
      expect((await chainHead()) - a.state.blockNumber).toBeLessThanOrEqual(1n)
      expect((await status()).status).toBe('ready')
    }, 10_000)
    console.info(`ready and caught up ${Date.now() - faultsEnded} ms after the faults ended`)
  }, 90_000)

  test('its endpoint down (connections refused, then never answered): /status says since when; payments go on; it catches up', async () => {
    await eventually(async () => expect((await status()).status).toBe('ready'))
    const downAt = Date.now()
    await rpc.setMode('refuse')
    const refused = payFor(12_000, 1_000)
    const whileRefused = sampleStatus(refused)
    // Within a few seconds (a read is asked again for three), and for as long as it lasts.
    await eventually(async () => {
      const answer = await status()
      expect(answer).toMatchObject({ status: 'unavailable', serving: true, last_error: { code: 'CHAIN_RPC' } })
      expect(Date.parse(answer.chain_unreachable_since as string)).toBeGreaterThanOrEqual(downAt)
    }, 8_000)
    const unreachableAt = Date.now()
    console.info(`unavailable ${unreachableAt - downAt} ms after the endpoint went down`)
    const since = (await status()).chain_unreachable_since
    await refused
    await rpc.setMode('blackhole')
    const blackholed = payFor(12_000, 1_000)
    const whileBlackholed = await sampleStatus(blackholed)
    // Still the same outage: the endpoint has not answered since.
    expect(whileBlackholed.map((s) => [s.answer.status, s.answer.chain_unreachable_since])).toEqual(whileBlackholed.map(() => ['unavailable', since]))
    const samples = [...(await whileRefused).filter((s) => s.at > unreachableAt), ...whileBlackholed]
    await rpc.setMode('up')
    const upAt = Date.now()
    const results = [await refused, await blackholed]
    console.info(`while the endpoint was down, ${results.map((r) => `${r.sent - r.failed.length} of ${r.sent}`).join(' and ')} payments succeeded`)
    expect(results.flatMap((r) => r.failed)).toEqual([])
    expect(refusedLocks()).toEqual([])
    // While out of reach, blocks_to_sync is the lag as the node can estimate it (the chain's head moves on at its block time).
    for (const { lag, answer } of samples.filter((s) => s.answer.status === 'unavailable'))
      expect(BigInt(answer.blocks_to_sync!) - lag, JSON.stringify(answer)).toSatisfy((d: bigint) => d >= -3n && d <= 3n)
    checkSamples(samples)
    await eventually(async () => {
      expect((await chainHead()) - a.state.blockNumber).toBeLessThanOrEqual(1n)
      expect(await status()).toEqual({ status: 'ready' })
    }, 15_000)
    console.info(`ready and caught up ${Date.now() - upAt} ms after the endpoint came back`)
  }, 60_000)
})

/** Never "ready" while more than a couple of blocks behind; "syncing" says by how much, and since when. */
function checkSamples(samples: Sample[]): void {
  for (const { lag, answer } of samples) {
    if (answer.status === 'ready') expect(lag, JSON.stringify(answer)).toBeLessThanOrEqual(3n)
    if (answer.status === 'syncing') {
      expect(answer.serving).toBe(true)
      expect(Date.parse(answer.behind_since as string)).toBeLessThanOrEqual(Date.now())
      expect(BigInt(answer.blocks_to_sync!), JSON.stringify(answer)).toBeGreaterThanOrEqual(lag - 2n)
    }
  }
}
