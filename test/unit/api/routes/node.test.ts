import { describe, expect, test } from 'vitest'
import { statusAnswerOf } from '../../../../src/api/routes/node.ts'
import type { ChainFollowing, NodeStatus } from '../../../../src/node/notices.ts'

const at = Date.UTC(2026, 4, 6, 7, 8, 9, 10)
const status = (lifecycle: NodeStatus['status'], chain: ChainFollowing, blocksToSync = 0n): NodeStatus => ({
  status: lifecycle,
  blocksToSync,
  syncedBlock: 100n,
  headBlock: 100n + blocksToSync,
  chain,
})
const unreachable: ChainFollowing = { state: 'unreachable', since: at, error: { code: 'CHAIN_RPC', message: 'eth_blockNumber failed: fetch failed' } }

describe('GET /status', () => {
  test('ready only past the first sync and following the chain: the answer Raiden clients know', () => {
    expect(statusAnswerOf(status('ready', { state: 'following' }, 1n))).toEqual({ status: 'ready' })
  })

  test('the first sync: syncing with the blocks to go, as before', () => {
    expect(statusAnswerOf(status('syncing', { state: 'behind', since: at }, 40n))).toEqual({ status: 'syncing', blocks_to_sync: 40n })
    expect(statusAnswerOf(status('syncing', { state: 'following' }))).toEqual({ status: 'syncing', blocks_to_sync: 0n })
  })

  test('past the first sync and behind: syncing, since when, and serving (every route answers)', () => {
    expect(statusAnswerOf(status('ready', { state: 'behind', since: at }, 12n))).toEqual({
      status: 'syncing',
      blocks_to_sync: 12n,
      behind_since: '2026-05-06T07:08:09.010Z',
      serving: true,
    })
  })

  test('the chain out of reach: unavailable since when and why, during the first sync or after it', () => {
    const answer = { status: 'unavailable', blocks_to_sync: 3n, chain_unreachable_since: '2026-05-06T07:08:09.010Z', last_error: unreachable.error }
    expect(statusAnswerOf(status('ready', unreachable, 3n))).toEqual({ ...answer, serving: true })
    expect(statusAnswerOf(status('syncing', unreachable, 3n))).toEqual(answer)
  })

  test('stopped: unavailable, nothing more', () => {
    expect(statusAnswerOf(status('stopped', unreachable, 3n))).toEqual({ status: 'unavailable' })
  })
})
