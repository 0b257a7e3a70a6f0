// A token network as the pathfinding service learns it, built the way the service will: chain events applied to its
// state, and capacity and fee updates signed with the participants' real keys, each checked (src/pathfinding/
// updates.ts) before it is put in the view. No vitest imports: the bench reuses it.
import { getAddress, padHex, toHex, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { packMessage } from '../../src/protocol/messages/pack.ts'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../../src/protocol/messages/types.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import type { PfsChannel } from '../../src/pathfinding/channel.ts'
import { applyChainEvent, createPathfindingState, networkOf, putChannel, type PathfindingState, type TokenNetworkView } from '../../src/pathfinding/network.ts'
import { checkUpdate, type UpdateOutcome } from '../../src/pathfinding/updates.ts'
import { nativeCurve } from './curve.ts'

export type TestNode = { key: Hex; address: Address }

/** `count` nodes with keys of their own (the same for the same `seed`). */
export function testNodes(count: number, seed = 1): TestNode[] {
  return Array.from({ length: count }, (_, i) => {
    const key = padHex(toHex(BigInt(seed) * 1_000_000n + BigInt(i) + 1n), { size: 32 })
    return { key, address: privateKeyToAddress(key) }
  })
}

/** Python's naive UTC ISO timestamp of a moment (milliseconds since 1970), with microseconds. */
export function pythonTimestamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000`
}

export function signCapacityUpdate(key: Hex, update: Omit<PFSCapacityUpdate, 'type'>): Signed<PFSCapacityUpdate> {
  const message: PFSCapacityUpdate = { type: 'PFSCapacityUpdate', ...update }
  return { ...message, signature: signPackedSync(nativeCurve, key, packMessage(message)) }
}

export function signFeeUpdate(key: Hex, update: Omit<PFSFeeUpdate, 'type'>): Signed<PFSFeeUpdate> {
  const message: PFSFeeUpdate = { type: 'PFSFeeUpdate', ...update }
  return { ...message, signature: signPackedSync(nativeCurve, key, packMessage(message)) }
}

export const TEST_CHAIN_ID = 4321n
export const TEST_TOKEN_NETWORK: Address = getAddress('0x7a5e1b6db8c1d8fc1e2f5b9d3a0c4e6f8a1b2c3d')
/** The service's clock in these networks (fee updates are stamped just before it). */
export const TEST_NOW = Date.UTC(2026, 0, 1)

type Honest = { balances: [bigint, bigint]; nonces: [bigint, bigint]; revealTimeouts: [bigint, bigint] }

/**
 * One token network, grown channel by channel. `fund` is the usual step: both participants deposit and announce
 * what they have, honestly; `pay` moves tokens inside a channel and both announce again, as nodes do after a payment.
 */
export class TestNetwork {
  readonly state: PathfindingState = createPathfindingState(TEST_CHAIN_ID)
  readonly tokenNetwork = TEST_TOKEN_NETWORK
  private nextId = 1n
  private clock = TEST_NOW - 3_600_000
  private readonly honest = new Map<bigint, Honest>()
  private readonly keys = new Map<string, Hex>()

  constructor() {
    applyChainEvent(this.state, { type: 'tokenNetworkCreated', token: '0x0000000000000000000000000000000000000001', tokenNetwork: this.tokenNetwork })
  }

  get view(): TokenNetworkView {
    return networkOf(this.state, this.tokenNetwork)!
  }

  channel(id: bigint): PfsChannel {
    return this.view.channels.get(id.toString())!
  }

  open(a: TestNode, b: TestNode, { settleTimeout = 500n }: { settleTimeout?: bigint } = {}): bigint {
    const channelId = this.nextId++
    for (const n of [a, b]) this.keys.set(n.address.toLowerCase(), n.key)
    applyChainEvent(this.state, {
      type: 'channelOpened',
      tokenNetwork: this.tokenNetwork,
      channelId,
      participant1: a.address,
      participant2: b.address,
      settleTimeout,
      blockNumber: 1n,
      revealTimeout: 50n,
    })
    this.honest.set(channelId, { balances: [0n, 0n], nonces: [0n, 0n], revealTimeouts: [50n, 50n] })
    return channelId
  }

  deposit(channelId: bigint, who: TestNode, totalDeposit: bigint): void {
    applyChainEvent(this.state, { type: 'channelDeposit', tokenNetwork: this.tokenNetwork, channelId, participant: who.address, totalDeposit })
  }

  /**
   * Opens a channel in which `a` can send `balanceA` and `b` `balanceB` (their deposits), both announced by both.
   * Reveal timeouts are each side's own (50 by default, Raiden's).
   */
  fund(a: TestNode, b: TestNode, balanceA: bigint, balanceB: bigint, options: { settleTimeout?: bigint; revealTimeouts?: [bigint, bigint] } = {}): bigint {
    const channelId = this.open(a, b, options)
    this.deposit(channelId, a, balanceA)
    this.deposit(channelId, b, balanceB)
    const honest = this.honest.get(channelId)!
    honest.balances = [balanceA, balanceB]
    if (options.revealTimeouts) honest.revealTimeouts = options.revealTimeouts
    this.announceBoth(channelId)
    return channelId
  }

  /** `from` pays `amount` to its partner inside the channel (a new balance proof of its), and both announce again. */
  pay(channelId: bigint, from: TestNode, amount: bigint): void {
    const honest = this.honest.get(channelId)!
    const i = this.indexOf(channelId, from.address)
    honest.balances[i] -= amount
    honest.balances[1 - i]! += amount
    honest.nonces[i]! += 1n
    this.announceBoth(channelId)
  }

  private announceBoth(channelId: bigint): void {
    const honest = this.honest.get(channelId)!
    for (const i of [0, 1] as const) {
      const outcome = this.apply(
        signCapacityUpdate(this.keyOf(channelId, i), {
          canonical_identifier: this.at(channelId),
          updating_participant: this.channel(channelId).participants[i].address,
          other_participant: this.channel(channelId).participants[1 - i]!.address,
          updating_nonce: honest.nonces[i],
          other_nonce: honest.nonces[1 - i]!,
          updating_capacity: honest.balances[i],
          other_capacity: honest.balances[1 - i]!,
          reveal_timeout: honest.revealTimeouts[i],
        }),
      )
      if (outcome.outcome !== 'accepted') throw new Error(`an honest update was not accepted: ${JSON.stringify(outcome)}`)
    }
  }

  /** `who` announces its fee schedule for the channel (stamped a second after its last). */
  setFees(channelId: bigint, who: TestNode, schedule: FeeSchedule): UpdateOutcome {
    this.clock += 1000
    return this.apply(
      signFeeUpdate(who.key, {
        canonical_identifier: this.at(channelId),
        updating_participant: who.address,
        fee_schedule: schedule,
        timestamp: pythonTimestamp(this.clock),
      }),
    )
  }

  /** Checks an update as the service does and, accepted, puts the channel it gives in the view. */
  apply(update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): UpdateOutcome {
    const outcome = checkUpdate(this.state, update, { now: TEST_NOW, curve: nativeCurve })
    if (outcome.outcome === 'accepted') putChannel(this.view, outcome.channel)
    return outcome
  }

  at(channelId: bigint) {
    return { chain_identifier: TEST_CHAIN_ID, token_network_address: this.tokenNetwork, channel_identifier: channelId }
  }

  private indexOf(channelId: bigint, address: Address): 0 | 1 {
    return this.channel(channelId).participants[0].address === address ? 0 : 1
  }

  private keyOf(channelId: bigint, index: 0 | 1): Hex {
    return this.keys.get(this.channel(channelId).participants[index].address.toLowerCase())!
  }
}
