// The candidates for "tasks one at a time per key" (src/serialByKey.ts, docs/decisions/0061), each behind the same
// `run(key, task)` and each forgetting a key once it is idle, as ours does: bench/serial.ts measures them.
import { Mutex } from 'async-mutex'
import pLimit, { type LimitFunction } from 'p-limit'
import PQueue from 'p-queue'
import { SerialByKey } from '../src/serialByKey.ts'

export type SerialOption = { run<T>(key: string, task: () => Promise<T>): Promise<T>; readonly busy: number }

export const ours = (): SerialOption => new SerialByKey()

/** A p-queue of concurrency 1 per key, dropped on its `idle` event. */
export function pQueue(): SerialOption {
  const queues = new Map<string, PQueue>()
  return {
    run(key, task) {
      let queue = queues.get(key)
      if (!queue) {
        const made = new PQueue({ concurrency: 1 })
        made.addEventListener('idle', () => {
          if (queues.get(key) === made) queues.delete(key)
        })
        queues.set(key, made)
        queue = made
      }
      return queue.add(task) as Promise<never>
    },
    get busy() {
      return queues.size
    },
  }
}

/** A p-limit of 1 per key, dropped once nothing is active or pending on it. */
export function pLimitOne(): SerialOption {
  const limits = new Map<string, LimitFunction>()
  return {
    run(key, task) {
      let limit = limits.get(key)
      if (!limit) {
        limit = pLimit(1)
        limits.set(key, limit)
      }
      const made = limit
      const run = made(task)
      const forget = () => {
        if (made.activeCount === 0 && made.pendingCount === 0 && limits.get(key) === made) limits.delete(key)
      }
      run.then(forget, forget)
      return run
    },
    get busy() {
      return limits.size
    },
  }
}

/** An async-mutex Mutex per key (runExclusive), dropped once it is unlocked with nobody waiting. */
export function asyncMutex(): SerialOption {
  const mutexes = new Map<string, Mutex>()
  return {
    run(key, task) {
      let mutex = mutexes.get(key)
      if (!mutex) {
        mutex = new Mutex()
        mutexes.set(key, mutex)
      }
      const made = mutex
      const run = made.runExclusive(task)
      const forget = () => {
        if (!made.isLocked() && mutexes.get(key) === made) mutexes.delete(key)
      }
      run.then(forget, forget)
      return run
    },
    get busy() {
      return mutexes.size
    },
  }
}

export const serialOptions = { ours, 'p-queue': pQueue, 'p-limit': pLimitOne, 'async-mutex': asyncMutex } as const
