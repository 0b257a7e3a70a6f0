import { bytesToHex, sha256, type Address, type Hex } from 'viem'
import { readSecretRevealBlock } from '../chain/reads.ts'
import { distributable, UINT256_MAX } from '../protocol/channel/amounts.ts'
import { findRoutes } from '../protocol/routing/findRoutes.ts'
import { channelWith, sameAddress, tokenNetworkOf } from '../protocol/state/access.ts'
import type { NodeState } from '../protocol/state/types.ts'
import type { PaymentQuery, PaymentRecord } from '../storage/storage.ts'
import { ConflictError, InsufficientBalanceError, InvalidPaymentError, NoRouteError } from './errors.ts'
import type { SluiceNode } from './sluiceNode.ts'

export const UINT64_MAX = 2n ** 64n - 1n

export type SendPaymentParameters = {
  token: Address
  target: Address
  amount: bigint
  /** Payment identifier in 1..2^64-1; a random one when absent. */
  identifier?: bigint
  /** Blocks until the lock expires; twice the channel's reveal timeout when absent. */
  lockTimeout?: bigint
  secret?: Hex
  /** SHA-256 of the secret. Alone (no secret), the node asks its secret resolver for the secret. */
  secrethash?: Hex
}

/** What a succeeded payment returns (rest-api.md, Payment result object). */
export type SentPayment = {
  initiator: Address
  target: Address
  token: Address
  amount: bigint
  identifier: bigint
  secret: Hex
  secrethash: Hex
}

/** The token network of `token`, if one is registered (and synced). */
/**
 * The checks of the request alone, in the Raiden node's order (`transfer_async`, `mediated_transfer_async`):
 * each failure is a 409. Returns the token network and the secret hash the payment will lock with, if the
 * caller gave the secret or its hash (checked by `checkSecretHash` once the request is known not to join another).
 */
export function checkPayment(state: NodeState, p: SendPaymentParameters): { tokenNetwork: Address; secrethash?: Hex } {
  if (sameAddress(p.target, state.address)) throw new InvalidPaymentError('the target must be another address than ours')
  if (/^0x0{40}$/.test(p.target)) throw new InvalidPaymentError('the zero address cannot be a target')
  if (p.amount <= 0n) throw new InvalidPaymentError(`amount must be positive, not ${p.amount}`)
  if (p.amount > UINT256_MAX) throw new InvalidPaymentError('amount must be at most 2^256-1')
  const tokenNetwork = tokenNetworkOf(state, p.token)
  if (!tokenNetwork) throw new InvalidPaymentError(`token ${p.token} is not known: no token network is registered for it`)
  if (p.identifier !== undefined && (p.identifier <= 0n || p.identifier > UINT64_MAX)) throw new InvalidPaymentError(`identifier must lie in 1..2^64-1, not ${p.identifier}`)
  if (p.lockTimeout !== undefined && p.lockTimeout <= 0n) throw new InvalidPaymentError(`lock_timeout must be positive, not ${p.lockTimeout}`)
  const secrethash = p.secrethash?.toLowerCase() as Hex | undefined
  if (p.secret && secrethash && sha256(p.secret) !== secrethash) throw new InvalidPaymentError('secret_hash is not the SHA-256 of the secret')
  const lockedWith = secrethash ?? (p.secret ? sha256(p.secret) : undefined)
  return lockedWith ? { tokenNetwork, secrethash: lockedWith } : { tokenNetwork }
}

/** A lock whose secret is public, or whose hash another transfer uses, could be claimed at once: 409. */
export function checkSecretHash(state: NodeState, secrethash: Hex): void {
  if (state.initiators[secrethash] || state.mediators[secrethash] || state.targets[secrethash]) throw new ConflictError(`the secret hash ${secrethash} is already used by another transfer`)
  if (state.registeredSecrets[secrethash] !== undefined) throw new ConflictError(`the secret of ${secrethash} is already registered on-chain`)
}

/**
 * Whether the payment can start over some route, else why not: no open channel at all or no path is 409
 * (NoRouteError); our channels lacking the balance is 402 (InsufficientBalanceError); a lock_timeout that fits
 * no usable first channel (reveal_timeout < lock_timeout <= settle_timeout) is 409.
 */
export function checkRoute(state: NodeState, { tokenNetwork, target, amount, lockTimeout }: { tokenNetwork: Address; target: Address; amount: bigint; lockTimeout?: bigint }): void {
  const routes = findRoutes(state, { tokenNetwork, target, amount })
  if (routes.length === 0) {
    const open = Object.values(state.channels).filter((c) => sameAddress(c.tokenNetwork, tokenNetwork) && c.state === 'opened')
    if (open.length === 0) throw new NoRouteError(`no route to ${target}: the node has no open channel in this token network`)
    const direct = open.find((c) => sameAddress(c.partner, target))
    const most = open.reduce((max, c) => {
      const free = distributable(c.our, c.partnerEnd)
      return free > max ? free : max
    }, 0n)
    if (direct && distributable(direct.our, direct.partnerEnd) < amount)
      throw new InsufficientBalanceError(`insufficient balance: the channel with ${target} can send ${distributable(direct.our, direct.partnerEnd)}, ${amount} needed`)
    if (most < amount) throw new InsufficientBalanceError(`insufficient balance: our open channels can send at most ${most} in one payment, ${amount} needed`)
    throw new NoRouteError(`no route to ${target} can carry ${amount}`)
  }
  if (lockTimeout === undefined) return
  const firstHops = routes.map((r) => channelWith(state, tokenNetwork, r[0]!)!)
  if (firstHops.some((c) => lockTimeout > c.revealTimeout && lockTimeout <= c.settleTimeout)) return
  const c = firstHops[0]!
  throw new InvalidPaymentError(`lock_timeout ${lockTimeout} must be greater than the reveal timeout (${c.revealTimeout}) and at most the settle timeout (${c.settleTimeout}) of the channel with ${c.partner}`)
}

