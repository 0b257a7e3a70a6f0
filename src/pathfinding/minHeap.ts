/**
 * A binary min-heap of (key, value) number pairs, in two growable typed arrays: the search pushes and pops millions
 * of them a second, and objects per entry would cost the garbage collector more than the search itself. Equal keys
 * come out in no particular order; a decrease of a key is a second push (the caller skips what it has settled).
 */
export class MinHeap {
  private keys = new Float64Array(64)
  private values = new Int32Array(64)
  size = 0

  clear(): void {
    this.size = 0
  }

  push(key: number, value: number): void {
    if (this.size === this.keys.length) {
      const keys = new Float64Array(this.size * 2)
      keys.set(this.keys)
      const values = new Int32Array(this.size * 2)
      values.set(this.values)
      this.keys = keys
      this.values = values
    }
    let i = this.size++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (this.keys[parent]! <= key) break
      this.keys[i] = this.keys[parent]!
      this.values[i] = this.values[parent]!
      i = parent
    }
    this.keys[i] = key
    this.values[i] = value
  }

  /** The smallest key (the heap must not be empty). */
  peekKey(): number {
    return this.keys[0]!
  }

  /** Removes the entry with the smallest key and returns its value (the heap must not be empty). */
  pop(): number {
    const top = this.values[0]!
    const last = --this.size
    const key = this.keys[last]!
    const value = this.values[last]!
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= last) break
      if (child + 1 < last && this.keys[child + 1]! < this.keys[child]!) child++
      if (this.keys[child]! >= key) break
      this.keys[i] = this.keys[child]!
      this.values[i] = this.values[child]!
      i = child
    }
    this.keys[i] = key
    this.values[i] = value
    return top
  }
}
