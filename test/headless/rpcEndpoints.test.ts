// A headless node (@sluice/node's startNode) given two endpoints, whose first goes down while the node opens a
// channel, deposits and pays another node: refused, then black-holed. Everything goes on through the second, the node
// stays ready, its log says each going down and coming back once, and it is back on the first once that recovers.
import type { Hex } from 'viem'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { startNode, type HeadlessNode } from '../../src/headless/index.ts'
import { createLogger } from '../../src/log/logger.ts'
import { startFaultyRpc, type FaultyRpc } from '../support/faultyRpc.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'

const keyA = anvilKeys[1] as Hex
const keyB = anvilKeys[2] as Hex
let net: Devnet
const endpoints: FaultyRpc[] = []
const started: HeadlessNode[] = []

beforeAll(async () => {
  net = await startDevnet([keyA, keyB])
})
afterAll(async () => {
  await Promise.all(started.map((node) => node.stop()))
  for (const rpc of endpoints) await rpc.close()
  await net?.stop()
})

const options = { deployment: () => net.deployment, confirmations: 0, pollingInterval: 50, defaultRevealTimeout: 10, defaultSettleTimeout: 40 }

/** Which endpoint the node reads the chain through: it asks eth_blockNumber each polling interval (50 ms). */
async function inUse(first: FaultyRpc, second: FaultyRpc): Promise<'first' | 'second'> {
  const count = () => [first.stats.calls.eth_blockNumber ?? 0, second.stats.calls.eth_blockNumber ?? 0]
  const [a0, b0] = count()
  await new Promise((resolve) => setTimeout(resolve, 300))
  const [a1, b1] = count()
  if (a1! > a0! && b1 === b0) return 'first'
  if (b1! > b0! && a1 === a0) return 'second'
  throw new Error(`both or neither in use: first ${a1! - a0!}, second ${b1! - b0!}`)
}

test('two endpoints, the first refused then black-holed: the node goes on through the second and comes back to the first', async () => {
  const seed = Number(process.env.FAULTY_RPC_SEED ?? Math.floor(Math.random() * 2 ** 31))
  const [first, second] = [await startFaultyRpc(net.anvil.rpcUrl, { seed }), await startFaultyRpc(net.anvil.rpcUrl, { seed: seed + 1 })]
  endpoints.push(first, second)
  const lines: string[] = []
  const logger = createLogger({ level: 'info', format: 'pretty', write: (line) => lines.push(line) })
  const a = await startNode({
    ...options,
    deployment: net.deployment,
    rpc: [first.url, second.url],
    key: keyA,
    storage: 'memory',
    environment: 'development',
    logger,
  })
  started.push(a)
  const b = await startNode({ ...options, deployment: net.deployment, rpc: net.anvil.rpcUrl, key: keyB, storage: 'memory', logLevel: 'silent' })
  started.push(b)
  await eventually(async () => expect(await inUse(first, second)).toBe('first'))
  expect(lines.some((l) => l.includes('RPC endpoints, used in this order'))).toBe(true)

  // Refused: the channel is opened and a payment made through the second endpoint.
  await first.setMode('refuse')
  const channel = await a.openChannel({ token_address: net.token, partner_address: b.address, total_deposit: 100n })
  expect(channel).toMatchObject({ state: 'opened', total_deposit: '100' })
  expect(second.stats.calls.eth_sendRawTransaction).toBeGreaterThanOrEqual(1)
  await eventually(async () => expect(await b.channel(net.token, a.address)).toMatchObject({ state: 'opened' }))
  expect(await a.pay(net.token, b.address, { amount: 5n })).toMatchObject({ amount: '5' })
  expect(await a.status()).toEqual({ status: 'ready' })
  await eventually(async () => expect(await inUse(first, second)).toBe('second'))

  // Back: the node reads through the first again.
  await first.setMode('up')
  await eventually(async () => expect(await inUse(first, second)).toBe('first'), 15_000)

  // Black-holed: one call waits its timeout (10 s) and moves on; the payment, which needs no chain, does not wait.
  await first.setMode('blackhole')
  const paying = performance.now()
  expect(await a.pay(net.token, b.address, { amount: 2n })).toMatchObject({ amount: '2' })
  const payment = performance.now() - paying
  const depositing = performance.now()
  expect(await a.updateChannel(net.token, b.address, { total_deposit: 150n })).toMatchObject({ total_deposit: '150' })
  const deposit = performance.now() - depositing
  console.log(`first endpoint black-holed: a payment took ${Math.round(payment)} ms, a deposit ${Math.round(deposit)} ms`)
  expect(payment).toBeLessThan(5_000)
  await eventually(async () => expect((await b.channel(net.token, a.address)).balance).toBe('7'))
  expect(await a.status()).toEqual({ status: 'ready' })
  await eventually(async () => expect(await inUse(first, second)).toBe('second'))

  await first.setMode('up')
  await eventually(async () => expect(await inUse(first, second)).toBe('first'), 15_000)
  // Each change once, however many calls it cost.
  const told = lines.filter((l) => l.includes('RPC endpoint #1'))
  expect(told, told.join('\n')).toHaveLength(4)
  expect(told[0]).toMatch(/WARN .*RPC endpoint #1 http:\/\/127\.0\.0\.1:\d+ down: .*(ECONNREFUSED|other side closed|ECONNRESET)/)
  expect(told[1]).toMatch(/INFO .*RPC endpoint #1 http:\/\/127\.0\.0\.1:\d+ answers again/)
  expect(told[2]).toMatch(/WARN .*RPC endpoint #1 .* down: timed out/)
  expect(told[3]).toMatch(/INFO .*RPC endpoint #1 .* answers again/)
}, 120_000)