type InFlight = { tokenNetwork: Address; amount: bigint; result: Promise<SentPayment> }

/** Per node: payments started through `sendPayment` and not finished, by target and identifier. */
const inFlightByNode = new WeakMap<SluiceNode, Map<string, InFlight>>()

const randomIdentifier = (): bigint => BigInt(bytesToHex(crypto.getRandomValues(new Uint8Array(8)))) || 1n

/**
 * Sends a payment and resolves once it succeeded (our Unlock is on its way). Every check runs before anything
 * changes. A second request for the same target and identifier while the first is in flight joins it (same
 * amount and token: both get its result) or is a ConflictError (409), as the Raiden node does.
 */
export async function sendPayment(node: SluiceNode, p: SendPaymentParameters): Promise<SentPayment> {
  const state = node.state
  const { tokenNetwork, secrethash } = checkPayment(state, p)
  const identifier = p.identifier ?? randomIdentifier()
  const key = `${p.target.toLowerCase()}:${identifier}`
  let inFlight = inFlightByNode.get(node)
  if (!inFlight) inFlightByNode.set(node, (inFlight = new Map()))
  const running = inFlight.get(key)
  if (running) {
    if (running.amount !== p.amount || !sameAddress(running.tokenNetwork, tokenNetwork))
      throw new ConflictError(`another payment with identifier ${identifier} to ${p.target} is in flight (with ${running.amount === p.amount ? 'another token' : `amount ${running.amount}`})`)
    return running.result
  }
  // Started before a restart: its waiter is gone, so it cannot be joined; its outcome lands in the history.
  const earlier = Object.values(state.initiators).find((i) => sameAddress(i.target, p.target) && i.paymentId === identifier && i.status !== 'failed')
  if (earlier) throw new ConflictError(`a payment with identifier ${identifier} to ${p.target} is already in flight`)
  if (secrethash) checkSecretHash(state, secrethash)
  checkRoute(state, { tokenNetwork, target: p.target, amount: p.amount, ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}) })

  const run = async (): Promise<SentPayment> => {
    if (secrethash) {
      // The state knows the confirmed registrations; the chain also knows the latest ones.
      const registry = node.options.deployment.contracts.SecretRegistry.address
      if ((await readSecretRevealBlock(node.chain, { secretRegistry: registry, secrethash })) > 0n) throw new ConflictError(`the secret of ${secrethash} is already registered on-chain`)
    }
    const r = await node.pay({
      tokenNetwork,
      target: p.target,
      amount: p.amount,
      paymentId: identifier,
      ...(p.secret ? { secret: p.secret.toLowerCase() as Hex } : {}),
      ...(secrethash ? { secrethash } : {}),
      ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}),
    })
    return { initiator: node.address, target: r.target, token: r.token, amount: r.amount, identifier: r.paymentId, secret: r.secret, secrethash: r.secrethash }
  }
  const entry: InFlight = { tokenNetwork, amount: p.amount, result: run() }
  inFlight.set(key, entry)
  try {
    return await entry.result
  } finally {
    if (inFlight.get(key) === entry) inFlight.delete(key)
  }
}

/**
 * The payment history, oldest first, paged in the store. A token with no token network is a ConflictError
 * (409, as rest-api.md says for an invalid token_address argument).
 */
export async function readPaymentHistory(node: SluiceNode, query: PaymentQuery): Promise<PaymentRecord[]> {
  if (query.token !== undefined && !tokenNetworkOf(node.state, query.token)) throw new ConflictError(`token ${query.token} does not match a token network`)
  return node.storage.payments({ ...query, ...pageOf(query) })
}

/** A page the store can key: non-negative integers, anything beyond the safe integers meaning "all". */
export function pageOf({ limit, offset }: { limit?: number; offset?: number }): { limit?: number; offset?: number } {
  for (const [name, n] of [['limit', limit], ['offset', offset]] as const) {
    if (n !== undefined && !(Number.isInteger(n) && n >= 0)) throw new ConflictError(`${name} must be a non-negative integer, not ${n}`)
  }
  const clamp = (n: number) => Math.min(n, Number.MAX_SAFE_INTEGER)
  return { ...(limit !== undefined ? { limit: clamp(limit) } : {}), ...(offset !== undefined ? { offset: clamp(offset) } : {}) }
}
