import { decodeEventLog, encodeFunctionData, encodePacked, keccak256, type Address, type Hex, type Log } from 'viem'
import { OneToN } from '../contracts/index.ts'
import { read, type ChainReader } from './reads.ts'
import type { ChainCall } from './transactionQueue.ts'

/**
 * OneToN (docs/protocol.md §2.7): how a pathfinding service is paid the IOUs its clients signed. The call is built
 * here and sent by the caller, after simulating it (src/chain/simulate.ts).
 */

/** One IOU as OneToN.claim takes it. */
export type IouClaim = { sender: Address; receiver: Address; amount: bigint; expirationBlock: bigint; signature: Hex }

/** The session OneToN records as paid: keccak256(receiver || sender || uint256 expiration block). */
export function iouSessionId({ sender, receiver, expirationBlock }: Pick<IouClaim, 'sender' | 'receiver' | 'expirationBlock'>): Hex {
  return keccak256(encodePacked(['address', 'address', 'uint256'], [receiver, sender, expirationBlock]))
}

/** Whether OneToN has paid this session already (by anyone's claim): its expiration block is recorded then, else 0. */
export async function readSessionSettled(
  chain: ChainReader,
  { oneToN, ...session }: { oneToN: Address } & Pick<IouClaim, 'sender' | 'receiver' | 'expirationBlock'>,
) {
  return (await read(chain, oneToN, OneToN.abi, 'settled_sessions', [iouSessionId(session)])) !== 0n
}

/** OneToN.claim: pays the IOU from the sender's deposit, as far as it goes, and closes the session. */
export function claimIouCall(oneToN: Address, claim: IouClaim): ChainCall {
  return {
    to: oneToN,
    data: encodeFunctionData({
      abi: OneToN.abi,
      functionName: 'claim',
      args: [claim.sender, claim.receiver, claim.amount, claim.expirationBlock, claim.signature],
    }),
    description: `OneToN.claim(${claim.sender}, expiration ${claim.expirationBlock}, ${claim.amount})`,
  }
}

/** What a claim's receipt says OneToN paid (its Claimed event), or undefined when it paid nothing (an empty deposit). */
export function claimedAmount(oneToN: Address, logs: readonly Log[]): bigint | undefined {
  for (const log of logs) {
    if (log.address.toLowerCase() !== oneToN.toLowerCase()) continue
    try {
      const decoded = decodeEventLog({ abi: OneToN.abi, data: log.data, topics: log.topics, strict: true })
      if (decoded.eventName === 'Claimed') return decoded.args.transferred
    } catch {
      // Not OneToN's Claimed.
    }
  }
  return undefined
}
