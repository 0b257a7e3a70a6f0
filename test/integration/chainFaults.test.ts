// What a real chain does to a node's transactions, on a chain whose blocks come on their own (a block every 100 ms)
// and whose fees, pool and reorgs the test controls: the fee spike while the node must update its partner's
// close, with and without a cap below it; its own transactions dropped from the pool; a reorg that removes its mined
// deposit, and its channel's opening, before their confirmations. Each asserts what the owner would notice: the money
// on-chain, the action's answer, the notification.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { parseGwei, type Address, type Hex } from 'viem'
import { readParticipantInfo, readTokenBalance } from '../../src/chain/index.ts'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { generatePrivateKey } from 'viem/accounts'
import { closeChannel, depositToChannel, openChannel } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startNode, type StartNodeOptions } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { startMinedDevnet, type MinedDevnet } from './support/minedDevnet.ts'

let net: MinedDevnet
const running: SluiceNode[] = []

/** The base fee between spikes: what a quiet chain asks. */
const QUIET = parseGwei('1')

beforeAll(async () => {
  net = await startMinedDevnet([])
  net.setBaseFee(QUIET)
}, 60_000)
afterEach(async () => {
  net.setBaseFee(QUIET)
  net.resume()
  await Promise.all(running.splice(0).map((n) => n.stop()))
})
afterAll(() => net?.stop())

/** A node of a new account, funded with ETH and 1000 TTT. */
const node = async (options: StartNodeOptions = {}) => {
  const key = generatePrivateKey()
  await net.fund(key)
  const n = await startNode(net, key, { pollingInterval: 50, ...options })
  running.push(n)
  return n
}
const tokens = (n: SluiceNode) => readTokenBalance(n.client.chain, { token: net.token })
/** Waits for `pick` to find a notice, collecting them all from now on. */
function noticesOf(n: SluiceNode) {
  const seen: NodeNotice[] = []
  n.client.subscribe((notice) => void seen.push(notice))
  return seen
}
/** The transactions of `address` in the pool, once one is there. */
const inPool = (address: Address) =>
  eventually(async () => {
    const pooled = await net.pooled(address)
    expect(pooled.length).toBeGreaterThan(0)
    return pooled
  }, 20_000)

/** Until the chain holds a proof of B's (A's update): what B paid A counts at settlement. */
const updatedOnChain = (a: SluiceNode, b: SluiceNode, channelId: bigint) =>
  eventually(async () => {
    const onChain = await readParticipantInfo(a.client.chain, { tokenNetwork: net.tokenNetwork, channelId, participant: b.address, partner: a.address })
    expect(onChain.nonce).toBeGreaterThan(0n)
  }, 30_000)

/** A's deposit in its channel with B as the chain holds it. */
const depositOnChain = async (a: SluiceNode, b: SluiceNode, channelId: bigint) =>
  (await readParticipantInfo(a.client.chain, { tokenNetwork: net.tokenNetwork, channelId, participant: a.address, partner: b.address })).deposit

/**
 * A and B with a channel of 100 on each side; B pays A `paid`; B closes. The test decides what the fees do from the
 * moment A's update is in the pool: A must get it mined before B may settle, or lose what B paid.
 */
async function partnerClosesAfterPaying(a: SluiceNode, b: SluiceNode, paid: bigint) {
  const { channel } = await openChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 100n, settleTimeout: 60n })
  await b.client.waitForBlock(channel.openedBlock)
  await openChannel(b.client, { token: net.token, partner: a.address, totalDeposit: 100n })
  await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)!.partnerEnd.deposit).toBe(100n))
  await sendPayment(b.client, { token: net.token, target: a.address, amount: paid })
  await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)!.partnerEnd.balanceProof?.transferredAmount).toBe(paid))
  // The chain holds no proof of what B paid until A's update: B's close carries only A's own (none).
  await net.pause()
  const closing = closeChannel(b.client, { token: net.token, partner: a.address })
  await inPool(b.address)
  net.resume()
  await closing
  return channel
}

