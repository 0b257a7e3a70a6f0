// The transaction queue against what a real chain does and anvil can make happen: fees that spike past an offer,
// a cap below the market, a transaction dropped from the pool or swallowed by an endpoint, a reorg that removes its
// block, a restart in the middle, a nonce left unused, a chain without a base fee, a nonce taken by another program.
// Each call is a transfer of an amount of its own to one recipient: its balance tells that every call took effect
// exactly once.
import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FeesAboveCapError, NonceTakenError } from '../../../src/chain/errors.ts'
import type { TransactionRisk } from '../../../src/chain/transactionRisk.ts'
import type { JournalEntry } from '../../../src/chain/transactionJournal.ts'
import { gwei, startManualChain, type ManualChain } from './support/manualChain.ts'

let chain: ManualChain
beforeAll(async () => {
  chain = await startManualChain()
})
afterAll(() => chain?.stop())

const pay = (to: Address, amount: bigint) => ({ to, data: '0x' as Hex, value: amount, description: `pay ${amount} wei to ${to}` })
const recipient = () => privateKeyToAddress(generatePrivateKey())
const balanceOf = (address: Address) => chain.devnet.getBalance({ address })
/** Every fee of each attempt against the one before: at least 12.5 % more. */
function expectRaisedEachTime(entry: JournalEntry) {
  for (let i = 1; i < entry.attempts.length; i++) {
    const [a, b] = [entry.attempts[i - 1]!.fees, entry.attempts[i]!.fees] as { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }[]
    expect(b!.maxFeePerGas * 1000n).toBeGreaterThanOrEqual(a!.maxFeePerGas * 1125n)
    expect(b!.maxPriorityFeePerGas * 1000n).toBeGreaterThanOrEqual(a!.maxPriorityFeePerGas * 1125n)
  }
}
/** The journal's entries as the queue writes them (it deletes an entry once mined, so the test keeps every put). */
function recordingJournal() {
  const puts: JournalEntry[] = []
  const entries = new Map<number, JournalEntry>()
  return {
    puts,
    journal: {
      load: async () => [...entries.values()].sort((a, b) => a.nonce - b.nonce),
      put: async (entry: JournalEntry) => {
        puts.push(structuredClone(entry))
        entries.set(entry.nonce, structuredClone(entry))
      },
      delete: async (nonce: number) => void entries.delete(nonce),
    },
  }
}

