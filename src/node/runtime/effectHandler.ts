import { unhandledEffect } from '../../protocol/state/effects.ts'
import type { OutboxRecord } from '../../storage/storage.ts'
import type { Backoff } from '../../transport/backoff.ts'
import type { Delivery } from '../../transport/delivery.ts'
import { StaleStateError } from '../errors.ts'
import type { NodeNotice, Report } from '../notices.ts'
import type { Applied, CommittedEffect, Engine } from './engine.ts'
import type { EventBus } from './eventBus.ts'
import { resolveSecret } from './secretResolver.ts'
import type { Signer } from './signer.ts'
import type { TransactionRunner } from './transactionRunner.ts'

export type EffectHandlerParameters = {
  engine: Pick<Engine, 'dispatch' | 'current'>
  delivery: Pick<Delivery, 'enqueue'>
  transactions: Pick<TransactionRunner, 'run'>
  notices: Pick<EventBus<NodeNotice>, 'publish'>
  /** The node's signer (delivery's, the service messages'): stopped here when a commit finds the state stale. */
  signer: Pick<Signer, 'refuse'>
  /** Where and how to ask for a secret (docs/rest-api.md, The secret resolver); absent without `resolverEndpoint`. */
  resolver?: { endpoint: string; fetch: typeof fetch; backoff: Backoff }
  /**
   * A channel's capacity or fee announcement for the pathfinding service (docs/decisions/0073): the node's pathfinding
   * client signs and sends it, or drops it when the node is private or knows no service. Absent: dropped.
   */
  announce?: (effect: Extract<CommittedEffect, { type: 'announceCapacity' | 'announceFees' }>) => void
  /** After each commit that synced blocks: the status's sync progress follows. */
  blockSynced(): void
  /** The state was found stale: the node stops itself (SluiceNode.halt). */
  halt(error: StaleStateError): void
  report: Report
  /** Aborted when the node stops. */
  stopped: AbortSignal
}

/**
 * Carries out the core's effects once the commit that holds them is durable (docs/architecture.md, rule 4), as
 * Raiden's RaidenEventHandler and go-nitro's executeSideEffects do: one switch over every kind of effect. A send's
 * outbox record goes to delivery, which signs it with the node's signer (signer.ts) as it sends it (decision 0002);
 * a transaction's record to the transaction runner; an event to the notices; a resolveSecret to the secret
 * resolver; an announcement to the pathfinding client. The engine hands it each batch it committed (`handle`, given to `engine.handEffectsTo`).
 *
 * A batch in which the core found the state stale (a `staleState` event, docs/decisions/0029) carries out only its
 * events: nothing of it is signed or sent, its changes having been computed on a state older than what we signed.
 * From then on the node's signer signs nothing, and the node halts.
 */
export class EffectHandler {
  constructor(private readonly p: EffectHandlerParameters) {}

  /** Carries out what one durable commit applied, change by change, in order. */
  handle(applied: Applied[]): void {
    const found = staleStateIn(applied)
    if (found) {
      this.haltOn(applied, found.reason)
      return
    }
    // A batch's sends go to delivery together: it flushes them at once, one send per peer.
    const outbox: OutboxRecord[] = []
    for (const a of applied) {
      for (const effect of a.effects) this.carryOut(effect, outbox)
      if (a.change.type === 'block') this.p.blockSynced()
    }
    if (outbox.length) this.p.delivery.enqueue(outbox)
  }

  private carryOut(effect: CommittedEffect, outbox: OutboxRecord[]): void {
    switch (effect.type) {
      case 'send':
        outbox.push(effect.record)
        return
      case 'transaction':
        void this.p.transactions.run(effect.record)
        return
      case 'event':
        this.p.notices.publish(effect.event)
        return
      case 'resolveSecret':
        this.askResolver(effect)
        return
      case 'announceCapacity':
      case 'announceFees':
        this.p.announce?.(effect)
        return
      default:
        unhandledEffect(effect)
    }
  }

  private askResolver({ request }: Extract<CommittedEffect, { type: 'resolveSecret' }>): void {
    const { resolver, engine, report } = this.p
    if (!resolver) return
    void resolveSecret(request, {
      ...resolver,
      resolved: (secret) => engine.dispatch({ type: 'secretResolved', secrethash: request.secrethash, secret }),
      blockNumber: () => engine.current.blockNumber,
      stopped: this.p.stopped,
      report: (error) => report('secret resolver', error),
    })
  }

  private haltOn(applied: Applied[], reason: string): void {
    const stale = new StaleStateError(`this node's state is older than what it signed: ${reason}`)
    this.p.signer.refuse(stale)
    for (const a of applied) for (const effect of a.effects) if (effect.type === 'event') this.p.notices.publish(effect.event)
    this.p.halt(stale)
  }
}

function staleStateIn(applied: Applied[]): { reason: string } | undefined {
  for (const a of applied) for (const effect of a.effects) if (effect.type === 'event' && effect.event.type === 'staleState') return effect.event
  return undefined
}
