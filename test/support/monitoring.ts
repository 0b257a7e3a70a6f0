// RequestMonitoring built and signed with real keys, for a real channel: the partner signs a balance proof, the
// requester counter-signs it and signs the reward proof (src/protocol/monitoringRequest.ts). No vitest imports: the
// bench reuses it under tsx.
import { keccak256, toHex, type Address, type Hex } from 'viem'
import { balanceHash, packBalanceProof } from '../../src/protocol/balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import type { RequestMonitoring, Signed, SignedBalanceProof } from '../../src/protocol/messages/types.ts'
import { encodeMessage } from '../../src/protocol/messages/wire.ts'
import { signRequestMonitoring } from '../../src/protocol/monitoringRequest.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

export type ProofOf = { tokenNetwork: Address; chainId: bigint; channelId: bigint }

/** A balance proof `signerKey` signs: `transferred` tokens sent (no locks), with a made-up message hash per nonce. */
export function partnerProof(signerKey: Hex, at: ProofOf, { nonce, transferred }: { nonce: bigint; transferred: bigint }): SignedBalanceProof {
  const balance_hash = balanceHash({ transferredAmount: transferred, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS })
  const additional_hash = keccak256(toHex(`message ${nonce}`))
  const signature = signPackedSync(
    jsSecp256k1,
    signerKey,
    packBalanceProof({
      tokenNetworkAddress: at.tokenNetwork,
      chainId: at.chainId,
      channelIdentifier: at.channelId,
      balanceHash: balance_hash,
      nonce,
      additionalHash: additional_hash,
    }),
  )
  return { chain_id: at.chainId, token_network_address: at.tokenNetwork, channel_identifier: at.channelId, nonce, balance_hash, additional_hash, signature }
}

/** The requester's RequestMonitoring for `proof`, paying `reward` to whichever service of `monitoringService` submits it. */
export function monitoringRequest(requesterKey: Hex, proof: SignedBalanceProof, monitoringService: Address, reward: bigint): Signed<RequestMonitoring> {
  return signRequestMonitoring(jsSecp256k1, requesterKey, { balanceProof: proof, monitoringServiceContract: monitoringService, rewardAmount: reward })
}

/** The wire line of a request. */
export const line = (request: Signed<RequestMonitoring>) => encodeMessage(request)

/**
 * Mines a block at a time until `done` (checked before each block, 200 ms apart so the service sees each one), and
 * fails past block `last`. Blocks before `from`, where the contract lets nobody act, are mined in one step.
 */
export async function mineUntil(
  chain: { getBlockNumber(): Promise<bigint>; mine(args: { blocks: number }): Promise<unknown> },
  done: () => Promise<boolean>,
  last: bigint,
  from = 0n,
): Promise<void> {
  const head = await chain.getBlockNumber()
  if (from - 1n > head) await chain.mine({ blocks: Number(from - 1n - head) })
  for (;;) {
    if (await done()) return
    const block = await chain.getBlockNumber()
    if (block >= last) throw new Error(`block ${block}: not done by block ${last}`)
    await chain.mine({ blocks: 1 })
    await new Promise((r) => setTimeout(r, 200))
  }
}
