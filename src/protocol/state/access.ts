import type { Address, Hex } from 'viem'
import { channelKey } from '../channel/key.ts'
import { jsSecp256k1, type Secp256k1Engine } from '../secp256k1.ts'
import type { Channel, NodeState } from './types.ts'

/** Tunables of the protocol that are not part of the state. */
export type TransitionContext = {
  /** Blocks after which a chain event is final; lock expiry waits for them (docs/protocol.md §3.8). */
  confirmationBlocks: bigint
  /** The most locks one channel end may have pending. */
  maxPendingLocks: number
  /**
   * The curve engine of the node (the shell's choice): a ChannelSync's balance proofs are checked with it. The one
   * field that is code, not data; ctx is never stored nor cloned.
   */
  curve: Secp256k1Engine
}

export const defaultContext: TransitionContext = { confirmationBlocks: 5n, maxPendingLocks: 160, curve: jsSecp256k1 }

/**
 * The block a lock's time counts from (docs/decisions/0056): the synced block, or the chain's head as the shell saw it
 * when that is newer. Only for the expiry of a new lock and the time an incoming one has left: what depends on the
 * chain's events having been seen (a LockExpired accepted, a secret registered in time) keeps to the synced block.
 */
export const blockNow = (state: Pick<NodeState, 'blockNumber'>, headBlock?: bigint): bigint =>
  headBlock !== undefined && headBlock > state.blockNumber ? headBlock : state.blockNumber

export function initialState(parameters: { address: Address; chainId: bigint; blockNumber: bigint; firstMessageId?: bigint }): NodeState {
  return {
    address: parameters.address,
    chainId: parameters.chainId,
    blockNumber: parameters.blockNumber,
    nextMessageId: parameters.firstMessageId ?? 1n,
    tokenNetworks: {},
    channels: {},
    initiators: {},
    mediators: {},
    targets: {},
    registeredSecrets: {},
    publicKeys: {},
  }
}

/** How many public keys the state keeps: enough for every peer a light node meets, bounded against floods. */
export const MAX_PUBLIC_KEYS = 1024

/** The public key of `address` if a signed message of it was received, else undefined. */
export function publicKeyOf(state: NodeState, address: Address): Hex | undefined {
  return state.publicKeys?.[address.toLowerCase()]
}

/** Remembers `address`'s public key (the oldest is forgotten beyond MAX_PUBLIC_KEYS). */
export function rememberPublicKey(state: NodeState, address: Address, publicKey: Hex): NodeState {
  const key = address.toLowerCase()
  const known = state.publicKeys ?? {}
  if (known[key] === publicKey) return state
  const entries = Object.entries(known).filter(([a]) => a !== key)
  if (entries.length >= MAX_PUBLIC_KEYS) entries.splice(0, entries.length - MAX_PUBLIC_KEYS + 1)
  return { ...state, publicKeys: { ...Object.fromEntries(entries), [key]: publicKey } }
}

export const sameAddress = (a: Address | undefined, b: Address | undefined) => !!a && !!b && a.toLowerCase() === b.toLowerCase()

/** The token network of `token` the node knows from the registry's events, if any. */
export function tokenNetworkOf(state: NodeState, token: Address): Address | undefined {
  for (const [tokenNetwork, network] of Object.entries(state.tokenNetworks)) if (sameAddress(network.token, token)) return tokenNetwork as Address
  return undefined
}

export function getChannel(state: NodeState, tokenNetwork: Address, channelId: bigint): Channel | undefined {
  return state.channels[channelKey(tokenNetwork, channelId)]
}

/** The open (or latest) channel with `partner` in a token network. */
export function channelWith(state: NodeState, tokenNetwork: Address, partner: Address): Channel | undefined {
  let found: Channel | undefined
  for (const c of Object.values(state.channels)) {
    if (!sameAddress(c.tokenNetwork, tokenNetwork) || !sameAddress(c.partner, partner)) continue
    if (c.state === 'opened') return c
    if (!found || c.id > found.id) found = c
  }
  return found
}

export function putChannel(state: NodeState, channel: Channel): NodeState {
  return { ...state, channels: { ...state.channels, [channelKey(channel.tokenNetwork, channel.id)]: channel } }
}

/** A fresh uint64 message identifier, and the state that will not hand it out again. */
export function takeMessageId(state: NodeState): [bigint, NodeState] {
  const id = state.nextMessageId
  const next = id + 1n >= 2n ** 64n ? 1n : id + 1n
  return [id, { ...state, nextMessageId: next }]
}

/** Removes a key from a record without mutating it. */
export function without<V>(record: Record<string, V>, key: string): Record<string, V> {
  const { [key]: _, ...rest } = record
  return rest
}
