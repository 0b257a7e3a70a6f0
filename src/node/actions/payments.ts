import { bytesToHex, maxUint256, maxUint64, sha256, type Address, type Hex } from 'viem'
import { readSecretRevealBlock } from '../../chain/reads.ts'
import { distributable } from '../../protocol/channel/amounts.ts'
import { localRoutes } from '../../pathfinding/localRoutes.ts'
import { findRoutes, whyNoRouteHoldsLock } from '../../protocol/routing/findRoutes.ts'
import { channelWith, sameAddress, tokenNetworkOf } from '../../protocol/state/access.ts'
import type { NodeEvent } from '../../protocol/state/effects.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import type { PaymentQuery, PaymentRecord } from '../../storage/storage.ts'
import { ConflictError, InsufficientBalanceError, InvalidPaymentError, NoRouteError, PaymentFailedError } from '../errors.ts'
import { requireSynced } from './channels.ts'
import type { NodeNotice } from '../notices.ts'
import type { KnownPayment, PaymentTerms, SentPayment } from './paymentsInFlight.ts'
import type { RoutesFound } from '../runtime/pathfinder.ts'
import { paymentRecord } from '../runtime/records.ts'
import { serviceRouteRecords } from '../runtime/routeMetadata.ts'
import { secretForTarget } from '../runtime/secretInMetadata.ts'
import type { NodeClient } from './client.ts'

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

/**
 * The checks of the request alone, in the Raiden node's order (`transfer_async`, `mediated_transfer_async`):
 * each failure is a 409. Returns the token network and the secret hash the payment will lock with, if the
 * caller gave the secret or its hash (checked by `checkSecretHash` once the request is known not to join another).
 */
export function checkPayment(state: NodeState, p: SendPaymentParameters): { tokenNetwork: Address; secrethash?: Hex } {
  if (sameAddress(p.target, state.address)) throw new InvalidPaymentError('the target must be another address than ours')
  if (/^0x0{40}$/.test(p.target)) throw new InvalidPaymentError('the zero address cannot be a target')
  if (p.amount <= 0n) throw new InvalidPaymentError(`amount must be positive, not ${p.amount}`)
  if (p.amount > maxUint256) throw new InvalidPaymentError('amount must be at most 2^256-1')
  const tokenNetwork = tokenNetworkOf(state, p.token)
  if (!tokenNetwork) throw new InvalidPaymentError(`token ${p.token} is not known: no token network is registered for it`)
  if (p.identifier !== undefined && (p.identifier <= 0n || p.identifier > maxUint64))
    throw new InvalidPaymentError(`identifier must lie in 1..2^64-1, not ${p.identifier}`)
  if (p.lockTimeout !== undefined && p.lockTimeout <= 0n) throw new InvalidPaymentError(`lock_timeout must be positive, not ${p.lockTimeout}`)
  const secrethash = p.secrethash?.toLowerCase() as Hex | undefined
  if (p.secret && secrethash && sha256(p.secret) !== secrethash) throw new InvalidPaymentError('secret_hash is not the SHA-256 of the secret')
  const lockedWith = secrethash ?? (p.secret ? sha256(p.secret) : undefined)
  return lockedWith ? { tokenNetwork, secrethash: lockedWith } : { tokenNetwork }
}

/** A lock whose secret is public, or whose hash another transfer uses, could be claimed at once: 409. */
export function checkSecretHash(state: NodeState, secrethash: Hex): void {
  if (state.initiators[secrethash] || state.mediators[secrethash] || state.targets[secrethash])
    throw new ConflictError(`the secret hash ${secrethash} is already used by another transfer`)
  if (state.registeredSecrets[secrethash] !== undefined) throw new ConflictError(`the secret of ${secrethash} is already registered on-chain`)
}

/**
 * Whether the payment can start over some route, else why not: no open channel at all or no path is 409
 * (NoRouteError); our channels lacking the balance is 402 (InsufficientBalanceError); a lock_timeout that fits
 * no usable first channel (reveal_timeout < lock_timeout <= settle_timeout) is 409, and so is a payment whose
 * routes all have a channel that cannot hold its lock (NoRouteError, saying why).
 */
