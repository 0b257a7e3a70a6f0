import { balanceHash } from '../../protocol/balanceProof.ts'
import { channelKey } from '../../protocol/channel/key.ts'
import { isBalanceProof, nonceSigner, takesNonce } from '../../protocol/channel/usedNonce.ts'
import { getChannel, sameAddress } from '../../protocol/state/access.ts'
import type { StateChange } from '../../protocol/state/changes.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import type { Storage } from '../../storage/storage.ts'

/**
 * What the store tells the core when a nonce comes back (docs/decisions/0029): the core keeps only the latest of
 * each end, the store keeps every message the partner signed and every proof we signed. The shell looks them up
 * before it dispatches the change, so the transition stays pure and a replay sees what the first run saw.
 */
export type NonceLookupStore = Pick<Storage, 'receivedMessage' | 'sentProof'>

type Receive = Extract<StateChange, { type: 'receive' }>
type OnChainProof = Extract<StateChange, { type: 'channelClosed' | 'nonClosingUpdated' }>

/** Whether a received message needs a look in the store before it is dispatched. */
export function needsLookup(state: NodeState, change: Receive): boolean {
  return lookupOf(state, change) !== undefined
}

function lookupOf(state: NodeState, { message, sender }: Receive): 'applied' | 'ourProof' | undefined {
  if (!takesNonce(message)) return undefined
  const channel = getChannel(state, message.token_network_address, message.channel_identifier)
  if (!channel || message.nonce === 0n) return undefined
  const signer = nonceSigner(state, channel, sender)
  // A nonce the partner used: what we applied under it, to tell a resend from an equivocation.
  if (signer === 'partner' && message.nonce <= channel.partnerEnd.nonce) return 'applied'
  // A proof of ours within the nonces we know: whether we signed its balance hash (beyond them it is stale anyway).
  if (signer === 'us' && isBalanceProof(message) && message.nonce <= channel.our.nonce) return 'ourProof'
  return undefined
}

/** The receive change with what the store knows of its nonce, when the core will need it. */
export async function withStoredNonce(state: NodeState, change: Receive, store: NonceLookupStore): Promise<Receive> {
  const lookup = lookupOf(state, change)
  if (!lookup) return change
  const m = change.message as Extract<Receive['message'], { nonce: bigint; token_network_address: `0x${string}`; channel_identifier: bigint }>
  const key = channelKey(m.token_network_address, m.channel_identifier)
  if (lookup === 'applied') {
    const record = await store.receivedMessage(key, m.nonce)
    return { ...change, applied: record ? { type: record.type, signed: record.signed, signature: record.signature } : null }
  }
  if (!isBalanceProof(m)) return change
  const hash = balanceHash({ transferredAmount: m.transferred_amount, lockedAmount: m.locked_amount, locksroot: m.locksroot })
  return { ...change, ourProofKnown: (await store.sentProof(key, hash)) !== undefined }
}

/**
 * A close or update that put a proof of ours on-chain (the partner closed, or updated after our close), with whether
 * the store holds a proof we signed with its balance hash. Other chain changes are given back as they are.
 */
export async function withOurProofKnown<C extends StateChange>(state: NodeState, change: C, store: NonceLookupStore): Promise<C> {
  if (change.type !== 'channelClosed' && change.type !== 'nonClosingUpdated') return change
  const c = change as OnChainProof
  const channel = getChannel(state, c.tokenNetwork, c.channelId)
  if (!channel || c.nonce === 0n || c.nonce > channel.our.nonce) return change
  const ours = c.type === 'channelClosed' ? sameAddress(c.closer, channel.partner) : sameAddress(c.closer, state.address)
  if (!ours) return change
  const known = (await store.sentProof(channelKey(c.tokenNetwork, c.channelId), c.balanceHash)) !== undefined
  return { ...change, ourProofKnown: known }
}
