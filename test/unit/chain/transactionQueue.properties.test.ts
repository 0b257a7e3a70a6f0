// The transaction queue's promises, as a property over random histories on a real chain (a private anvil, reset
// between runs): whatever happens between the sends (fees spiking past the offers, pools dropping transactions, an
// endpoint swallowing them, reorgs, the process restarting over its journal), once the chain behaves again every
// call takes effect exactly once, the account's nonces have no gap, no nonce carries two calls, and no offer passed
// the cap or was raised by less than 12.5 %.
import fc from 'fast-check'
import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { JournalEntry, TransactionJournal } from '../../../src/chain/transactionJournal.ts'
import { gwei, startManualChain, type ManualChain, type QueueAccount } from './support/manualChain.ts'

let chain: ManualChain
let clean: Hex
beforeAll(async () => {
  chain = await startManualChain()
  await chain.mine(gwei)
  clean = await chain.devnet.snapshot()
})
afterAll(() => chain?.stop())

const CAP = 400n * gwei

type Step =
  | { type: 'send'; amount: number; deadline: boolean }
  | { type: 'mine'; blocks: number; baseFeeGwei: number }
  | { type: 'dropPool' }
  | { type: 'swallow'; count: number }
  | { type: 'reorg'; depth: number }
  | { type: 'restart' }

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ type: fc.constant('send' as const), amount: fc.integer({ min: 1, max: 1000 }), deadline: fc.boolean() }) },
  {
    weight: 4,
    arbitrary: fc.record({ type: fc.constant('mine' as const), blocks: fc.integer({ min: 1, max: 4 }), baseFeeGwei: fc.constantFrom(1, 1, 5, 60, 185, 500) }),
  },
  { weight: 1, arbitrary: fc.constant({ type: 'dropPool' as const }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('swallow' as const), count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('reorg' as const), depth: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.constant({ type: 'restart' as const }) },
)

/** Keeps every entry the queue ever put, and which nonces it freed unsent (a broadcast refused for good), beside the journal itself. */
function watchedJournal(): TransactionJournal & { everything: JournalEntry[]; freedUnsent: Set<string>; freed: Set<number> } {
  const entries = new Map<number, JournalEntry>()
  const everything: JournalEntry[] = []
  const freedUnsent = new Set<string>()
  /** Nonces whose last entry was freed unsent and not taken again: never used on the chain. */
  const freed = new Set<number>()
  return {
    everything,
    freedUnsent,
    freed,
    load: async () => [...entries.values()].sort((a, b) => a.nonce - b.nonce).map((e) => structuredClone(e)),
    put: async (entry) => {
      freed.delete(entry.nonce)
      everything.push(structuredClone(entry))
      entries.set(entry.nonce, structuredClone(entry))
    },
    delete: async (nonce) => {
      const entry = entries.get(nonce)
      if (entry?.status === 'signed') {
        freedUnsent.add(`${nonce}:${callOf(entry)}`)
        freed.add(nonce)
      }
      entries.delete(nonce)
    },
  }
}

const callOf = (e: JournalEntry) => JSON.stringify({ to: e.call.to, data: e.call.data, value: String(e.call.value ?? 0n) })

it('every call takes effect exactly once, nonces have no gap, no offer passes the cap or rises by less than 12.5 %', { timeout: 300_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 14 }), (steps) =>
      // A history that never ends is a failure with its steps, not the whole test timing out.
      Promise.race([history(steps), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the history did not end within 60 s')), 60_000))]),
    ),
    { numRuns: 12 },
  )
})

