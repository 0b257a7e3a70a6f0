import { hexToBytes, type Hex } from 'viem'

/**
 * Builds `abi.encodePacked`-style byte strings straight into a Uint8Array: big-endian unsigned integers
 * padded to their width, raw 20-byte addresses and fixed bytes. Faster than going through hex strings,
 * which matters on the signing and verifying hot path.
 */
export class PackedWriter {
  readonly bytes: Uint8Array
  private offset = 0

  constructor(size: number) {
    this.bytes = new Uint8Array(size)
  }

  /** An unsigned integer of `width` bytes; throws if it does not fit. */
  uint(value: bigint, width: number): this {
    if (value < 0n || value >> BigInt(width * 8) !== 0n) throw new RangeError(`${value} does not fit in uint${width * 8}`)
    let v = value
    for (let i = this.offset + width - 1; i >= this.offset; i--) {
      this.bytes[i] = Number(v & 0xffn)
      v >>= 8n
    }
    this.offset += width
    return this
  }

  /** Raw bytes of exactly `width` bytes given as hex (addresses: 20, hashes: 32, signatures: 65). */
  fixed(hex: Hex, width: number): this {
    if (hex.length !== 2 + width * 2) throw new RangeError(`expected ${width} bytes, got ${(hex.length - 2) / 2}`)
    this.bytes.set(hexToBytes(hex), this.offset)
    this.offset += width
    return this
  }

  raw(data: Uint8Array): this {
    this.bytes.set(data, this.offset)
    this.offset += data.length
    return this
  }

  /** The finished bytes; throws if fewer were written than allocated (a layout bug). */
  done(): Uint8Array {
    if (this.offset !== this.bytes.length) throw new RangeError(`packed ${this.offset} of ${this.bytes.length} bytes`)
    return this.bytes
  }
}
