import { sha256, type Address, type Hex } from 'viem'
import { channelKey } from '../channel/key.ts'
import { feeMargin } from '../fees/margin.ts'
import type { Lock } from '../locks.ts'
import type { AddressMetadata, Metadata, RefundTransfer, RevealSecret, SecretRequest, Signed } from '../messages/types.ts'
import { MAX_METADATA_BYTES } from '../messages/wire.ts'
import type { StateChange } from '../state/changes.ts'
import { blockNow, channelWith, sameAddress, takeMessageId, without, type TransitionContext } from '../state/access.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, InitiatorPayment, NodeState } from '../state/types.ts'
import { whyRouteCannotHoldLock } from '../routing/routeHoldsLock.ts'
import { sendLockExpired, sendLockedTransfer, sendUnlock, sendUnordered } from './send.ts'
import { whyNotUsable } from './usable.ts'
import { waitsForSync } from '../channel/sync.ts'

type InitPayment = Extract<StateChange, { type: 'initPayment' }>

/** The lock timeout a payment uses in `channel`: the caller's, or twice the channel's reveal timeout. */
const lockTimeoutFor = (channel: Channel, lockTimeout?: bigint) => lockTimeout ?? 2n * channel.revealTimeout

function failed(payment: Pick<InitiatorPayment, 'token' | 'tokenNetwork' | 'target' | 'amount' | 'paymentId' | 'secrethash'>, reason: string): Effect {
  return {
    type: 'event',
    event: {
      type: 'paymentSentFailed',
      token: payment.token,
      tokenNetwork: payment.tokenNetwork,
      target: payment.target,
      amount: payment.amount,
      paymentId: payment.paymentId,
      secrethash: payment.secrethash,
      reason,
    },
  }
}

/** The route in flight was given up, and why (Raiden's EventRouteFailed): the pathfinding service is told. */
function routeFailed(payment: InitiatorPayment, reason: string): Effect {
  const { tokenNetwork, target, paymentId, secrethash, route } = payment
  return { type: 'event', event: { type: 'routeFailed', tokenNetwork, target, paymentId, secrethash, route, reason } }
}

/** The reason a payment failed after trying routes: each route and why it could not carry the payment. */
const noRoute = (reasons: string[]) => (reasons.length ? `no route could carry the payment: ${reasons.join('; ')}` : 'no route to the target')

/**
 * Why a route's fee is more than the payment may cost, or undefined: its lock carries the amount, the estimated fee
 * and Raiden's margin on it (feeMargin), which must stay within the amount and `maxFee` (docs/decisions/0069).
 */
function whyTooExpensive(amount: bigint, fee: bigint, maxFee: bigint | undefined): string | undefined {
  const margin = feeMargin(amount, fee)
  if (maxFee === undefined || fee + margin <= maxFee) return undefined
  return `its estimated fee ${fee} and margin ${margin} exceed the most the payment may cost in fees, ${maxFee} (--pathfinding-max-fee)`
}

/**
 * Sends the payment's lock over the first of `routes` that can carry it: its estimated fee (`fees`, in the same
 * order) with the margin stays within the payment's maxFee, our channel with its first hop has the balance for the
 * amount, the fee and the margin, and every channel along it can hold the lock (whyRouteCannotHoldLock), so no hop is
 * sent a lock it is bound to refuse. The lock expires `lockTimeout` blocks from `now` (blockNow: the chain's head as
 * the shell saw it when our synced block is older, so that a node behind the chain does not send a lock its payee finds
 * about to expire). Returns the state, or the reasons no route could.
 */