describe('the transaction queue on a chain that misbehaves', () => {
  it('raises an offer the base fee rose past until it is mined: each time by at least 12.5 %, never above the cap', async () => {
    const { puts, journal } = recordingJournal()
    const cap = 1_000n * gwei
    const { queue } = await chain.account({ journal, maxFeePerGas: cap })
    const to = recipient()
    await chain.mine(gwei)
    let submitted!: () => void
    const out = new Promise<void>((r) => (submitted = r))
    const sending = queue.send(pay(to, 1n), { onSubmitted: () => submitted() })
    await out
    // The fees spike after it was offered at 1 gwei: 185 gwei at every block from now on (the spike).
    const sent = await chain.mineUntil(sending, { baseFee: () => 185n * gwei })
    expect(await balanceOf(to)).toBe(1n)
    const attempts = puts.filter((e) => e.nonce === sent.nonce).at(-1)!.attempts
    expect(attempts.length).toBeGreaterThan(1)
    // What the metrics count (sluice_transactions_replaced_total): every version after the first, each once.
    expect(queue.replaced).toBe(attempts.length - 1)
    expect(attempts.map((a) => a.hash)).toContain(sent.hash)
    expectRaisedEachTime(puts.filter((e) => e.nonce === sent.nonce).at(-1)!)
    for (const a of attempts) expect((a.fees as { maxFeePerGas: bigint }).maxFeePerGas).toBeLessThanOrEqual(cap)
    expect((sent.receipt.effectiveGasPrice ?? 0n) >= 185n * gwei).toBe(true)
  })

  it('with the market above the cap: nothing is sent without a deadline (FEES_ABOVE_CAP); one with a deadline says what cap it needs, in time, and goes once fees fall', async () => {
    const cap = 50n * gwei
    const risks: (TransactionRisk | undefined)[] = []
    const { queue, address } = await chain.account({ maxFeePerGas: cap, onRisk: (_, risk) => risks.push(risk) })
    await chain.mine(100n * gwei)
    const before = await chain.devnet.getTransactionCount({ address })
    const error = await queue.send(pay(recipient(), 1n)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FeesAboveCapError)
    expect((error as FeesAboveCapError).shortMessage).toMatch(/above the cap of 50 gwei/)
    expect(await chain.devnet.getTransactionCount({ address, blockTag: 'pending' })).toBe(before)

    // Offered under the cap at 20 gwei, then the market rises to 100 gwei with 60 blocks to its deadline.
    await chain.mine(20n * gwei)
    const to = recipient()
    const head = await chain.head()
    let submitted!: () => void
    const out = new Promise<void>((r) => (submitted = r))
    const sending = queue.send(pay(to, 2n), { deadline: head + 60n, onSubmitted: () => submitted() })
    await out
    for (let i = 0; i < 5; i++) await chain.mine(100n * gwei)
    await expect.poll(() => risks.at(-1), { timeout: 5_000 }).toMatchObject({ reason: 'fee_cap', deadline: head + 60n })
    expect((risks.at(-1) as { needed: bigint }).needed).toBeGreaterThan(cap)
    expect(await balanceOf(to)).toBe(0n)
    // The market falls back: mined, and the risk is cleared.
    await chain.mineUntil(sending, { baseFee: () => 10n * gwei })
    expect(await balanceOf(to)).toBe(2n)
    expect(risks.at(-1)).toBeUndefined()
  })

  it('sent close to its deadline on purpose and mined in the next block: no risk is said; one the next block lacks is at risk', async () => {
    const risks: (TransactionRisk | undefined)[] = []
    const { queue } = await chain.account({ onRisk: (_, risk) => risks.push(risk) })
    await chain.mine()
    // As a monitoring service sends its update, allowed only in the settle window's last blocks: 3 blocks left.
    const to = recipient()
    let head = await chain.head()
    // Mined only once it is out: a block mined while it is still being signed (a busy machine) would be one it lacks.
    let submitted!: () => void
    const out = new Promise<void>((r) => (submitted = r))
    const first = queue.send(pay(to, 1n), { deadline: head + 3n, onSubmitted: () => submitted() })
    await out
    await chain.mine()
    const mined = await first
    expect(mined.receipt.blockNumber).toBe(head + 1n)
    expect(risks.filter(Boolean)).toEqual([])

    // The same, but the endpoint swallows it: once a block has passed without it, it is at risk.
    chain.endpoint.swallowRawTransactions(true)
    head = await chain.head()
    const sending = queue.send(pay(to, 2n), { deadline: head + 3n })
    await expect.poll(() => chain.endpoint.stats.swallowed.length > 0).toBe(true)
    await chain.mine()
    await expect.poll(() => risks.at(-1), { timeout: 5_000 }).toMatchObject({ reason: 'not_mined', deadline: head + 3n })
    chain.endpoint.swallowRawTransactions(false)
    await chain.mineUntil(sending)
    expect(await balanceOf(to)).toBe(3n)
    await expect.poll(() => risks.at(-1)).toBeUndefined()
    // The endpoint's record of what it swallowed is the next tests' to read.
    chain.endpoint.stats.swallowed.splice(0)
  })

  it('sends again what a pool dropped, and what an endpoint swallowed: each call takes effect once', async () => {
    const { queue } = await chain.account()
    const to = recipient()
    await chain.mine()
    // The first is swallowed by the endpoint (it answers with the hash, the chain never sees it).
    chain.endpoint.swallowRawTransactions({ count: 1 })
    const swallowed = queue.send(pay(to, 1n))
    // The second reaches anvil's pool and is dropped from it.
    let submitted!: (hash: Hex) => void
    const out = new Promise<Hex>((r) => (submitted = r))
    const dropped = queue.send(pay(to, 10n), { onSubmitted: ({ hash }) => submitted(hash) })
    await chain.devnet.request({ method: 'anvil_dropTransaction', params: [await out] } as never)
    const [a, b] = await chain.mineUntil(Promise.all([swallowed, dropped]))
    expect(await balanceOf(to)).toBe(11n)
    expect(b.nonce).toBe(a.nonce + 1)
    expect(chain.endpoint.stats.swallowed).toHaveLength(1)
  })

  it('sends again a transaction whose block a reorg removed before its confirmations, and resolves with its new block', async () => {
    const { queue } = await chain.account({ confirmations: 3n })
    const to = recipient()
    await chain.mine()
    let submitted!: () => void
    const out = new Promise<void>((r) => (submitted = r))
    const sending = queue.send(pay(to, 5n), { onSubmitted: () => submitted() })
    await out
    await chain.mine()
    const minedAt = await chain.head()
    expect(await balanceOf(to)).toBe(5n)
    // Replace its block (and the one after) with empty ones: anvil forgets the transaction entirely.
    await chain.mine()
    await chain.devnet.request({ method: 'anvil_reorg', params: [2, []] } as never)
    expect(await balanceOf(to)).toBe(0n)
    const sent = await chain.mineUntil(sending)
    expect(await balanceOf(to)).toBe(5n)
    expect(sent.receipt.blockNumber).toBeGreaterThan(minedAt)
    expect(await chain.head()).toBeGreaterThanOrEqual(sent.receipt.blockNumber + 3n)
  })

  it('after a crash, a queue over the same journal sends what the first signed and the chain lacks: no gap, no nonce used twice', async () => {
    const first = await chain.account()
    const to = recipient()
    await chain.mine()
    // Three calls signed and journaled; the endpoint swallows them all, then the process "dies".
    const earlier = new Set(chain.endpoint.stats.swallowed)
    chain.endpoint.swallowRawTransactions(true)
    const lost = [1n, 2n, 3n].map((amount) => first.queue.send(pay(to, amount)).catch(() => 'stopped'))
    // Three distinct transactions of this test: the queue's look broadcasts a missing one again meanwhile (the same
    // bytes, so the same hash), and under load a second copy of the first came before the third was signed; an
    // earlier test's swallowed one is not one of them.
    await expect.poll(() => new Set(chain.endpoint.stats.swallowed.filter((h) => !earlier.has(h))).size >= 3).toBe(true)
    await first.queue.stop()
    expect(await Promise.all(lost)).toEqual(['stopped', 'stopped', 'stopped'])
    chain.endpoint.swallowRawTransactions(false)
    expect(await chain.devnet.getTransactionCount({ address: first.address, blockTag: 'pending' })).toBe(0)

    const second = await chain.account({ key: first.key, journal: first.journal })
    await second.queue.start()
    const next = second.queue.send(pay(to, 100n))
    const sent = await chain.mineUntil(next)
    expect(sent.nonce).toBe(3)
    // Nothing left under way; the journal keeps the four mined ones for 32 blocks (a deeper reorg sends them again).
    await expect.poll(() => second.queue.pending().length).toBe(0)
    await expect.poll(async () => (await first.journal.load()).map((e) => [e.nonce, e.status])).toEqual([0, 1, 2, 3].map((n) => [n, 'mined']))
    expect(await balanceOf(to)).toBe(106n)
    expect(await chain.devnet.getTransactionCount({ address: first.address })).toBe(4)
  })

  it('fills a nonce no transaction will use (one sent outside the queue and dropped) so that its own go through', async () => {
    const account = await chain.account()
    const to = recipient()
    await chain.mine()
    // Another client of the key sends at nonce 0; the pool drops it. The queue's own transaction takes nonce 1.
    const foreign = await account.chain.walletClient.sendTransaction({ to, value: 1_000n, nonce: 0, gas: 21_000n })
    const sending = account.queue.send(pay(to, 7n))
    await expect.poll(() => account.queue.pending().length).toBe(1)
    expect(account.queue.pending()[0]!.nonce).toBe(1)
    await chain.devnet.request({ method: 'anvil_dropTransaction', params: [foreign] } as never)
    const sent = await chain.mineUntil(sending)
    expect(sent.nonce).toBe(1)
    // Nonce 0 went to a transfer of nothing to itself: only the queue's 7 wei arrived.
    expect(await balanceOf(to)).toBe(7n)
    expect(await chain.devnet.getTransactionCount({ address: account.address })).toBe(2)
  })

  it('rejects with NONCE_TAKEN a transaction whose nonce another program used, and goes on with the next nonce', async () => {
    const account = await chain.account()
    const to = recipient()
    await chain.mine()
    chain.endpoint.swallowRawTransactions({ count: 1 })
    const taken = account.queue.send(pay(to, 1n)).catch((e: unknown) => e)
    await expect.poll(() => account.queue.pending().length).toBe(1)
    // The same key, elsewhere, at the same nonce: mined first.
    await account.chain.walletClient.sendTransaction({ to, value: 1_000n, nonce: 0, gas: 21_000n })
    const error = await chain.mineUntil(taken)
    expect(error).toBeInstanceOf(NonceTakenError)
    const next = await chain.mineUntil(account.queue.send(pay(to, 2n)))
    expect(next.nonce).toBe(1)
    expect(await balanceOf(to)).toBe(1_002n)
  })
})

describe('the transaction queue on a chain without a base fee', () => {
  let legacy: ManualChain
  beforeAll(async () => {
    legacy = await startManualChain(['--hardfork', 'berlin'])
  })
  afterAll(() => legacy?.stop())

  it('offers a gas price and raises it by at least 12.5 % while it is not mined', async () => {
    const { puts, journal } = recordingJournal()
    const { queue } = await legacy.account({ journal, bumpAfterBlocks: 1n })
    const to = privateKeyToAddress(generatePrivateKey())
    await legacy.mine()
    // The endpoint swallows the first two offers: the queue raises it at each block meanwhile.
    legacy.endpoint.swallowRawTransactions({ count: 2 })
    const sent = await legacy.mineUntil(queue.send(pay(to, 3n)))
    expect(await legacy.devnet.getBalance({ address: to })).toBe(3n)
    const prices = puts
      .filter((e) => e.nonce === sent.nonce)
      .at(-1)!
      .attempts.map((a) => (a.fees as { gasPrice: bigint }).gasPrice)
    expect(prices.length).toBeGreaterThan(1)
    for (let i = 1; i < prices.length; i++) expect(prices[i]! * 1000n).toBeGreaterThanOrEqual(prices[i - 1]! * 1125n)
  })
})
