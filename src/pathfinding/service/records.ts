import type { Address } from 'viem'
import type { SyncMark } from '../../chain/serviceChainWatch.ts'

/**
 * What the pathfinding service keeps besides the channels (src/pathfinding/channel.ts) and the IOUs (iou.ts): how far
 * it followed the chain, and the routes it answered with, for their feedback (docs/decisions/0072).
 */

/** How far the service has followed the chain (its chain watch's mark). */
export type SyncRecord = SyncMark

/** One route of an answer, and what its sender said of it. */
export type FeedbackRoute = {
  path: Address[]
  estimatedFee: bigint
  /** Told by the sender (POST /feedback), once. */
  success?: boolean
  /** Unix milliseconds the feedback came. */
  feedbackAt?: number
}

/** The routes of one answer under its feedback token, as raiden-services records them (database.py `prepare_feedback`). */
export type FeedbackRecord = {
  token: string
  tokenNetwork: Address
  /** Unix milliseconds. */
  createdAt: number
  source: Address
  target: Address
  routes: FeedbackRoute[]
}
