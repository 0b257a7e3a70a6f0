import fc from 'fast-check'
import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { openPartners } from '../../../../src/node/services/partnerLinks.ts'
import type { Channel, ChannelState, NodeState } from '../../../../src/protocol/state/types.ts'

/** The partners whose way a node opens at start (services/partnerLinks.ts): those of open channels, latest first. */

const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address
const channel = (id: number, partner: number, state: ChannelState, openedBlock: number) =>
  ({ id: BigInt(id), partner: address(partner), state, openedBlock: BigInt(openedBlock) }) as Channel
const stateOf = (channels: Channel[]) => ({ channels: Object.fromEntries(channels.map((c) => [String(c.id), c])) }) as unknown as NodeState

describe('openPartners', () => {
  test('the partners of open channels only, the latest channel first, each once, at most the limit', () => {
    const state = stateOf([
      channel(1, 1, 'opened', 10),
      channel(2, 2, 'closed', 30),
      channel(3, 3, 'opened', 20),
      channel(4, 1, 'opened', 40),
      channel(5, 4, 'settled', 50),
    ])
    expect(openPartners(state, 10)).toEqual([address(1), address(3)])
    expect(openPartners(state, 1)).toEqual([address(1)])
    expect(openPartners(state, 0)).toEqual([])
  })

  test('whatever the channels: distinct partners of open ones, no more than the limit', () => {
    const states = fc.constantFrom<ChannelState>('opened', 'closing', 'closed', 'settling', 'settled')
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(20), states, fc.nat(1000)), { maxLength: 60 }), fc.nat(30), (specs, limit) => {
        const channels = specs.map(([partner, state, block], i) => channel(i, partner, state, block))
        const got = openPartners(stateOf(channels), limit)
        const open = new Set(channels.filter((c) => c.state === 'opened').map((c) => c.partner))
        expect(new Set(got).size).toBe(got.length)
        expect(got.length).toBe(Math.min(limit, open.size))
        for (const p of got) expect(open.has(p)).toBe(true)
      }),
    )
  })
})