function tryRoutes(
  state: NodeState,
  base: Omit<
    InitiatorPayment,
    'remainingRoutes' | 'remainingRouteFees' | 'remainingRouteMetadata' | 'channelKey' | 'route' | 'lock' | 'messageIdentifier' | 'status' | 'startedBlock'
  >,
  routes: Address[][],
  fees: readonly bigint[] | undefined,
  records: readonly (Record<string, AddressMetadata> | undefined)[] | undefined,
  ctx: TransitionContext,
  out: Effect[],
  now: bigint,
): { state: NodeState } | { reasons: string[] } {
  const reasons: string[] = []
  for (let i = 0; i < routes.length; i++) {
    const route = routes[i]!
    if (route.length === 0 || !sameAddress(route.at(-1), base.target)) {
      reasons.push('route does not end at the target')
      continue
    }
    // A direct payment passes no mediator: nothing to pay but the amount (as Raiden's direct route, fee 0).
    const fee = route.length === 1 ? 0n : (fees?.[i] ?? 0n)
    const tooExpensive = whyTooExpensive(base.amount, fee, base.maxFee)
    if (tooExpensive) {
      reasons.push(`via ${route.join(', ')}: ${tooExpensive}`)
      continue
    }
    const channel = channelWith(state, base.tokenNetwork, route[0]!)
    const timeout = channel ? lockTimeoutFor(channel, base.lockTimeout) : 0n
    const lock: Lock = { amount: base.amount + fee + feeMargin(base.amount, fee), expiration: now + timeout - 1n, secrethash: base.secrethash }
    const tooLong =
      channel?.state === 'opened'
        ? whyRouteCannotHoldLock(state, {
            tokenNetwork: base.tokenNetwork,
            route,
            ...(base.lockTimeout !== undefined ? { lockTimeout: base.lockTimeout } : {}),
          })
        : undefined
    const why = tooLong ?? whyNotUsable(channel, lock.amount, lock.expiration - now, ctx)
    if (why) {
      reasons.push(`via ${route.join(', ')}: ${why}`)
      continue
    }
    const sent = sendLockedTransfer(
      state,
      channel!,
      'LockedTransfer',
      {
        paymentId: base.paymentId,
        token: base.token,
        lock,
        target: base.target,
        initiator: state.address,
        metadata: routeMetadata([state.address, ...route], records?.[i], base.encryptedSecret),
      },
      out,
    )
    const rest = fees?.slice(i + 1) ?? []
    const restRecords = records?.slice(i + 1) ?? []
    const payment: InitiatorPayment = {
      ...base,
      remainingRoutes: routes.slice(i + 1),
      ...(rest.length ? { remainingRouteFees: rest } : {}),
      ...(restRecords.some((r) => r !== undefined) ? { remainingRouteMetadata: restRecords } : {}),
      channelKey: channelKey(channel!.tokenNetwork, channel!.id),
      route,
      lock,
      messageIdentifier: sent.messageIdentifier,
      startedBlock: now,
      status: 'pending',
      ...(base.failedRoutes?.length || reasons.length ? { failedRoutes: [...(base.failedRoutes ?? []), ...reasons] } : {}),
    }
    return { state: { ...sent.state, initiators: { ...sent.state.initiators, [base.secrethash]: payment } } }
  }
  return { reasons }
}

/**
 * A LockedTransfer's metadata (Raiden's, as its light client writes it: raiden-ts metadataFromPaths): the route from
 * us, the presence records of its nodes when the shell has checked some (every hop then reaches the next one without
 * asking the relays; an empty set is left out, as raiden-ts does), and the secret encrypted to the target. Records
 * that would make the metadata larger than a receiver takes (MAX_METADATA_BYTES) are left out: the route and the
 * secret always go.
 */
export function routeMetadata(route: Address[], records: Record<string, AddressMetadata> | undefined, secret: Hex | undefined): Metadata {
  const bare: Metadata = { routes: [{ route }], ...(secret ? { secret } : {}) }
  if (!records || Object.keys(records).length === 0) return bare
  const full: Metadata = { routes: [{ route, address_metadata: records }], ...(secret ? { secret } : {}) }
  return JSON.stringify(full).length <= MAX_METADATA_BYTES ? full : bare
}

/** A new payment: lock the amount towards the first usable route, or fail at once if none is usable. */
export function initPayment(state: NodeState, change: InitPayment, ctx: TransitionContext, out: Effect[]): NodeState {
  const token = state.tokenNetworks[change.tokenNetwork]?.token ?? change.tokenNetwork
  const base = {
    tokenNetwork: change.tokenNetwork,
    token,
    target: change.target,
    amount: change.amount,
    paymentId: change.paymentId,
    secrethash: change.secrethash,
    ...(change.secret ? { secret: change.secret } : {}),
    ownSecret: change.ownSecret,
    ...(change.lockTimeout !== undefined ? { lockTimeout: change.lockTimeout } : {}),
    freshSecrets: change.freshSecrets,
    ...(change.encryptedSecret && change.secret ? { encryptedSecret: change.encryptedSecret } : {}),
    ...(change.maxFee !== undefined ? { maxFee: change.maxFee } : {}),
  }
  if (state.initiators[change.secrethash] || state.targets[change.secrethash] || state.mediators[change.secrethash]) {
    out.push(failed(base, 'the secret hash is already in use by another transfer'))
    return state
  }
  const result = tryRoutes(state, base, change.routes, change.routeFees, change.routeMetadata, ctx, out, blockNow(state, change.headBlock))
  if ('state' in result) return result.state
  out.push(failed(base, noRoute(result.reasons)))
  return state
}

/**
 * The target asks for the secret: answer the first valid request, from the resolver if we lack the secret. The target
 * asks for what reached it: less than the amount (the mediators took more than the route's estimated fee and its
 * margin) and the payment has failed, said now rather than at the lock's expiry (Raiden only ignores the request).
 */
