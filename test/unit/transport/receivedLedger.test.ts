// The ledger alone: signed messages straight in, no transport, no delivery; its clock is the test's.
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { signMessage } from '../../../src/protocol/messages/index.ts'
import type { Message, Signed } from '../../../src/protocol/messages/types.ts'
import { retrievableId } from '../../../src/transport/acknowledgement.ts'
import { ReceivedLedger } from '../../../src/transport/receivedLedger.ts'
import { channelKeyOf, processed, record, secretRequest, unlock, withdrawConfirmation, withdrawRequest } from './messages.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

const partner = privateKeyToAccount(anvilKeys[1]!)
const senderKey = `0x${partner.publicKey.slice(4)}` as Hex
const us: Address = privateKeyToAccount(anvilKeys[2]!).address

type Applies = 'at once' | 'pending' | 'fails' | 'throws' | 'says nothing'

/** A ledger whose handler records what it is handed and applies as told; `clock` is moved by hand. */
function ledger(options: { redeliverAfterMs?: number; memory?: number; applies?: () => Applies } = {}) {
  const handed: string[] = []
  const failures: unknown[] = []
  const pending: (() => void)[] = []
  const clock = { now: 1_000 }
  const made = new ReceivedLedger({
    handUp(message) {
      handed.push(`${message.type}:${retrievableId(message)}`)
      switch (options.applies?.() ?? 'at once') {
        case 'at once':
          return Promise.resolve()
        case 'pending':
          return new Promise<void>((resolve) => pending.push(resolve))
        case 'fails':
          return Promise.reject(new Error('commit failed'))
        case 'throws':
          throw new Error('handler threw')
        case 'says nothing':
          return undefined
      }
    },
    onHandlerFailed: (error) => failures.push(error),
    memory: options.memory ?? 16,
    redeliverAfterMs: options.redeliverAfterMs ?? 5_000,
    now: () => clock.now,
  })
  const take = (message: Signed<Message>) => made.take(message, partner.address, retrievableId(message), senderKey)
  return { ledger: made, take, handed, failures, pending, clock }
}