async function history(steps: Step[]): Promise<void> {
  await chain.devnet.revert({ id: clean })
  clean = await chain.devnet.snapshot()
  chain.endpoint.swallowRawTransactions(false)
  const journal = watchedJournal()
  const key = generatePrivateKey()
  const to: Address = privateKeyToAddress(generatePrivateKey())
  let account: QueueAccount = await chain.account({ key, journal, maxFeePerGas: CAP, confirmations: 1n })
  const settled: Promise<{ amount: bigint; outcome: string }>[] = []
  for (const s of steps) {
    switch (s.type) {
      case 'send': {
        const head = await chain.head()
        const amount = BigInt(s.amount)
        // A send refused before anything is signed (the market above the cap) takes no effect; every other one must.
        const sending = account.queue
          .send({ to, data: '0x', value: amount, description: `pay ${amount}` }, s.deadline ? { deadline: head + 30n } : {})
          .then(
            () => 'mined',
            // Stopped before it was signed (a restart while it waited its turn): nothing of it was sent, rightly.
            (e: unknown) => {
              const { code, journaled } = e as { code?: string; journaled?: boolean }
              return code === 'TRANSACTION_QUEUE_STOPPED' && journaled === false ? 'NOT_SENT' : (code ?? String(e))
            },
          )
          .then((outcome) => ({ amount, outcome }))
        settled.push(sending)
        await Promise.race([sending, new Promise((r) => setTimeout(r, 50))])
        break
      }
      case 'mine':
        for (let i = 0; i < s.blocks; i++) await chain.mine(BigInt(s.baseFeeGwei) * gwei)
        await new Promise((r) => setTimeout(r, 60))
        break
      case 'dropPool':
        await chain.devnet.request({ method: 'anvil_dropAllTransactions', params: [] } as never)
        break
      case 'swallow':
        chain.endpoint.swallowRawTransactions({ count: s.count })
        break
      case 'reorg': {
        const head = await chain.head()
        if (head > BigInt(s.depth) + 1n) await chain.devnet.request({ method: 'anvil_reorg', params: [s.depth, []] } as never)
        break
      }
      case 'restart':
        await account.queue.stop()
        account = await chain.account({ key, journal, maxFeePerGas: CAP, confirmations: 1n })
        await account.queue.start()
        break
    }
  }
  // The chain behaves again: cheap blocks until every send has its outcome and the journal is empty (a mined
  // transaction stays in it for 32 blocks after its sender was told).
  chain.endpoint.swallowRawTransactions(false)
  await account.queue.start()
  const outcomes = await chain.mineUntil(Promise.all(settled), { everyMs: 25, baseFee: () => gwei, limit: 200 })
  for (let i = 0; (await journal.load()).length > 0; i++) {
    if (i > 200) throw new Error(`the journal still holds ${JSON.stringify((await journal.load()).map((e) => e.nonce))} after 200 blocks`)
    await chain.mine(gwei)
    await new Promise((r) => setTimeout(r, 25))
  }
  for (const { outcome } of outcomes) expect(['mined', 'TRANSACTION_QUEUE_STOPPED', 'FEES_ABOVE_CAP', 'NOT_SENT']).toContain(outcome)
  const expected = outcomes.filter((o) => o.outcome !== 'FEES_ABOVE_CAP' && o.outcome !== 'NOT_SENT').reduce((sum, o) => sum + o.amount, 0n)
  expect(await chain.devnet.getBalance({ address: to })).toBe(expected)

  // Nonces: the chain's count is every nonce the queue used, none skipped (gap fills included).
  const used = new Set(journal.everything.map((e) => e.nonce).filter((n) => !journal.freed.has(n)))
  const count = await chain.devnet.getTransactionCount({ address: account.address })
  expect(count).toBe(used.size)
  expect([...used].every((n) => n < count)).toBe(true)
  // One call per nonce, whatever its attempts: a nonce goes to another call only once the first was refused unsent.
  const callAt = new Map<number, string>()
  for (const e of journal.everything) {
    const call = callOf(e)
    const before = callAt.get(e.nonce)
    if (before !== undefined && before !== call) expect(journal.freedUnsent.has(`${e.nonce}:${before}`)).toBe(true)
    callAt.set(e.nonce, call)
  }
  // Offers: within the cap, each replacement at least 12.5 % above the one before.
  for (const e of journal.everything)
    for (let i = 0; i < e.attempts.length; i++) {
      const fees = e.attempts[i]!.fees as { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }
      expect(fees.maxFeePerGas).toBeLessThanOrEqual(CAP)
      if (i === 0) continue
      const before = e.attempts[i - 1]!.fees as typeof fees
      expect(fees.maxFeePerGas * 1000n).toBeGreaterThanOrEqual(before.maxFeePerGas * 1125n)
      expect(fees.maxPriorityFeePerGas * 1000n).toBeGreaterThanOrEqual(before.maxPriorityFeePerGas * 1125n)
    }
  await account.queue.stop()
}
