import fc from 'fast-check'
import type { Address, Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { defaultContext, initialState, MAX_PUBLIC_KEYS, publicKeyOf, rememberPublicKey } from '../../../../src/protocol/state/access.ts'
import type { Signed, Message } from '../../../../src/protocol/messages/types.ts'
import { transition } from '../../../../src/protocol/transition.ts'

const me = '0x00000000000000000000000000000000000000aa' as Address
const addressOf = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address
const keyOf = (n: number) => `0x${n.toString(16).padStart(128, '0')}` as Hex
const base = () => initialState({ address: me, chainId: 1n, blockNumber: 0n })
const processed = { type: 'Processed', message_identifier: 1n, signature: `0x${'00'.repeat(65)}` } as unknown as Signed<Message>

describe('the public keys a node learned are its own state', () => {
  test('a received message records its sender key; the same key again changes nothing', () => {
    const sender = addressOf(5)
    const once = transition(base(), { type: 'receive', message: processed, sender, senderKey: keyOf(5) }, defaultContext).state
    expect(publicKeyOf(once, sender)).toBe(keyOf(5))
    const twice = transition(once, { type: 'receive', message: processed, sender, senderKey: keyOf(5) }, defaultContext).state
    expect(twice).toBe(once)
    // A change without a key (stored before keys were kept) leaves them as they are.
    expect(transition(once, { type: 'receive', message: processed, sender: addressOf(6) }, defaultContext).state.publicKeys).toEqual(once.publicKeys)
  })

  test('a state stored before keys were kept (no publicKeys) knows none and learns them', () => {
    const { publicKeys: _, ...old } = base()
    expect(publicKeyOf(old, addressOf(1))).toBeUndefined()
    expect(publicKeyOf(rememberPublicKey(old, addressOf(1), keyOf(1)), addressOf(1))).toBe(keyOf(1))
  })

  test('bounded: at most MAX_PUBLIC_KEYS, the oldest forgotten first, whatever the order of arrival', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: MAX_PUBLIC_KEYS + 200 }), { minLength: 1, maxLength: MAX_PUBLIC_KEYS + 300 }), (senders) => {
        let state = base()
        for (const n of senders) state = rememberPublicKey(state, addressOf(n), keyOf(n))
        const kept = Object.keys(state.publicKeys!)
        expect(kept.length).toBeLessThanOrEqual(MAX_PUBLIC_KEYS)
        // The last sender is always known, with its own key.
        const last = senders.at(-1)!
        expect(publicKeyOf(state, addressOf(last))).toBe(keyOf(last))
        for (const a of kept) expect(state.publicKeys![a]).toBe(keyOf(Number(BigInt(a))))
      }),
      { numRuns: 30 },
    )
  })
})