const signed = <M extends Message>(message: M) => signMessage(jsSecp256k1, anvilKeys[1]!, message)
const settled = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('the ledger of what was received', () => {
  test('a message is handed up once; its resend is a duplicate, whatever it is', async () => {
    const { take, handed, ledger: l } = ledger()
    const request = await signed(secretRequest(2n))
    const proof = await signed(unlock(1n, 1n))
    take(request)
    take(proof)
    await settled()
    take(request)
    take(proof)
    expect(handed).toEqual(['SecretRequest:2', 'Unlock:1'])
    expect(l.duplicates).toBe(2)
  })

  test('a resend of a message we answered gets our answer again at once, and is not handed up again', async () => {
    const { take, handed, ledger: l } = ledger()
    const proof = await signed(unlock(1n, 1n))
    expect(take(proof).repeat).toEqual([])
    l.answering(record(partner.address, processed(1n)))
    expect(take(proof).repeat).toEqual([processed(1n)])
    // An answer to another peer, or under another id, is not this one's.
    l.answering(record(us, processed(7n)))
    expect(take(proof).repeat).toEqual([processed(1n)])
    expect(handed).toEqual(['Unlock:1'])
  })

  test('a WithdrawRequest answered with a confirmation repeats it; a newer answer of the same type replaces the older', async () => {
    const { take, ledger: l } = ledger()
    const request = await signed(withdrawRequest(5n, 3n, partner.address))
    take(request)
    const first = withdrawConfirmation(withdrawRequest(5n, 3n, partner.address), 4n)
    const second = withdrawConfirmation(withdrawRequest(5n, 3n, partner.address), 5n)
    l.answering(record(partner.address, first, channelKeyOf(7n)))
    l.answering(record(partner.address, second, channelKeyOf(7n)))
    expect(take(request).repeat).toEqual([second])
  })

  test('an unanswered balance proof is handed up again once redeliverAfterMs has passed since it last was; a secret request never is', async () => {
    const { take, handed, clock, ledger: l } = ledger({ redeliverAfterMs: 50 })
    const proof = await signed(unlock(1n, 1n))
    const request = await signed(secretRequest(2n))
    take(proof)
    take(request)
    await settled()
    clock.now += 49
    take(proof)
    take(request)
    expect(handed).toEqual(['Unlock:1', 'SecretRequest:2'])
    clock.now += 1
    take(proof)
    take(request)
    expect(handed).toEqual(['Unlock:1', 'SecretRequest:2', 'Unlock:1'])
    expect(l.redelivered).toBe(1)
    // The window counts from the last hand-up.
    clock.now += 49
    take(proof)
    expect(handed).toHaveLength(3)
  })

  test('an unanswered proof is handed up again at once once another message of its channel came since: it waited for that one, maybe', async () => {
    const { take, handed, ledger: l } = ledger({ redeliverAfterMs: 60_000 })
    // A partition lost nonces 1 and 2; nonce 3 came first and was refused (no answer).
    const [one, two, three] = await Promise.all([1n, 2n, 3n].map((n) => signed(unlock(10n + n, n))))
    take(three!)
    await settled()
    take(three!)
    expect(handed).toEqual(['Unlock:13'])
    // The retry brings 1 and 2 before it: 3 follows them up, in the same batch, without waiting out the minute.
    take(one!)
    take(two!)
    take(three!)
    expect(handed).toEqual(['Unlock:13', 'Unlock:11', 'Unlock:12', 'Unlock:13'])
    expect(l.redelivered).toBe(1)
    // Nothing came since: its next resend waits again; nor does another channel's message count.
    await settled()
    take(three!)
    take(await signed(unlock(20n, 1n, 8n)))
    take(three!)
    expect(handed).toEqual(['Unlock:13', 'Unlock:11', 'Unlock:12', 'Unlock:13', 'Unlock:20'])
  })

  test('a proof still being applied is not handed up again however long it takes; its resends wait on the same commit', async () => {
    let applies: Applies = 'pending'
    const { take, handed, clock, pending } = ledger({ redeliverAfterMs: 50, applies: () => applies })
    const proof = await signed(unlock(1n, 1n))
    const first = take(proof).applied
    clock.now += 10_000
    expect(take(proof).applied).toBe(first)
    expect(handed).toEqual(['Unlock:1'])
    pending[0]!()
    await settled()
    applies = 'at once'
    take(proof)
    expect(handed).toEqual(['Unlock:1', 'Unlock:1'])
  })

  test('a rejected commit makes the next resend the next chance, at once; a handler that throws is reported, its message taken as handed', async () => {
    let applies: Applies = 'fails'
    const { take, handed, failures } = ledger({ redeliverAfterMs: 60_000, applies: () => applies })
    const request = await signed(secretRequest(2n))
    await expect(take(request).applied).rejects.toThrow('commit failed')
    await settled()
    applies = 'at once'
    await take(request).applied
    take(request)
    expect(handed).toEqual(['SecretRequest:2', 'SecretRequest:2'])
    applies = 'throws'
    const other = await signed(secretRequest(3n))
    expect(take(other).applied).toBeUndefined()
    expect(failures).toEqual([new Error('handler threw')])
    take(other)
    expect(handed).toEqual(['SecretRequest:2', 'SecretRequest:2', 'SecretRequest:3'])
  })

  test('another message under an id seen: a duplicate unless it takes a nonce (then the core compares the two, decision 0029)', async () => {
    const { take, handed, ledger: l } = ledger()
    take(await signed(secretRequest(2n)))
    take(await signed({ ...secretRequest(2n), amount: 6n }))
    take(await signed(unlock(1n, 1n)))
    l.answering(record(partner.address, processed(1n)))
    // A second balance proof under id 1 is not answered with the first's Processed.
    const other = take(await signed({ ...unlock(1n, 1n), transferred_amount: 99n }))
    expect(other.repeat).toEqual([])
    expect(handed).toEqual(['SecretRequest:2', 'Unlock:1', 'Unlock:1'])
    expect(l.duplicates).toBe(1)
  })

  test('it remembers the last `memory` messages only: an older one comes back as new', async () => {
    const { take, handed } = ledger({ memory: 2 })
    const requests = await Promise.all([1n, 2n, 3n].map((id) => signed(secretRequest(id))))
    for (const r of requests) take(r)
    take(requests[2]!)
    take(requests[0]!)
    expect(handed).toEqual(['SecretRequest:1', 'SecretRequest:2', 'SecretRequest:3', 'SecretRequest:1'])
  })
})