describe('a fee spike while the node must update its partner close', () => {
  test('the update offered before the spike is raised until mined inside the settle window, and settlement pays what the last proofs say', async () => {
    const [a, b] = await Promise.all([node(), node()])
    const [aBefore, bBefore] = await Promise.all([tokens(a), tokens(b)])
    const channel = await partnerClosesAfterPaying(a, b, 37n)
    // A's update is offered at today's fee; the chain stops until it is in the pool, then the base fee is 185 gwei at
    // every block (the spike: a pool evicts what offers less).
    await net.pause()
    const [offered] = await inPool(a.address)
    expect(offered!.maxFeePerGas).toBeLessThan(parseGwei('185'))
    net.setBaseFee(parseGwei('185'))
    net.resume()
    const closed = await eventually(() => {
      const ch = a.client.channel(net.tokenNetwork, b.address)!
      expect(ch.state).toBe('closed')
      return ch
    })
    const settleBlock = closed.closedBlock! + closed.settleTimeout
    // The proof of what B paid is on-chain before B may settle.
    await updatedOnChain(a, b, channel.id)
    expect(await net.head()).toBeLessThanOrEqual(settleBlock + 1n)
    // Mined at the spike's price: re-priced, not waited out.
    const [update] = await a.client.chain.publicClient.getContractEvents({
      address: net.tokenNetwork,
      abi: TokenNetwork.abi,
      eventName: 'NonClosingBalanceProofUpdated',
      args: { channel_identifier: channel.id },
      fromBlock: closed.closedBlock!,
    })
    const receipt = await a.client.chain.publicClient.getTransactionReceipt({ hash: update!.transactionHash })
    expect(receipt.effectiveGasPrice).toBeGreaterThanOrEqual(parseGwei('185'))
    expect(receipt.from.toLowerCase()).toBe(a.address.toLowerCase())
    net.setBaseFee(QUIET)
    // Settled by whoever settles first after the window: A ends with its 100 and what B paid, B with the rest.
    await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)?.state ?? 'settled').toBe('settled'), 60_000)
    await eventually(async () => expect(await tokens(a)).toBe(aBefore + 37n), 30_000)
    expect(await tokens(b)).toBe(bBefore - 37n)
  }, 120_000)

  test('with a cap below the spike: transaction_at_risk says the cap it needs, in time; once fees fall the update lands and it clears', async () => {
    const [a, b] = await Promise.all([node({ maxFeePerGas: parseGwei('50') }), node()])
    const notices = noticesOf(a)
    const aBefore = await tokens(a)
    const channel = await partnerClosesAfterPaying(a, b, 11n)
    await net.pause()
    await inPool(a.address)
    net.setBaseFee(parseGwei('185'))
    net.resume()
    // Told while the settle window is still open, with the cap that would do.
    const risk = await eventually(() => {
      const found = notices.find((n) => n.type === 'transactionRisk' && n.risk?.reason === 'fee_cap')
      expect(found).toBeDefined()
      return found as Extract<NodeNotice, { type: 'transactionRisk' }>
    }, 20_000)
    expect((risk.risk as { needed: bigint }).needed).toBeGreaterThan(parseGwei('50'))
    expect(risk.risk!.head).toBeLessThan(risk.risk!.deadline)
    const listed = await a.services.notifications.list()
    expect(listed.find((n) => n.id === 'transaction_at_risk')).toMatchObject({ urgency: 'critical' })
    expect(listed.find((n) => n.id === 'transaction_at_risk')!.body).toMatch(/raise --max-fee-per-gas to at least \d+/)
    // Never above the cap: nothing of A's is mined while the spike lasts.
    const pooled = await net.pooled(a.address)
    for (const t of pooled) expect(t.maxFeePerGas).toBeLessThanOrEqual(parseGwei('50'))
    // The spike passes with blocks to spare: the update lands, the notification goes.
    net.setBaseFee(parseGwei('2'))
    await updatedOnChain(a, b, channel.id)
    await eventually(async () => expect((await a.services.notifications.list()).find((n) => n.id === 'transaction_at_risk')).toBeUndefined())
    net.setBaseFee(QUIET)
    await eventually(async () => expect(await tokens(a)).toBe(aBefore + 11n), 60_000)
  }, 120_000)
})

describe("the node's own transactions lost on the way", () => {
  test('a deposit whose transactions the pool drops (the approve, then the deposit) is sent again: the action answers, the deposit counts once', async () => {
    const [a, b] = await Promise.all([node(), node()])
    await openChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 10n })
    const before = await tokens(a)
    // Every transaction of A is dropped the first time the pool has it. The chain is paused and the test mines: a
    // block only once what A has in the pool are resends of dropped ones, so neither the approve nor the deposit can
    // be mined before it was dropped, whatever the machine's load.
    const dropped = new Set<Hex>()
    await net.pause()
    let settled = false
    const depositing = depositToChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 60n }).finally(() => {
      settled = true
    })
    let emptySince = Date.now()
    while (dropped.size < 2 && !settled) {
      const pooled = await net.pooled(a.address)
      const fresh = pooled.filter((t) => !dropped.has(t.hash))
      for (const t of fresh) {
        dropped.add(t.hash)
        await net.drop(t.hash)
      }
      if (pooled.length > 0) emptySince = Date.now()
      // Only resends wait: mine them. (A pool empty for long: a block the node waits for, whatever it is.)
      if ((pooled.length > 0 && fresh.length === 0) || Date.now() - emptySince > 5_000) {
        await net.mineOne()
        emptySince = Date.now()
      }
      await new Promise((r) => setTimeout(r, 5))
    }
    net.resume()
    const channel = await depositing
    expect(dropped.size).toBeGreaterThanOrEqual(2)
    expect(channel.our.deposit).toBe(60n)
    expect(await tokens(a)).toBe(before - 50n)
    expect(await depositOnChain(a, b, channel.id)).toBe(60n)
  }, 60_000)
})

describe('a reorg that removes what the node did before its confirmations', () => {
  test('its mined deposit: sent again, counted once, and the action answers with it', async () => {
    const [a, b] = await Promise.all([node({ confirmations: 4 }), node({ confirmations: 4 })])
    const { channel } = await openChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 10n })
    const before = await tokens(a)
    const depositing = depositToChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 30n })
    // Once the deposit is mined (A's token balance fell), and before it has 4 blocks on top: its block is replaced.
    await eventually(async () => expect(await tokens(a)).toBe(before - 20n), 20_000)
    await net.reorg(2)
    expect(await tokens(a)).toBe(before)
    const after = await depositing
    expect(after.our.deposit).toBe(30n)
    expect(await tokens(a)).toBe(before - 20n)
    expect(await depositOnChain(a, b, channel.id)).toBe(30n)
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.deposit).toBe(30n))
  }, 60_000)

  test("its channel's opening: opened again, and the action answers with the channel, not 'opened but not synced'", async () => {
    const [a, b] = await Promise.all([node({ confirmations: 4 }), node({ confirmations: 4 })])
    const before = await tokens(a)
    const opening = openChannel(a.client, { token: net.token, partner: b.address, totalDeposit: 25n })
    await eventually(async () => expect(await tokens(a)).toBe(before - 25n), 20_000)
    await net.reorg(2)
    const { channel, created } = await opening
    expect(created).toBe(true)
    expect(channel.our.deposit).toBe(25n)
    expect(await tokens(a)).toBe(before - 25n)
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))
  }, 60_000)
})