export function checkRoute(
  state: NodeState,
  {
    tokenNetwork,
    target,
    amount,
    lockTimeout,
    askService = false,
  }: {
    tokenNetwork: Address
    target: Address
    amount: bigint
    lockTimeout?: bigint
    /**
     * `--routing-mode pfs`: the service knows the others' channels better than their deposits do, so a payment our
     * channels can start is not refused for want of a route by deposits: the service is asked (Raiden's pfs routing).
     */
    askService?: boolean
  },
): void {
  // Without a lock timeout to check against the first hops, one route is enough to know: a direct one then spares
  // the search through the graph.
  const routes = findRoutes(state, { tokenNetwork, target, amount, ...(lockTimeout === undefined ? { maxRoutes: 1 } : {}) })
  if (routes.length === 0) {
    const open = Object.values(state.channels).filter((c) => sameAddress(c.tokenNetwork, tokenNetwork) && c.state === 'opened')
    if (open.length === 0) throw new NoRouteError(`no route to ${target}: the node has no open channel in this token network`)
    const direct = open.find((c) => sameAddress(c.partner, target))
    // The channels that could carry it wait for their partner's sync after a restore: 409, saying so.
    if (direct?.waitingSync) requireSynced(direct)
    if (open.every((c) => c.waitingSync)) requireSynced(open[0]!)
    const most = open.reduce((max, c) => {
      const free = distributable(c.our, c.partnerEnd)
      return free > max ? free : max
    }, 0n)
    if (direct && distributable(direct.our, direct.partnerEnd) < amount)
      throw new InsufficientBalanceError(
        `insufficient balance: the channel with ${target} can send ${distributable(direct.our, direct.partnerEnd)}, ${amount} needed`,
      )
    if (most < amount) throw new InsufficientBalanceError(`insufficient balance: our open channels can send at most ${most} in one payment, ${amount} needed`)
    if (askService) return
    throw new NoRouteError(`no route to ${target} can carry ${amount}`)
  }
  if (lockTimeout !== undefined) {
    const firstHops = routes.map((r) => channelWith(state, tokenNetwork, r[0]!)!)
    if (!firstHops.some((c) => lockTimeout > c.revealTimeout && lockTimeout <= c.settleTimeout)) {
      const c = firstHops[0]!
      throw new InvalidPaymentError(
        `lock_timeout ${lockTimeout} must be greater than the reveal timeout (${c.revealTimeout}) and at most the settle timeout (${c.settleTimeout}) of the channel with ${c.partner}`,
      )
    }
  }
  // Routes whose channels cannot hold the lock are no routes: refused now, with the reason, not sent to hang.
  const tooShort = whyNoRouteHoldsLock(state, { tokenNetwork, target, amount, lockTimeout: lockTimeout ?? 'default' })
  if (tooShort) throw new NoRouteError(tooShort)
}

const randomBytes32 = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
const randomIdentifier = (): bigint => BigInt(bytesToHex(crypto.getRandomValues(new Uint8Array(8)))) || 1n

/**
 * Sends a payment and resolves once it succeeded (our Unlock is on its way); the one entry point, for the REST
 * route and every other caller. Every check runs before anything changes.
 *
 * Idempotent by identifier (docs/decisions/0018): a request with an identifier already used toward the same
 * target, with the same token and amount, pays nothing again and returns the first payment's result: while the
 * first is in flight (it joins it), after it completed (from the payment history), and after a restart (a payment
 * the store resumed is waited for). The same identifier for a different payment is a ConflictError (409). An
 * identifier whose payment failed is free again: nothing was paid.
 *
 * The identifier is reserved synchronously, before the first await: whatever the timing of two requests (a client
 * retrying while its first request still reads the history, two tabs, the proxy and REST), the second finds the
 * first and joins it or conflicts with it; it never starts a payment of its own.
 */
export async function sendPayment(client: NodeClient, p: SendPaymentParameters): Promise<SentPayment> {
  const { tokenNetwork, secrethash } = checkPayment(client.state, p)
  const identifier = p.identifier ?? randomIdentifier()
  const asked: PaymentTerms = { tokenNetwork, amount: p.amount, ...(secrethash ? { secrethash } : {}) }
  for (;;) {
    // No await between looking for a claim and making one: the second of two requests always finds the first.
    const claim = client.payments.get(p.target, identifier)
    if (!claim) {
      const payment = findOrStart(client, p, asked, identifier)
      client.payments.claim(p.target, identifier, { asked, payment })
      return joinOrConflict(p, asked, identifier, await payment)
    }
    let known: KnownPayment
    try {
      known = await claim.payment
    } catch (error) {
      // The claim failed before any payment (no route, say): the same request shares its answer; another may try.
      if (!differs(asked, claim.asked)) throw error
      continue
    }
    return joinOrConflict(p, asked, identifier, known)
  }
}

