import { describe, expect, test, vi } from 'vitest'
import { Engine, replay, snapshotAfter, type Applied } from '../../../../src/node/runtime/engine.ts'
import { defaultContext, initialState } from '../../../../src/protocol/state/access.ts'
import { openMemoryStorage } from '../../../../src/storage/memoryStorage.ts'
import { StorageError, type Commit, type Storage } from '../../../../src/storage/storage.ts'
import { journalEntry, transaction } from '../../storage/support/records.ts'

const identity = { chainId: 1n, registry: '0x00000000000000000000000000000000000000aa', address: '0x00000000000000000000000000000000000000bb' } as const

/** A memory store whose commits can be held (to see group commit) or made to fail. */
async function store() {
  const inner = await openMemoryStorage(identity)
  const commits: Commit[] = []
  let hold: Promise<void> | undefined
  let failNext: Error | undefined
  const storage: Storage = new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'commit')
        return async (batch: Commit) => {
          commits.push(batch)
          await hold
          if (failNext) throw failNext
          return target.commit(batch)
        }
      const value = Reflect.get(target, key, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    storage,
    commits,
    holdCommits: () => {
      let release!: () => void
      hold = new Promise((r) => (release = r))
      return () => {
        hold = undefined
        release()
      }
    },
    failCommits: (error: Error) => (failNext = error),
  }
}

function engine(storage: Storage, applied: Applied[][] = [], snapshotWhenIdle?: number) {
  const state = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
  return new Engine({
    state,
    seq: 0,
    ctx: defaultContext,
    storage,
    now: () => 1_000,
    snapshotEvery: 3,
    ...(snapshotWhenIdle !== undefined ? { snapshotWhenIdle } : {}),
    onApplied: (a) => void applied.push(a),
  })
}

