import { BlockNotFoundError } from 'viem'
import { describe, expect, test } from 'vitest'
import { ChainRpcError } from '../../../src/chain/errors.ts'
import { SyncReads } from '../../../src/chain/syncReads.ts'

/** A call that fails (or hangs) the first `failures` times, then answers 42; counts its tries. */
function flaky(failures: number, how: 'fail' | 'hang' = 'fail') {
  let tries = 0
  const call = () => {
    tries++
    if (tries > failures) return Promise.resolve(42)
    return how === 'hang' ? new Promise<number>(() => {}) : Promise.reject(new Error(`HTTP 503 (try ${tries})`))
  }
  return { call, tries: () => tries }
}

const fast = { callTimeoutMs: 50, retryForMs: 400, backoffMs: 10 }

describe('SyncReads', () => {
  test('a failed call is asked again in place, after a short pause, and its answer is the read’s', async () => {
    const reads = new SyncReads(fast)
    const { call, tries } = flaky(3)
    expect(await reads.read('eth_blockNumber', call)).toBe(42)
    expect(tries()).toBe(4)
    expect(reads.health).toMatchObject({ unreachable: false })
    expect(reads.health.failingSince).toBeUndefined()
  })

  test('a hung call is given up after the call timeout and asked again: it cannot stall the read', async () => {
    const reads = new SyncReads(fast)
    const { call, tries } = flaky(2, 'hang')
    const started = Date.now()
    expect(await reads.read('eth_getLogs', call)).toBe(42)
    expect(tries()).toBe(3)
    expect(Date.now() - started).toBeLessThan(400)
  })

  test('once the retry budget is spent: ChainRpcError with the last failure, and the endpoint is out of reach since its first failure', async () => {
    let now = 1_000
    const reads = new SyncReads({ ...fast, now: () => now })
    const { call } = flaky(Number.POSITIVE_INFINITY)
    const failing = reads.read('eth_blockNumber', () => {
      now += 100
      return call()
    })
    await expect(failing).rejects.toThrow(ChainRpcError)
    await expect(failing).rejects.toThrow(/^eth_blockNumber failed: HTTP 503 \(try \d\)/)
    expect(reads.health).toMatchObject({ unreachable: true, failingSince: 1_100, lastError: { code: 'CHAIN_RPC' } })
    // The next answer, whoever reads, ends it.
    expect(await reads.read('eth_chainId', () => Promise.resolve(1))).toBe(1)
    expect(reads.health).toEqual({ lastAnswerAt: now, unreachable: false })
  })

  test("an error that is the endpoint's answer (no such block) is thrown as it is, never asked again", async () => {
    const reads = new SyncReads(fast)
    let tries = 0
    const missing = reads.read(
      'eth_getBlockByNumber',
      () => {
        tries++
        return Promise.reject(new BlockNotFoundError({ blockNumber: 7n }))
      },
      (e) => e instanceof BlockNotFoundError,
    )
    await expect(missing).rejects.toBeInstanceOf(BlockNotFoundError)
    expect(tries).toBe(1)
    expect(reads.health.unreachable).toBe(false)
  })

  test('stopping ends a read under way at once, hung call or pause', async () => {
    const stop = new AbortController()
    const reads = new SyncReads({ ...fast, callTimeoutMs: 60_000, retryForMs: 60_000, signal: stop.signal })
    const hung = reads.read('eth_blockNumber', flaky(Number.POSITIVE_INFINITY, 'hang').call)
    setTimeout(() => stop.abort(), 20)
    await expect(hung).rejects.toThrow(/the sync is stopping/)
    // The endpoint did not fail: the node stopped asking.
    expect(reads.health).toEqual({ unreachable: false })
  })
})
