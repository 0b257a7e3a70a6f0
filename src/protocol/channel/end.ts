import type { Address } from 'viem'
import type { ChannelEnd } from '../state/types.ts'

export function emptyChannelEnd(address: Address): ChannelEnd {
  return { address, deposit: 0n, withdrawn: 0n, pendingWithdraws: [], nonce: 0n, balanceProof: null, locks: [] }
}