describe('Engine', () => {
  test('changes that arrive while a commit is in flight go together into the next one (group commit), in order', async () => {
    const s = await store()
    const applied: Applied[][] = []
    const e = engine(s.storage, applied)
    const release = s.holdCommits()
    const first = e.dispatch({ type: 'block', blockNumber: 1n })
    await Promise.resolve()
    const rest = [2n, 3n, 4n].map((blockNumber) => e.dispatch({ type: 'block', blockNumber }))
    release()
    const results = await Promise.all([first, ...rest])
    expect(s.commits.map((c) => c.changes!.map((ch) => ch.seq))).toEqual([[1], [2, 3, 4]])
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3, 4])
    expect(applied.map((batch) => batch.map((a) => a.seq))).toEqual([[1], [2, 3, 4]])
    expect(e.current.blockNumber).toBe(4n)
  })

  test('nothing of a batch takes effect before it is durable: the state moves and effects go out only after the commit', async () => {
    const s = await store()
    const applied: Applied[][] = []
    const e = engine(s.storage, applied)
    const release = s.holdCommits()
    const pending = e.dispatch({ type: 'block', blockNumber: 7n })
    await new Promise((r) => setTimeout(r, 10))
    expect(e.current.blockNumber).toBe(0n)
    expect(applied).toEqual([])
    release()
    await pending
    expect(e.current.blockNumber).toBe(7n)
    expect(applied).toHaveLength(1)
  })

  test('a commit is flushed (not relaxed) unless it holds nothing but acknowledgements received: a change, a done transaction or a snapshot is', async () => {
    const s = await store()
    const e = engine(s.storage)
    const settledCommit = async () => {
      await e.settled()
      return s.commits.at(-1)!
    }
    e.forget(['ack-1', 'ack-2'])
    expect(await settledCommit()).toMatchObject({ relaxed: true, changes: [], outbox: { put: [], delete: ['ack-1', 'ack-2'] } })
    // An acknowledgement that comes with a change goes into its flushed commit.
    const release = s.holdCommits()
    const first = e.dispatch({ type: 'block', blockNumber: 1n })
    await Promise.resolve()
    e.forget(['ack-3'])
    const second = e.dispatch({ type: 'block', blockNumber: 2n })
    release()
    await Promise.all([first, second])
    expect(s.commits.slice(-2).map((c) => [c.relaxed, c.changes!.length, c.outbox!.delete])).toEqual([
      [false, 1, []],
      [false, 1, ['ack-3']],
    ])
    e.forget([], ['tx-done'])
    expect(await settledCommit()).toMatchObject({ relaxed: false })
    e.updateTransaction(transaction('tx-sent', 'sent'))
    expect(await settledCommit()).toMatchObject({ relaxed: false })
    await e.snapshot()
    expect(s.commits.at(-1)).toMatchObject({ relaxed: false, snapshot: { seq: 2 } })
  })

  test('a failed commit rejects its batch and everything after it, changes nothing, and the engine stays stopped', async () => {
    const s = await store()
    const applied: Applied[][] = []
    const e = engine(s.storage, applied)
    await e.dispatch({ type: 'block', blockNumber: 1n })
    const failure = new Error('disk full')
    s.failCommits(failure)
    const release = s.holdCommits()
    const failing = e.dispatch({ type: 'block', blockNumber: 2n })
    await Promise.resolve()
    const queued = e.dispatch({ type: 'block', blockNumber: 3n })
    release()
    await expect(failing).rejects.toBe(failure)
    await expect(queued).rejects.toBe(failure)
    await expect(e.dispatch({ type: 'block', blockNumber: 4n })).rejects.toBe(failure)
    expect(e.current.blockNumber).toBe(1n)
    expect(applied).toHaveLength(1)
    await e.settled()
    expect((await s.storage.load()).changes.map((c) => c.seq)).toEqual([1])
  })

  test('a transition that throws (a bug in the core) stops the engine: what waits is rejected, nothing of it is committed', async () => {
    const s = await store()
    const e = engine(s.storage)
    await e.dispatch({ type: 'block', blockNumber: 1n })
    const bug = new Error('a bug in the core')
    // A change the core cannot read: its transition throws.
    const unreadable = {
      type: 'block',
      get blockNumber(): bigint {
        throw bug
      },
    } as const
    const release = s.holdCommits()
    const before = e.dispatch({ type: 'block', blockNumber: 2n })
    const failing = e.dispatch(unreadable)
    await expect(before).rejects.toBe(bug)
    await expect(failing).rejects.toBe(bug)
    await expect(e.dispatch({ type: 'block', blockNumber: 3n })).rejects.toBe(bug)
    release()
    await e.settled()
    expect(e.current.blockNumber).toBe(1n)
    expect((await s.storage.load()).changes.map((c) => c.seq)).toEqual([1])
  })

  test('a snapshot replaces the changes it covers every `snapshotEvery` changes', async () => {
    const s = await store()
    const e = engine(s.storage)
    for (const blockNumber of [1n, 2n, 3n, 4n]) await e.dispatch({ type: 'block', blockNumber })
    const loaded = await s.storage.load()
    expect(loaded.snapshot?.seq).toBe(3)
    expect(loaded.snapshot?.state.blockNumber).toBe(3n)
    expect(loaded.changes.map((c) => c.seq)).toEqual([4])
  })

  test('a state of many channels (ours and the graphs) waits for as many changes before its next snapshot: its bytes per change stay flat', () => {
    const state = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
    expect(snapshotAfter(state, 3)).toBe(3)
    expect(snapshotAfter(state)).toBe(500)
    const graph = (n: number) =>
      Object.fromEntries(
        Array.from({ length: n }, (_, i) => [
          String(i),
          { participant1: identity.address, participant2: identity.address, deposit1: 0n, deposit2: 0n, withdrawn1: 0n, withdrawn2: 0n, open: true },
        ]),
      )
    const big = {
      ...state,
      tokenNetworks: {
        [identity.address]: { token: identity.address, graph: graph(700) },
        [identity.registry]: { token: identity.address, graph: graph(600) },
      },
    }
    expect(snapshotAfter(big)).toBe(1300)
    expect(snapshotAfter(big, 2000)).toBe(2000)
  })

  test("the engine counts a large state's channels: its next snapshot comes after that many changes, not snapshotEvery", async () => {
    const s = await store()
    const base = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
    const graph = Object.fromEntries(
      Array.from({ length: 5 }, (_, i) => [
        String(i),
        { participant1: identity.address, participant2: identity.address, deposit1: 0n, deposit2: 0n, withdrawn1: 0n, withdrawn2: 0n, open: true },
      ]),
    )
    const e = new Engine({
      state: { ...base, tokenNetworks: { [identity.address]: { token: identity.address, graph } } },
      seq: 0,
      ctx: defaultContext,
      storage: s.storage,
      now: () => 1_000,
      snapshotEvery: 3,
      onApplied: () => {},
    })
    for (const blockNumber of [1n, 2n, 3n, 4n]) await e.dispatch({ type: 'block', blockNumber })
    expect((await s.storage.load()).snapshot).toBeUndefined()
    await e.dispatch({ type: 'block', blockNumber: 5n })
    expect((await s.storage.load()).snapshot?.seq).toBe(5)
  })

  test('once no change has come for `snapshotWhenIdle` ms, a snapshot covers them all; changes that keep coming put it off', async () => {
    vi.useFakeTimers()
    try {
      const s = await store()
      const e = engine(s.storage, [], 100)
      await e.dispatch({ type: 'block', blockNumber: 1n })
      await vi.advanceTimersByTimeAsync(60)
      await e.dispatch({ type: 'block', blockNumber: 2n })
      await vi.advanceTimersByTimeAsync(60)
      expect((await s.storage.load()).snapshot).toBeUndefined()
      await vi.advanceTimersByTimeAsync(40)
      await e.settled()
      const loaded = await s.storage.load()
      expect(loaded.snapshot?.seq).toBe(2)
      expect(loaded.snapshot?.state.blockNumber).toBe(2n)
      expect(loaded.changes).toEqual([])
      // Nothing new: no second snapshot.
      const commits = s.commits.length
      await vi.advanceTimersByTimeAsync(1_000)
      expect(s.commits).toHaveLength(commits)
    } finally {
      vi.useRealTimers()
    }
  })

  test('snapshot() commits one at once when changes came since the last, none otherwise; after close() no idle one comes', async () => {
    vi.useFakeTimers()
    try {
      const s = await store()
      const e = engine(s.storage, [], 100)
      await e.snapshot()
      expect(s.commits).toHaveLength(0)
      await e.dispatch({ type: 'block', blockNumber: 1n })
      await e.snapshot()
      expect((await s.storage.load()).snapshot?.seq).toBe(1)
      await e.snapshot()
      expect(s.commits).toHaveLength(2)
      await e.dispatch({ type: 'block', blockNumber: 2n })
      e.close()
      await vi.advanceTimersByTimeAsync(1_000)
      expect(s.commits).toHaveLength(3)
      expect((await s.storage.load()).changes.map((c) => c.seq)).toEqual([2])
    } finally {
      vi.useRealTimers()
    }
  })

  test('after a restart, a clean stop before any new change still snapshots what was replayed: the next start replays nothing', async () => {
    const s = await store()
    const first = engine(s.storage)
    await first.dispatch({ type: 'block', blockNumber: 1n })
    await first.dispatch({ type: 'block', blockNumber: 2n })
    first.close() // a reload: no snapshot
    const loaded = await s.storage.load()
    expect(loaded.changes.map((c) => c.seq)).toEqual([1, 2])
    const base = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
    const { state, seq } = replay(base, 0, loaded.changes, defaultContext)
    const again = new Engine({ state, seq, replayed: loaded.changes.length, ctx: defaultContext, storage: s.storage, now: () => 1_000, onApplied: () => {} })
    await again.snapshot()
    const after = await s.storage.load()
    expect(after.changes).toEqual([])
    expect(after.snapshot).toMatchObject({ seq: 2, state: { blockNumber: 2n } })
  })

  test('an engine not yet handed its effect handler commits nothing and loses nothing: once handed, what came meanwhile is committed in order and carried out', async () => {
    const s = await store()
    const state = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
    const e = new Engine({ state, seq: 0, ctx: defaultContext, storage: s.storage, now: () => 1_000 })
    let settled = false
    const results = [1n, 2n].map((blockNumber) => e.dispatch({ type: 'block', blockNumber }))
    e.forget(['ack-1'])
    void e.settled().then(() => (settled = true))
    await new Promise((r) => setTimeout(r, 20))
    expect(s.commits).toEqual([])
    expect(e.current.blockNumber).toBe(0n)
    expect(settled).toBe(false)

    const applied: Applied[][] = []
    e.handEffectsTo((a) => void applied.push(a))
    expect((await Promise.all(results)).map((r) => r.seq)).toEqual([1, 2])
    expect(s.commits.map((c) => [c.changes!.map((ch) => ch.seq), c.outbox!.delete])).toEqual([[[1, 2], ['ack-1']]])
    expect(applied.map((batch) => batch.map((a) => a.change))).toEqual([
      [
        { type: 'block', blockNumber: 1n },
        { type: 'block', blockNumber: 2n },
      ],
    ])
    await e.settled()
    expect(settled).toBe(true)
    expect(e.current.blockNumber).toBe(2n)
    // One effect handler: a second is a wiring mistake, refused.
    expect(() => e.handEffectsTo(() => {})).toThrow(/one effect handler/)
  })

  test('handed its effect handler with nothing waiting, an engine commits nothing until a change comes (no idle snapshot of a node that never ran)', async () => {
    vi.useFakeTimers()
    try {
      const s = await store()
      const state = initialState({ address: identity.address, chainId: 1n, blockNumber: 0n })
      const e = new Engine({ state, seq: 3, replayed: 3, ctx: defaultContext, storage: s.storage, now: () => 1_000, snapshotWhenIdle: 100 })
      e.handEffectsTo(() => {})
      await vi.advanceTimersByTimeAsync(1_000)
      expect(s.commits).toEqual([])
    } finally {
      vi.useRealTimers()
    }
  })
})
describe('the transaction journal', () => {
  /** Whether `promise` has settled after everything queued so far has run. */
  const settledYet = async (promise: Promise<unknown>) => {
    let settled = false
    promise.then(
      () => (settled = true),
      () => (settled = true),
    )
    await new Promise((r) => setTimeout(r, 10))
    return settled
  }

  test('a write goes into the next commit with the changes queued meanwhile (group commit), flushed, and resolves once that commit is durable', async () => {
    const s = await store()
    const e = engine(s.storage)
    const release = s.holdCommits()
    const first = e.dispatch({ type: 'block', blockNumber: 1n })
    await Promise.resolve()
    const put = e.writeJournal({ put: [journalEntry(0)] })
    const second = e.dispatch({ type: 'block', blockNumber: 2n })
    // Not durable yet: the commit that holds it waits behind the one in flight.
    expect(await settledYet(put)).toBe(false)
    expect((await s.storage.load()).chainTransactions).toEqual([])
    release()
    await Promise.all([first, put, second])
    expect(s.commits.map((c) => [c.changes!.map((ch) => ch.seq), c.chainTransactions?.put?.map((j) => j.nonce), c.relaxed])).toEqual([
      [[1], [], false],
      [[2], [0], false],
    ])
    expect((await s.storage.load()).chainTransactions).toEqual([journalEntry(0)])
    // Alone, with nothing else to commit: a commit of its own, flushed too (a delete as well as a put).
    await e.writeJournal({ delete: [0] })
    expect(s.commits.at(-1)).toMatchObject({ relaxed: false, changes: [], chainTransactions: { put: [], delete: [0] } })
    expect((await s.storage.load()).chainTransactions).toEqual([])
  })

  test('writes of one nonce reach the store in the order they were made, in one commit or several', async () => {
    const s = await store()
    const e = engine(s.storage)
    const release = s.holdCommits()
    const inFlight = e.writeJournal({ put: [journalEntry(1)] })
    await Promise.resolve()
    // Queued behind it, together: the last write of each nonce is what the next commit holds.
    const writes = [
      e.writeJournal({ put: [journalEntry(1, 2)] }),
      e.writeJournal({ delete: [1] }),
      e.writeJournal({ put: [journalEntry(1, 3), journalEntry(2)] }),
      e.writeJournal({ put: [journalEntry(3)] }),
      e.writeJournal({ delete: [3] }),
      e.writeJournal({ put: [journalEntry(4)], delete: [4] }),
    ]
    release()
    await Promise.all([inFlight, ...writes])
    expect(s.commits).toHaveLength(2)
    expect(s.commits[1]!.chainTransactions).toEqual({ put: [journalEntry(1, 3), journalEntry(2)], delete: [3, 4] })
    expect((await s.storage.load()).chainTransactions).toEqual([journalEntry(1, 3), journalEntry(2)])
  })

  test('what the call saw is what is stored: the caller changing its entry before the commit changes nothing', async () => {
    const s = await store()
    const e = engine(s.storage)
    const release = s.holdCommits()
    const entry = journalEntry(5)
    const put = e.writeJournal({ put: [entry] })
    entry.status = 'mined'
    entry.attempts.push(journalEntry(5, 2).attempts[1]!)
    release()
    await put
    expect((await s.storage.load()).chainTransactions).toEqual([journalEntry(5)])
  })

  test('an entry no store could take rejects its call alone; the engine goes on', async () => {
    const s = await store()
    const e = engine(s.storage)
    await expect(e.writeJournal({ put: [{ ...journalEntry(1), nonce: -1 }] })).rejects.toBeInstanceOf(StorageError)
    await expect(e.writeJournal({ put: [{ ...journalEntry(1), note: () => 1 } as never] })).rejects.toBeInstanceOf(StorageError)
    await expect(e.writeJournal({ delete: [1.5] })).rejects.toBeInstanceOf(StorageError)
    await e.writeJournal({ put: [journalEntry(1)] })
    await e.dispatch({ type: 'block', blockNumber: 1n })
    expect((await s.storage.load()).chainTransactions).toEqual([journalEntry(1)])
  })

  test('a failed commit rejects the writes it held and those queued behind it, and every later one: nothing of them is stored', async () => {
    const s = await store()
    const e = engine(s.storage)
    await e.writeJournal({ put: [journalEntry(1)] })
    const failure = new Error('disk full')
    s.failCommits(failure)
    const release = s.holdCommits()
    const failing = e.writeJournal({ put: [journalEntry(2)] })
    const change = e.dispatch({ type: 'block', blockNumber: 1n })
    await Promise.resolve()
    const queued = e.writeJournal({ delete: [1] })
    release()
    await expect(failing).rejects.toBe(failure)
    await expect(change).rejects.toBe(failure)
    await expect(queued).rejects.toBe(failure)
    await expect(e.writeJournal({ put: [journalEntry(3)] })).rejects.toBe(failure)
    await e.settled()
    expect((await s.storage.load()).chainTransactions).toEqual([journalEntry(1)])
  })
})