export function initiatorOnSecretRequest(state: NodeState, message: Signed<SecretRequest>, sender: Address, out: Effect[]): NodeState {
  const payment = state.initiators[message.secrethash]
  if (payment?.status !== 'pending' || payment.secretRequested) return state
  const ours =
    sameAddress(sender, payment.target) &&
    message.payment_identifier === payment.paymentId &&
    message.expiration === payment.lock.expiration &&
    state.blockNumber < payment.lock.expiration
  if (!ours) return state
  if (message.amount < payment.amount) return fellShort(state, payment, message.amount, out)
  const marked: NodeState = {
    ...state,
    initiators: { ...state.initiators, [payment.secrethash]: { ...payment, secretRequested: true, awaitingResolver: !payment.secret } },
  }
  if (!payment.secret) {
    const channel = state.channels[payment.channelKey]!
    out.push({
      type: 'resolveSecret',
      request: {
        token: payment.token,
        secrethash: payment.secrethash,
        amount: payment.amount,
        paymentIdentifier: payment.paymentId,
        paymentSender: state.address,
        paymentRecipient: payment.target,
        expiration: payment.lock.expiration,
        revealTimeout: channel.revealTimeout,
        settleTimeout: channel.settleTimeout,
      },
    })
    return marked
  }
  const [id, s] = takeMessageId(marked)
  return sendUnordered(s, payment.target, { type: 'RevealSecret', message_identifier: id, secret: payment.secret }, out)
}

/** The resolver answered for a payment started with only its secret hash. */
export function initiatorOnSecretResolved(state: NodeState, secrethash: Hex, secret: Hex, out: Effect[]): NodeState {
  const payment = state.initiators[secrethash]
  if (!payment?.awaitingResolver || sha256(secret) !== secrethash.toLowerCase()) return state
  const [id, s] = takeMessageId({ ...state, initiators: { ...state.initiators, [secrethash]: { ...payment, secret, awaitingResolver: false } } })
  return sendUnordered(s, payment.target, { type: 'RevealSecret', message_identifier: id, secret }, out)
}

/**
 * The target was offered less than the amount: the secret is never revealed, so the payment has failed (its lock
 * stays until it expires, as a refunded one does). Not tried on another route: the fees were estimated too low.
 */
function fellShort(state: NodeState, payment: InitiatorPayment, received: bigint, out: Effect[]): NodeState {
  const reason = `the target was offered ${received}, less than the amount ${payment.amount}: the mediators took ${payment.lock.amount - received} in fees, more than the ${payment.lock.amount - payment.amount} the route's estimated fee and its margin allowed`
  out.push(routeFailed(payment, reason))
  out.push(failed(payment, reason))
  return { ...state, initiators: { ...state.initiators, [payment.secrethash]: { ...payment, status: 'failed', failureReason: reason, secretRequested: true } } }
}

function succeed(state: NodeState, payment: InitiatorPayment, secret: Hex, out: Effect[]): NodeState {
  const channel = state.channels[payment.channelKey]
  let s = state
  if (channel && channel.state === 'opened') {
    const sent = sendUnlock(s, channel, payment.secrethash, secret, payment.paymentId, out)
    if (sent) s = sent.state
  }
  out.push({
    type: 'event',
    event: {
      type: 'paymentSentSuccess',
      token: payment.token,
      tokenNetwork: payment.tokenNetwork,
      target: payment.target,
      amount: payment.amount,
      paymentId: payment.paymentId,
      secret,
      secrethash: payment.secrethash,
      route: payment.route,
      fee: payment.lock.amount - payment.amount,
    },
  })
  return { ...s, initiators: without(s.initiators, payment.secrethash) as NodeState['initiators'] }
}

/** Our partner on the route revealed the secret: it has been paid downstream, so we unlock. */
export function initiatorOnRevealSecret(state: NodeState, message: Signed<RevealSecret>, secrethash: Hex, sender: Address, out: Effect[]): NodeState {
  const payment = state.initiators[secrethash]
  if (payment?.status !== 'pending' || !sameAddress(sender, payment.route[0])) return state
  if (state.blockNumber >= payment.lock.expiration) return state
  return succeed(state, payment, message.secret, out)
}

/**
 * The chain's fact alone, for a channel that waits for its sync (nothing may be signed under its nonce yet): the
 * payment keeps the secret the chain revealed, and succeeds at the first block after the sync (`initiatorOnBlock`).
 */
export function initiatorKeepsRegisteredSecret(state: NodeState, secrethash: Hex, secret: Hex): NodeState {
  const payment = state.initiators[secrethash]
  if (payment?.status !== 'pending' || payment.secret) return state
  return { ...state, initiators: { ...state.initiators, [secrethash]: { ...payment, secret, awaitingResolver: false } } }
}

/** The secret was registered on-chain in time: the target can claim it, so the payment is done. */
export function initiatorOnSecretRegistered(state: NodeState, secrethash: Hex, secret: Hex, blockNumber: bigint, out: Effect[]): NodeState {
  const payment = state.initiators[secrethash]
  if (payment?.status !== 'pending' || blockNumber >= payment.lock.expiration) return state
  return succeed(state, payment, secret, out)
}

