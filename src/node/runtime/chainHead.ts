import type { HeadObservation } from '../../chain/blockWatcher.ts'

/**
 * The chain's confirmed head now, as well as the node can know it: latest − confirmations as the endpoint last told
 * it, plus the blocks the chain has made since at its measured block time. Right after a look at the chain that adds
 * nothing; while the endpoint is out of reach it keeps the head moving, so that the node's idea of "now" does not
 * stop with its endpoint (docs/decisions/0056). Without a block time measured yet, the head as last seen.
 */
export function estimateHead(observation: HeadObservation, now: number): bigint {
  const { confirmedBlock, at, blockTimeMs } = observation
  if (at === undefined || blockTimeMs === undefined || now <= at) return confirmedBlock
  return confirmedBlock + BigInt(Math.floor((now - at) / blockTimeMs))
}
