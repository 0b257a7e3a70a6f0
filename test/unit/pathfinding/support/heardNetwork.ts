import type { Address, Hex } from 'viem'
import { packMessage } from '../../../../src/protocol/messages/pack.ts'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../../../../src/protocol/messages/types.ts'
import { signPackedSync } from '../../../../src/protocol/signature.ts'
import { Network } from '../../protocol/support/network.ts'
import { nativeCurve } from '../../../support/curve.ts'

/**
 * Six nodes' states made by the core (test/unit/protocol/support/network.ts), two ways from A to F: A-B-F and
 * A-C-D-E-F, each channel funded on both sides. What A hears of them is signed by their participants' keys.
 */
export async function twoWays(deposit = 1000n) {
  const net = new Network(['A', 'B', 'C', 'D', 'E', 'F'])
  const ids: Record<string, bigint> = {}
  for (const [a, b] of [
    ['A', 'B'],
    ['B', 'F'],
    ['A', 'C'],
    ['C', 'D'],
    ['D', 'E'],
    ['E', 'F'],
  ] as const)
    ids[a + b] = ids[b + a] = await net.open(a, b, deposit, deposit)
  return { net, ids, at: (name: string): Address => net.node(name).address, key: (name: string): Hex => net.node(name).key }
}

export type TwoWays = Awaited<ReturnType<typeof twoWays>>

/** `who`'s capacity update of its channel with `partner`, signed by `signer` (who by default). */
export function capacityUpdate(
  w: TwoWays,
  who: string,
  partner: string,
  fields: Partial<Omit<PFSCapacityUpdate, 'type' | 'canonical_identifier'>> & { signer?: string; chainId?: bigint } = {},
): Signed<PFSCapacityUpdate> {
  const { signer, chainId, ...rest } = fields
  const update: PFSCapacityUpdate = {
    type: 'PFSCapacityUpdate',
    canonical_identifier: {
      chain_identifier: chainId ?? w.net.node('A').state.chainId,
      token_network_address: w.net.chain.tokenNetwork,
      channel_identifier: w.ids[who + partner]!,
    },
    updating_participant: w.at(who),
    other_participant: w.at(partner),
    updating_nonce: 1n,
    other_nonce: 0n,
    updating_capacity: 1000n,
    other_capacity: 1000n,
    reveal_timeout: 10n,
    ...rest,
  }
  return { ...update, signature: signPackedSync(nativeCurve, w.key(signer ?? who), packMessage(update)) }
}

/** `who`'s fee update of its channel with `partner`: a flat fee, stamped at `second` past a fixed minute. */
export function feeUpdate(w: TwoWays, who: string, partner: string, flat: bigint, second = 1): Signed<PFSFeeUpdate> {
  const schedule: FeeSchedule = { cap_fees: true, flat, proportional: 0n, imbalance_penalty: null }
  const update: PFSFeeUpdate = {
    type: 'PFSFeeUpdate',
    canonical_identifier: {
      chain_identifier: w.net.node('A').state.chainId,
      token_network_address: w.net.chain.tokenNetwork,
      channel_identifier: w.ids[who + partner]!,
    },
    updating_participant: w.at(who),
    fee_schedule: schedule,
    timestamp: `2026-11-29T12:00:${String(second).padStart(2, '0')}.000000`,
  }
  return { ...update, signature: signPackedSync(nativeCurve, w.key(who), packMessage(update)) }
}

/** A moment after every fee update's stamp. */
export const AFTER = Date.UTC(2026, 10, 29, 13)