/** The result of the payment the identifier stands for if it is the one asked for, else a ConflictError (409). */
function joinOrConflict(p: SendPaymentParameters, asked: PaymentTerms, identifier: bigint, known: KnownPayment): Promise<SentPayment> {
  const why = differs(asked, known)
  if (why) throw new ConflictError(`the identifier ${identifier} is already used for a different payment to ${p.target} (${known.state} with ${why})`)
  return known.result
}

/** Why a payment already known under the identifier is not the one asked for: another amount, token or secret hash. */
function differs(asked: PaymentTerms, known: PaymentTerms): string | undefined {
  if (known.amount !== asked.amount) return `amount ${known.amount}`
  if (!sameAddress(known.tokenNetwork, asked.tokenNetwork)) return 'another token'
  if (asked.secrethash && known.secrethash && known.secrethash !== asked.secrethash) return `secret hash ${known.secrethash}`
  return undefined
}

/**
 * What the identifier stands for: a payment resumed after a restart, one completed before (from the history), or
 * else a new payment with the terms asked, started now. Rejects, paying nothing, when a new one cannot start.
 */
async function findOrStart(client: NodeClient, p: SendPaymentParameters, asked: PaymentTerms, identifier: bigint): Promise<KnownPayment> {
  if (p.identifier !== undefined) {
    // Started before a restart: the store resumed it. Looked at before the first await, so that its outcome cannot
    // come and go unseen while the history is read.
    const resumed = Object.values(client.state.initiators).find((i) => sameAddress(i.target, p.target) && i.paymentId === identifier && i.status !== 'failed')
    if (resumed) {
      const result = outcome(client, p.target, identifier).then((r) => sentPayment(client, r))
      return { tokenNetwork: resumed.tokenNetwork, amount: resumed.amount, secrethash: resumed.secrethash, state: 'in flight', result }
    }
    // Completed: its success row and its end in the state are one commit, so it is either resumed above or here.
    const done = await client.store.sentPayment(p.target, identifier)
    if (done?.event === 'EventPaymentSentSuccess') {
      const terms = { tokenNetwork: tokenNetworkOf(client.state, done.token) ?? done.token, amount: done.amount, secrethash: done.secrethash }
      if (!done.secret) {
        const kept = new ConflictError(
          `the identifier ${identifier} was used for a payment to ${p.target} whose result was not kept (paid before this node kept them)`,
        )
        return { ...terms, state: 'paid', result: Promise.reject(kept) }
      }
      const first: SentPayment = {
        initiator: client.address,
        target: done.partner,
        token: done.token,
        amount: done.amount,
        identifier: done.identifier,
        secret: done.secret,
        secrethash: done.secrethash,
        ...(done.route ? { route: done.route } : {}),
        ...(done.fee !== undefined ? { fee: done.fee } : {}),
      }
      return { ...terms, state: 'paid', result: Promise.resolve(first) }
    }
  }
  // The state may have moved while the history was read: the checks run on the state the payment starts from.
  const { secrethash } = asked
  if (secrethash) checkSecretHash(client.state, secrethash)
  checkRoute(client.state, {
    tokenNetwork: asked.tokenNetwork,
    target: p.target,
    amount: p.amount,
    ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}),
    askService: client.config.routingMode === 'pfs',
  })
  if (secrethash) {
    // The state knows the confirmed registrations; the chain also knows the latest ones.
    const registry = client.config.deployment.contracts.SecretRegistry.address
    if ((await readSecretRevealBlock(client.chain, { secretRegistry: registry, secrethash })) > 0n)
      throw new ConflictError(`the secret of ${secrethash} is already registered on-chain`)
  }
  const result = (async () => {
    const release = await client.payments.slots.acquire()
    try {
      return sentPayment(client, await startPayment(client, { ...p, tokenNetwork: asked.tokenNetwork, identifier, ...(secrethash ? { secrethash } : {}) }))
    } finally {
      release()
    }
  })()
  return { ...asked, state: 'in flight', result }
}

