import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { SerialByKey } from '../../src/serialByKey.ts'

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('SerialByKey', () => {
  test("a key's tasks run one at a time in the order given, failures included; another key's do not wait for them", async () => {
    const serial = new SerialByKey()
    const log: string[] = []
    let release!: () => void
    const stalled = new Promise<void>((resolve) => (release = resolve))
    const first = serial.run('a', async () => {
      log.push('a1 start')
      await stalled
      log.push('a1 end')
      throw new Error('a1 failed')
    })
    const second = serial.run('a', () => {
      log.push('a2')
      return 2
    })
    const other = serial.run('b', () => {
      log.push('b1')
      return 'b'
    })
    // b ran while a's first task is still stalled, and a's second waits for it.
    await expect(other).resolves.toBe('b')
    expect(log).toEqual(['a1 start', 'b1'])
    expect(serial.busy).toBe(1)
    release()
    await expect(first).rejects.toThrow('a1 failed')
    await expect(second).resolves.toBe(2)
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2'])
  })

  test('a task that throws at once rejects its own promise only; a task starts in a later microtask, never inside run', async () => {
    const serial = new SerialByKey()
    let ran = false
    const failing = serial.run('k', () => {
      throw new Error('at once')
    })
    const next = serial.run('k', () => {
      ran = true
    })
    expect(ran).toBe(false)
    await expect(failing).rejects.toThrow('at once')
    await next
    expect(ran).toBe(true)
  })

  test('idle waits for every task queued so far; a key is forgotten once its last task settles', async () => {
    const serial = new SerialByKey()
    const done: number[] = []
    for (let i = 0; i < 5; i++) void serial.run(`k${i % 2}`, () => tick(5 - i).then(() => done.push(i)))
    expect(serial.busy).toBe(2)
    await serial.idle()
    expect(done.sort()).toEqual([0, 1, 2, 3, 4])
    await tick(0)
    expect(serial.busy).toBe(0)
    await serial.idle()
  })

  test('property: whatever the keys, delays and failures, no two tasks of a key overlap and each key keeps its order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.integer({ min: 0, max: 3 }), delay: fc.integer({ min: 0, max: 3 }), fails: fc.boolean() }), { maxLength: 30 }),
        async (tasks) => {
          const serial = new SerialByKey()
          const running = new Set<number>()
          const order = new Map<number, number[]>()
          let overlap = false
          await Promise.allSettled(
            tasks.map(({ key, delay, fails }, i) =>
              serial.run(String(key), async () => {
                if (running.has(key)) overlap = true
                running.add(key)
                await tick(delay)
                order.set(key, [...(order.get(key) ?? []), i])
                running.delete(key)
                if (fails) throw new Error('fails')
              }),
            ),
          )
          expect(overlap).toBe(false)
          for (const [key, list] of order) expect(list).toEqual(tasks.flatMap((t, i) => (t.key === key ? [i] : [])))
          await tick(0)
          expect(serial.busy).toBe(0)
        },
      ),
      { numRuns: 40 },
    )
  })
})
