import { getAddress, type Address } from 'viem'
import { transferred } from '../../protocol/channel/amounts.ts'
import { channelKey } from '../../protocol/channel/key.ts'
import { channelWith, tokenNetworkOf } from '../../protocol/state/access.ts'
import type { Channel, NodeState } from '../../protocol/state/types.ts'
import { NotFoundError } from '../errors.ts'

export type PendingTransferRole = 'initiator' | 'mediator' | 'target'

/** A transfer whose lock is still pending, as this node sees it (docs/rest-api.md, Pending transfer entry). */
export type PendingTransfer = {
  role: PendingTransferRole
  token: Address
  tokenNetwork: Address
  /** The channel the lock is in: our outgoing one as initiator, the incoming one as mediator or target. */
  channelId: bigint
  initiator: Address
  target: Address
  /** The amount of this transfer's lock in that channel. */
  lockedAmount: bigint
  /** What the lock's sender has transferred in that channel so far (its latest balance proof). */
  transferredAmount: bigint
  paymentId: bigint
}

export type PendingTransfersQuery = { token?: Address; partner?: Address }

/** The id in a channel key (`<token network>:<id>`): the channel itself may be gone from the state after settling. */
const idOfKey = (key: string) => BigInt(key.slice(key.lastIndexOf(':') + 1))

/**
 * The transfers in flight in which the node initiates, mediates or receives, one per transfer (a mediator
 * reports its incoming side, as the Raiden node does), optionally only those of a token or of our channel with
 * a partner. A token with no token network, or no channel with the partner, is a NotFoundError (404).
 */
export function pendingTransfers(state: NodeState, query: PendingTransfersQuery = {}): PendingTransfer[] {
  let only: { tokenNetwork: Address; channelKey?: string } | undefined
  if (query.token !== undefined) {
    const tokenNetwork = tokenNetworkOf(state, query.token)
    if (!tokenNetwork) throw new NotFoundError(`token ${query.token} not found: no token network is registered for it`)
    only = { tokenNetwork }
    if (query.partner !== undefined) {
      const channel = channelWith(state, tokenNetwork, query.partner)
      if (!channel) throw new NotFoundError(`channel with partner ${query.partner} for token ${query.token} not found`)
      only.channelKey = channelKey(channel.tokenNetwork, channel.id)
    }
  }
  const out: PendingTransfer[] = []
  const add = (
    role: PendingTransferRole,
    key: string,
    sentBy: (c: Channel) => bigint,
    t: Omit<PendingTransfer, 'role' | 'token' | 'tokenNetwork' | 'channelId' | 'transferredAmount'> & { tokenNetwork: Address },
  ) => {
    if (only && (t.tokenNetwork.toLowerCase() !== only.tokenNetwork.toLowerCase() || (only.channelKey !== undefined && key !== only.channelKey))) return
    const channel = state.channels[key]
    const token = state.tokenNetworks[t.tokenNetwork]?.token ?? channel?.token
    if (!token) return
    out.push({
      role,
      token: getAddress(token),
      tokenNetwork: getAddress(t.tokenNetwork),
      channelId: channel?.id ?? idOfKey(key),
      initiator: getAddress(t.initiator),
      target: getAddress(t.target),
      lockedAmount: t.lockedAmount,
      transferredAmount: channel ? sentBy(channel) : 0n,
      paymentId: t.paymentId,
    })
  }
  for (const p of Object.values(state.initiators)) {
    add('initiator', p.channelKey, (c) => transferred(c.our), {
      tokenNetwork: p.tokenNetwork,
      initiator: state.address,
      target: p.target,
      lockedAmount: p.lock.amount,
      paymentId: p.paymentId,
    })
  }
  for (const m of Object.values(state.mediators)) {
    add('mediator', m.payerChannelKey, (c) => transferred(c.partnerEnd), {
      tokenNetwork: m.tokenNetwork,
      initiator: m.initiator,
      target: m.target,
      lockedAmount: m.payerLock.amount,
      paymentId: m.paymentId,
    })
  }
  for (const t of Object.values(state.targets)) {
    add('target', t.channelKey, (c) => transferred(c.partnerEnd), {
      tokenNetwork: t.tokenNetwork,
      initiator: t.initiator,
      target: state.address,
      lockedAmount: t.lock.amount,
      paymentId: t.paymentId,
    })
  }
  return out
}