type PaymentOutcome = Extract<NodeNotice, { type: 'paymentSentSuccess' }>

/** Hands the payment to the core over the routes found now, and waits for its outcome. */
async function startPayment(client: NodeClient, p: SendPaymentParameters & { tokenNetwork: Address; identifier: bigint }): Promise<PaymentOutcome> {
  const ownSecret = !p.secret && !p.secrethash
  const secret = (p.secret?.toLowerCase() as Hex | undefined) ?? (ownSecret ? randomBytes32() : undefined)
  const secrethash = (p.secrethash?.toLowerCase() as Hex | undefined) ?? sha256(secret!)
  // A direct channel that can carry it is the route, as Raiden's get_best_routes: the graph is not looked at.
  const first = findRoutes(client.state, {
    tokenNetwork: p.tokenNetwork,
    target: p.target,
    amount: p.amount,
    lockTimeout: p.lockTimeout ?? 'default',
    maxRoutes: 1,
  })
  // Else the node's own routes: by what it heard of the network's channels and fees, else by their deposits and its
  // own fees as a guess (docs/decisions/0074, 0069).
  const local =
    first[0]?.length === 1
      ? [{ route: first[0], fee: 0n }]
      : localRoutes(client.state, client.gossip.heard, {
          tokenNetwork: p.tokenNetwork,
          target: p.target,
          amount: p.amount,
          ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}),
        })
  const noLocalRoute = () =>
    new NoRouteError(
      `no route to ${p.target} can carry ${p.amount}${first.length > 0 ? ': the announcements heard say no channel of the routes by deposits can carry it now' : ''}`,
    )
  // A direct channel that can carry it is used without asking anyone (Raiden's get_best_routes); else, in `pfs` mode,
  // the pathfinding service's routes with its fees, even when ours find none (it knows the balances that moved since
  // the deposits), or ours while it cannot answer (docs/decisions/0073).
  const found: RoutesFound = local[0]?.route.length === 1 ? { source: 'local' } : await client.pathfinder.routes({ ...p, address: client.address })
  if (found.source === 'none') throw new NoRouteError(`no route to ${p.target} can carry ${p.amount}: ${found.reason}`)
  if (found.source === 'local' && local.length === 0) {
    // Local mode, or the service could not answer: say that too.
    if (found.reason) throw new NoRouteError(`${noLocalRoute().message} (routed locally: ${found.reason})`)
    throw noLocalRoute()
  }
  let routes = local.map((r) => r.route)
  let routeFees = local.map((r) => r.fee)
  if (found.source === 'service') {
    routes = found.routes
    routeFees = found.fees
  }
  // The service's routes carry each node's presence record: checked, the target's gives its key (the first payment to
  // it carries the secret too) and the way to it and to our first hop (docs/decisions/0073).
  const records =
    found.source === 'service'
      ? await serviceRouteRecords(client.peerRecord, { paths: found.paths, given: found.addressMetadata, target: p.target })
      : undefined
  const targetPublicKey = client.publicKeyOf(p.target) ?? records?.targetKey
  // A target we know no key of (a mediated payment's, the first time): the transport asks for its presence now, and
  // opens the way to it (its SecretRequest and our RevealSecret go directly): the next payment carries its secret.
  if (!targetPublicKey) client.connect(p.target)
  const encryptedSecret = secretForTarget({
    curve: client.config.secp256k1,
    enabled: client.config.encryptSecret,
    targetPublicKey,
    secret,
    amount: p.amount,
    paymentId: p.identifier,
  })
  const done = outcome(client, p.target, p.identifier)
  if (found.source === 'service') tellService(client, found, { tokenNetwork: p.tokenNetwork, target: p.target, paymentId: p.identifier }, done)
  // The lock's expiry counts from the chain's head as the node knows it, never from a synced block that lags.
  const { headBlock } = client.chainNow()
  await client.dispatch({
    type: 'initPayment',
    headBlock,
    tokenNetwork: p.tokenNetwork,
    target: p.target,
    amount: p.amount,
    paymentId: p.identifier,
    ...(secret ? { secret } : {}),
    secrethash,
    ownSecret,
    ...(p.lockTimeout !== undefined ? { lockTimeout: p.lockTimeout } : {}),
    routes,
    ...(routeFees.some((fee) => fee !== 0n) ? { routeFees } : {}),
    ...(records?.routeMetadata.some((r) => r !== undefined) ? { routeMetadata: records.routeMetadata } : {}),
    maxFee: client.config.pathfindingMaxFee,
    freshSecrets: ownSecret ? [randomBytes32(), randomBytes32()] : [],
    ...(encryptedSecret ? { encryptedSecret } : {}),
  })
  return done
}