/**
 * A hop gave our lock back (RefundTransfer: it could not forward it). It must be our transfer as we sent it (same
 * payment, amount, expiration, target; Raiden's `refund_transfer_matches_transfer`), from the first hop of its route,
 * before we revealed the secret. Then the route is given up at once: try the next route with a fresh secret (the old
 * lock and the refund stay until they expire, and the old secret is never revealed), or fail saying why.
 */
export function initiatorOnRefund(
  state: NodeState,
  message: Signed<RefundTransfer>,
  sender: Address,
  ctx: TransitionContext,
  out: Effect[],
  headBlock?: bigint,
): NodeState {
  const payment = state.initiators[message.lock.secrethash]
  if (payment?.status !== 'pending' || !sameAddress(sender, payment.route[0]) || sameAddress(sender, payment.target)) return state
  const matches =
    message.payment_identifier === payment.paymentId &&
    message.lock.amount === payment.lock.amount &&
    message.lock.expiration === payment.lock.expiration &&
    sameAddress(message.target, payment.target) &&
    sameAddress(message.token, payment.token)
  // Once the target asked for the secret, it holds a lock of this payment: the payment may still succeed.
  if (!matches || payment.secretRequested) return state
  const refunded = `${sender} refunded it, unable to forward the lock (route ${payment.route.join(', ')})`
  const failedRoutes = [...(payment.failedRoutes ?? []), refunded]
  out.push(routeFailed(payment, refunded))
  const retired: NodeState = {
    ...state,
    initiators: { ...state.initiators, [payment.secrethash]: { ...payment, status: 'failed', failureReason: 'refunded', failedRoutes } },
  }
  const secret = payment.freshSecrets[0]
  if (payment.remainingRoutes.length === 0) {
    out.push(failed(payment, noRoute(failedRoutes)))
    return retired
  }
  if (!payment.ownSecret || !secret) {
    out.push(
      failed(
        payment,
        noRoute([
          ...failedRoutes,
          'the other routes were not tried: the payment secret was given by the caller (or no fresh secret is left), and a secret is never used on two routes',
        ]),
      ),
    )
    return retired
  }
  const secrethash = sha256(secret)
  const {
    remainingRoutes,
    remainingRouteFees,
    remainingRouteMetadata,
    channelKey: _c,
    route: _r,
    lock: _l,
    messageIdentifier: _m,
    status: _s,
    startedBlock: _b,
    failureReason: _f,
    secretRequested: _q,
    awaitingResolver: _a,
    encryptedSecret: _e,
    failedRoutes: _p,
    ...base
  } = payment
  const result = tryRoutes(
    retired,
    { ...base, secret, secrethash, freshSecrets: payment.freshSecrets.slice(1), failedRoutes },
    remainingRoutes,
    remainingRouteFees,
    remainingRouteMetadata,
    ctx,
    out,
    blockNow(state, headBlock),
  )
  if ('state' in result) return result.state
  out.push(failed(payment, noRoute([...failedRoutes, ...result.reasons])))
  return retired
}

/** On each block: take back locks that expired unpaid, and fail the payments they carried. */
export function initiatorOnBlock(state: NodeState, ctx: TransitionContext, out: Effect[]): NodeState {
  let s = state
  for (const payment of Object.values(state.initiators)) {
    const channel = s.channels[payment.channelKey]
    // Its Unlock or LockExpired takes our nonce: it goes at the first block after the channel's sync.
    if (waitsForSync(channel)) continue
    // The secret was registered on-chain in time while the channel waited for its sync (the change could sign no
    // Unlock then): the target can claim it, so the payment is done, never expired.
    const registered = s.registeredSecrets[payment.secrethash]
    if (payment.status === 'pending' && payment.secret && registered !== undefined && registered < payment.lock.expiration) {
      s = succeed(s, payment, payment.secret, out)
      continue
    }
    if (state.blockNumber < payment.lock.expiration + 2n * ctx.confirmationBlocks) continue
    if (channel && channel.state === 'opened') {
      const sent = sendLockExpired(s, channel, payment.secrethash, out)
      if (sent) s = sent.state
    }
    if (payment.status === 'pending' && !payment.awaitingResolver) out.push(routeFailed(payment, 'lock expired: the target did not claim the payment in time'))
    if (payment.status === 'pending')
      out.push(
        failed(
          payment,
          payment.awaitingResolver
            ? 'the secret resolver gave no secret before the lock expired'
            : 'lock expired: the target did not claim the payment in time',
        ),
      )
    s = { ...s, initiators: without(s.initiators, payment.secrethash) as NodeState['initiators'] }
  }
  return s
}
