import fc from 'fast-check'
import { getAddress, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { checkIou, MIN_IOU_EXPIRY_BLOCKS, type StoredIou } from '../../../src/pathfinding/iou.ts'
import { nextIou, packIou, packIouQuery, whyNotOurIou, type Iou } from '../../../src/protocol/iou.ts'
import { recoverPackedSignerSync, signPackedSync } from '../../../src/protocol/signature.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

// How a node pays a pathfinding service (docs/decisions/0073): Raiden's create_current_iou, checked here against the
// service's own checks (src/pathfinding/iou.ts, raiden-services' process_payment), so that what one side signs the
// other takes.

const key: Hex = anvilKeys[3]!
const sender = privateKeyToAddress(key)
const service = privateKeyToAddress(anvilKeys[4]!)
const oneToN = getAddress('0x1111111111111111111111111111111111111111')
const terms = (price: bigint, block: bigint) => ({ sender, receiver: service, oneToN, chainId: 31337n, price, block, timeout: 200_000n })
const signed = (iou: Iou) => ({ ...iou, signature: signPackedSync(jsSecp256k1, key, packIou(iou)) })

describe('the IOU a node pays a request with', () => {
  test('none held: a new session of the price, expiring the timeout after the block; held: raised by the price, its expiration kept', () => {
    expect(nextIou(undefined, terms(10n, 5_000n))).toEqual({
      oneToNAddress: oneToN,
      chainId: 31337n,
      sender,
      receiver: service,
      amount: 10n,
      expirationBlock: 205_000n,
    })
    const last = nextIou(undefined, terms(10n, 5_000n))
    expect(nextIou(last, terms(10n, 9_000n))).toEqual({ ...last, amount: 20n })
  })

  test('the service takes every IOU a node makes so, session after session and raise after raise (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 20n }),
        fc.array(fc.bigInt({ min: 0n, max: 1_000_000n }), { minLength: 1, maxLength: 8 }),
        (price, blocks) => {
          let held: StoredIou | undefined
          let block = 1_000n
          for (const step of blocks) {
            block += step
            const iou = signed(nextIou(held?.iou, terms(price, block)))
            const checked = checkIou(
              iou,
              { service, chainId: 31337n, oneToN, serviceFee: price, curve: jsSecp256k1, latestBlock: block },
              { active: held, sessionClaimed: false },
            )
            expect(checked).toMatchObject({ ok: true, free: false, expected: (held?.iou.amount ?? 0n) + price })
            held = { iou, status: 'held', updatedAt: 0 }
          }
        },
      ),
    )
    // A session shorter than the service's week is refused: the timeout must outlast it (--pathfinding-iou-timeout).
    const short = signed(nextIou(undefined, { ...terms(10n, 1_000n), timeout: MIN_IOU_EXPIRY_BLOCKS - 1n }))
    expect(
      checkIou(
        short,
        { service, chainId: 31337n, oneToN, serviceFee: 10n, curve: jsSecp256k1, latestBlock: 1_000n },
        { active: undefined, sessionClaimed: false },
      ),
    ).toMatchObject({
      ok: false,
      error: { name: 'IOUExpiredTooEarly' },
    })
  })

  test('a last IOU the service answers is raised only if it is ours: signed by us, to it, for our chain and OneToN', () => {
    const last = nextIou(undefined, terms(10n, 5_000n))
    const why = (iou: Iou, signer: Address | undefined) => whyNotOurIou(iou, { sender, receiver: service, oneToN, chainId: 31337n, signer })
    expect(why(last, sender)).toBeUndefined()
    expect(why(last, service)).toBe('it is not signed by this node')
    expect(why(last, undefined)).toBe('it is not signed by this node')
    expect(why({ ...last, receiver: sender }, sender)).toBe('it is not from this node to this service')
    expect(why({ ...last, chainId: 1n }, sender)).toBe('it is for chain 1')
    expect(why({ ...last, oneToNAddress: service }, sender)).toMatch(/^it is for another OneToN contract/)
  })

  test("the last-IOU query is signed over sender || receiver || the timestamp's text, as raiden-services recovers it", () => {
    const timestamp = '2026-11-29T14:03:07'
    const bytes = packIouQuery(sender, service, timestamp)
    expect(bytes.toLowerCase()).toBe(`0x${sender.slice(2)}${service.slice(2)}${Buffer.from(timestamp).toString('hex')}`.toLowerCase())
    expect(recoverPackedSignerSync(jsSecp256k1, bytes, signPackedSync(jsSecp256k1, key, bytes))).toBe(sender)
  })
})