/**
 * Tells the pathfinding service how each of its routes did (Raiden's post_pfs_feedback on EventRouteFailed and
 * EventPaymentSentSuccess): each route given up on the way failed, the one that paid succeeded. Best effort: a feedback
 * the service does not take is only reported.
 */
function tellService(
  client: NodeClient,
  found: Extract<RoutesFound, { source: 'service' }>,
  payment: { tokenNetwork: Address; target: Address; paymentId: bigint },
  done: Promise<PaymentOutcome>,
): void {
  const tell = (route: readonly Address[], success: boolean) => {
    const i = found.routes.findIndex((r) => r.length === route.length && r.every((a, j) => sameAddress(a, route[j])))
    if (i < 0) return
    client.pathfinder
      .feedback(found.url, payment.tokenNetwork, { token: found.feedbackToken, path: found.paths[i]!, success })
      .catch((error: unknown) => client.report('pathfinding', error, 'feedback'))
  }
  const off = client.subscribe((n) => {
    if (n.type === 'routeFailed' && n.paymentId === payment.paymentId && sameAddress(n.target, payment.target)) tell(n.route, false)
  })
  // A route given up is told in the commit that ends the payment at the latest: all are heard when the outcome is.
  done.then((r) => tell(r.route, true)).then(off, off)
}

/** The outcome of our payment to `target` with `identifier`: its success, or PaymentFailedError; NodeStoppedError on stop. */
function outcome(client: NodeClient, target: Address, identifier: bigint): Promise<PaymentOutcome> {
  const ended = client.nextNotice(
    (e) => (e.type === 'paymentSentSuccess' || e.type === 'paymentSentFailed') && e.paymentId === identifier && sameAddress(e.target, target),
  )
  return ended.then((e) => {
    if (e.type === 'paymentSentFailed') throw new PaymentFailedError(e.reason)
    return e as PaymentOutcome
  })
}

function sentPayment(client: NodeClient, r: PaymentOutcome): SentPayment {
  return {
    initiator: client.address,
    target: r.target,
    token: r.token,
    amount: r.amount,
    identifier: r.paymentId,
    secret: r.secret,
    secrethash: r.secrethash,
    route: r.route,
    fee: r.fee,
  }
}

/**
 * The payment history, oldest first, paged in the store. A token with no token network is a ConflictError
 * (409, as docs/rest-api.md, Payment history entry, says for an invalid token_address).
 */
export async function readPaymentHistory(client: NodeClient, query: PaymentQuery): Promise<PaymentRecord[]> {
  if (query.token !== undefined && !tokenNetworkOf(client.state, query.token)) throw new ConflictError(`token ${query.token} does not match a token network`)
  return client.store.payments({ ...query, ...pageOf(query) })
}

/**
 * The history row a payment event becomes once it is stored, as GET /payments will read it: for a client that
 * follows payments live, before the row is there (no seq yet). Undefined for an event that is not a payment's.
 */
export function paymentOfEvent(event: NodeEvent, time: number): PaymentRecord | undefined {
  return paymentRecord(event, 0, time)
}

/** A page the store can key: non-negative integers, anything beyond the safe integers meaning "all". */
export function pageOf({ limit, offset }: { limit?: number; offset?: number }): { limit?: number; offset?: number } {
  for (const [name, n] of [
    ['limit', limit],
    ['offset', offset],
  ] as const) {
    if (n !== undefined && !(Number.isInteger(n) && n >= 0)) throw new ConflictError(`${name} must be a non-negative integer, not ${n}`)
  }
  const clamp = (n: number) => Math.min(n, Number.MAX_SAFE_INTEGER)
  return { ...(limit !== undefined ? { limit: clamp(limit) } : {}), ...(offset !== undefined ? { offset: clamp(offset) } : {}) }
}
