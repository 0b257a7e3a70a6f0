import { describe, expect, it } from 'vitest'
import { bigintAsDecimal, stringify } from '../../../src/api/bigintJson.ts'

describe('bigints in JSON', () => {
  it('writes every bigint, at any depth and of any size, as its decimal string, and the rest as JSON.stringify does', () => {
    const big = 2n ** 256n - 1n
    expect(stringify({ amount: big, list: [0n, -5n, 1], nested: { id: 7n, text: '7', none: null, gone: undefined } })).toBe(
      `{"amount":"${big}","list":["0","-5",1],"nested":{"id":"7","text":"7","none":null}}`,
    )
    expect(stringify(12n)).toBe('"12"')
    expect(JSON.parse(stringify({ amount: big })).amount).toBe(big.toString())
  })

  it('is a replacer JSON.stringify takes with an indent', () => {
    expect(JSON.stringify({ a: 1n }, bigintAsDecimal, 1)).toBe('{\n "a": "1"\n}')
  })
})
