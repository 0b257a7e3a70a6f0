import fc from 'fast-check'
import { getAddress, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { checkIou, depositCovers, MIN_IOU_EXPIRY_BLOCKS, type IouContext, type StoredIou } from '../../../src/pathfinding/iou.ts'
import { signIou } from '../../support/ious.ts'
import { nativeCurve } from '../../support/curve.ts'

const senderKey: Hex = anvilKeys[3]!
const sender = privateKeyToAddress(senderKey)
const service = privateKeyToAddress(anvilKeys[4]!)
const oneToN = getAddress('0x1111111111111111111111111111111111111111')
const context: IouContext = { service, chainId: 31337n, oneToN, serviceFee: 10n, curve: nativeCurve, latestBlock: 1_000n }
const expiry = 1_000n + MIN_IOU_EXPIRY_BLOCKS
const iou = (change: Partial<Parameters<typeof signIou>[1]> = {}, key = senderKey) =>
  signIou(key, { oneToNAddress: oneToN, chainId: 31337n, sender, receiver: service, amount: 10n, expirationBlock: expiry, ...change })
const none = { active: undefined, sessionClaimed: false }
const held = (amount: bigint, expirationBlock = expiry): StoredIou => ({ iou: iou({ amount, expirationBlock }), status: 'held', updatedAt: 0 })
const name = (result: ReturnType<typeof checkIou>) => (result.ok ? 'ok' : result.error.name)

describe("an IOU's checks (raiden-services process_payment)", () => {
  test('a first IOU of the fee opens a session; the next must be the last plus the fee', () => {
    expect(checkIou(iou(), context, none)).toMatchObject({ ok: true, free: false, expected: 10n })
    expect(checkIou(iou({ amount: 20n }), context, { active: held(10n), sessionClaimed: false })).toMatchObject({ ok: true, expected: 20n })
    expect(checkIou(iou({ amount: 19n }), context, { active: held(10n), sessionClaimed: false })).toMatchObject({
      ok: false,
      error: { name: 'InsufficientServicePayment', details: { expected_amount: 20n, actual_amount: 19n } },
    })
  })

  test('free requests ignore the IOU; a paid one needs one', () => {
    expect(checkIou(undefined, { ...context, serviceFee: 0n }, none)).toEqual({ ok: true, free: true })
    expect(checkIou(iou({ amount: 0n }, anvilKeys[5]!), { ...context, serviceFee: 0n }, none)).toEqual({ ok: true, free: true })
    expect(name(checkIou(undefined, context, none))).toBe('MissingIOU')
  })

  test("each refusal with raiden-services' name: receiver, chain, OneToN, signature, session, expiry", () => {
    expect(name(checkIou(iou({ receiver: sender }), context, none))).toBe('WrongIOURecipient')
    expect(name(checkIou(iou({ chainId: 1n }), context, none))).toBe('UnsupportedChainID')
    expect(name(checkIou(iou({ oneToNAddress: service }), context, none))).toBe('WrongOneToNAddress')
    // Signed by another key, or changed after signing.
    expect(name(checkIou(iou({}, anvilKeys[5]!), context, none))).toBe('InvalidSignature')
    expect(name(checkIou({ ...iou(), amount: 1_000n }, context, none))).toBe('InvalidSignature')
    expect(name(checkIou({ ...iou(), signature: `0x${'00'.repeat(65)}` }, context, none))).toBe('InvalidSignature')
    // Another session while one is open: the one held comes back in the details.
    const open = held(30n)
    const other = checkIou(iou({ amount: 40n, expirationBlock: expiry + 1n }), context, { active: open, sessionClaimed: false })
    expect(other).toMatchObject({ ok: false, error: { name: 'UseThisIOU', details: { iou: { amount: 30n, expiration_block: expiry, sender } } } })
    expect(name(checkIou(iou(), context, { active: undefined, sessionClaimed: true }))).toBe('IOUAlreadyClaimed')
    expect(checkIou(iou({ expirationBlock: expiry - 1n }), context, none)).toMatchObject({
      ok: false,
      error: { name: 'IOUExpiredTooEarly', details: { min_expiry: expiry } },
    })
  })

  test('the deposit must cover twice what the IOU owes', () => {
    expect(depositCovers(20n, 10n)).toBeUndefined()
    expect(depositCovers(19n, 10n)).toMatchObject({ name: 'DepositTooLow', details: { required_deposit: 20n, seen_deposit: 19n } })
  })

  test('property: whatever the session held and the amount, an IOU is taken exactly when it pays the last amount plus the fee', () => {
    fc.assert(
      fc.property(
        fc.option(fc.bigInt({ min: 0n, max: 10n ** 30n }), { nil: undefined }),
        fc.bigInt({ min: 0n, max: 10n ** 30n }),
        fc.bigInt({ min: 1n, max: 10n ** 20n }),
        (last, amount, fee) => {
          const active = last === undefined ? undefined : held(last)
          const result = checkIou(iou({ amount }), { ...context, serviceFee: fee }, { active, sessionClaimed: false })
          expect(result.ok).toBe(amount >= (last ?? 0n) + fee)
        },
      ),
      { numRuns: 50 },
    )
  })
})
