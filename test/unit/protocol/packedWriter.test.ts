import fc from 'fast-check'
import { bytesToHex, encodePacked, type Hex } from 'viem'
import { expect, test } from 'vitest'
import { PackedWriter } from '../../../src/protocol/packedWriter.ts'

const widths = fc.constantFrom(1, 2, 8, 20, 31, 32)
// Small values take the double path, large ones the hex path: both, and the edge between them.
const fitting = (width: number) =>
  fc.oneof(
    fc.bigInt({ min: 0n, max: (1n << BigInt(width * 8)) - 1n }),
    fc.bigInt({ min: 0n, max: 2n ** 60n }).filter((v) => v < 1n << BigInt(width * 8)),
    fc.constantFrom(0n, 1n, 255n, 256n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n).filter((v) => v < 1n << BigInt(width * 8)),
  )

test('uint writes the same bytes as abi.encodePacked, around a fixed field and whatever the value (property)', () => {
  fc.assert(
    fc.property(
      widths.chain((width) => fc.tuple(fc.constant(width), fitting(width))),
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      ([width, value], fixed) => {
        const hash = bytesToHex(fixed)
        const packed = new PackedWriter(width + 32 + width).uint(value, width).fixed(hash, 32).uint(value, width).done()
        const type = `uint${width * 8}` as 'uint256'
        expect(bytesToHex(packed)).toBe(encodePacked([type, 'bytes32', type], [value, hash as Hex, value]))
      },
    ),
    { numRuns: 1_000 },
  )
})

test('uint refuses a negative value or one that does not fit its width', () => {
  expect(() => new PackedWriter(1).uint(256n, 1)).toThrow(RangeError)
  expect(() => new PackedWriter(32).uint(-1n, 32)).toThrow(RangeError)
  expect(() => new PackedWriter(32).uint(1n << 256n, 32)).toThrow(RangeError)
  expect(bytesToHex(new PackedWriter(32).uint((1n << 256n) - 1n, 32).done())).toBe(`0x${'ff'.repeat(32)}`)
})
