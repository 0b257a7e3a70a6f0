import { describe, expect, test } from 'vitest'
import { estimateHead } from '../../../../src/node/runtime/chainHead.ts'

describe('estimateHead', () => {
  const seen = { confirmedBlock: 100n, latestBlock: 105n, at: 10_000, blockTimeMs: 2_000 }

  test('right after a look at the chain, the head as seen', () => {
    expect(estimateHead(seen, 10_000)).toBe(100n)
    expect(estimateHead(seen, 11_999)).toBe(100n)
  })

  test('while the endpoint is silent, one block more for every block time gone by', () => {
    expect(estimateHead(seen, 12_000)).toBe(101n)
    expect(estimateHead(seen, 10_000 + 60_000)).toBe(130n)
  })

  test('without a look yet, or a block time measured, or with a clock that went back: no guess', () => {
    expect(estimateHead({ confirmedBlock: 7n, latestBlock: 12n }, 99_999)).toBe(7n)
    expect(estimateHead({ ...seen, blockTimeMs: undefined }, 70_000)).toBe(100n)
    expect(estimateHead(seen, 5_000)).toBe(100n)
  })
})
