import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import type { StaleStateError } from '../../../../src/node/errors.ts'
import type { NodeNotice } from '../../../../src/node/notices.ts'
import { EffectHandler } from '../../../../src/node/runtime/effectHandler.ts'
import type { Applied, CommittedEffect } from '../../../../src/node/runtime/engine.ts'
import { outboxRecord, transactionRecord } from '../../../../src/node/runtime/records.ts'
import { Signer } from '../../../../src/node/runtime/signer.ts'
import type { NodeEvent, Transaction } from '../../../../src/protocol/state/effects.ts'
import { initialState } from '../../../../src/protocol/state/access.ts'
import type { OutboxRecord, TransactionRecord } from '../../../../src/storage/storage.ts'
import { lineSigner } from '../../../../src/transport/lineSigner.ts'
import { encodeMessage } from '../../../../src/protocol/messages/wire.ts'
import { requestMonitoringSigners, signRequestMonitoring } from '../../../../src/protocol/monitoringRequest.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
import { privateKeyToAddress } from 'viem/accounts'
import { signPackedSync } from '../../../../src/protocol/signature.ts'
import { partnerProof } from '../../../support/monitoring.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const peer: Address = '0x00000000000000000000000000000000000000bb'
const tokenNetwork: Address = '0x00000000000000000000000000000000000000aa'
const key = anvilKeys[1]!

const send = (id: bigint): CommittedEffect => {
  const effect = { type: 'send', recipient: peer, message: { type: 'Processed', message_identifier: id } } as const
  return { ...effect, record: outboxRecord(effect, 1_000) }
}
const close: Transaction = { type: 'close', tokenNetwork, channelId: 7n, partner: peer, balanceProof: null }
const transaction = (seq: number): CommittedEffect => {
  const effect = { type: 'transaction', transaction: close } as const
  return { ...effect, record: transactionRecord(effect, seq, 0, 1_000) }
}
const event = (e: NodeEvent): CommittedEffect => ({ type: 'event', event: e })
const stateChanged: NodeEvent = { type: 'channelStateChanged', tokenNetwork, channelId: 7n, state: 'closing' }
const stale: NodeEvent = {
  type: 'staleState',
  reason: 'our nonce 5 came back with a balance hash we never signed',
  tokenNetwork,
  channelId: 7n,
  nonce: 5n,
  ourNonce: 4n,
  source: 'message',
}
const applied = (seq: number, effects: CommittedEffect[], change: Applied['change'] = { type: 'closeChannel', tokenNetwork, channelId: 7n }): Applied => ({
  seq,
  change,
  effects,
})

/** A handler over parts that record what they were handed, and the node's signer it shares with delivery. */
function handler() {
  const enqueued: OutboxRecord[][] = []
  const ran: TransactionRecord[] = []
  const notices: NodeNotice[] = []
  const halted: StaleStateError[] = []
  let synced = 0
  const engine = {
    dispatch: async (change: Applied['change']) => ({ seq: 0, change, effects: [] }),
    current: initialState({ address: peer, chainId: 1n, blockNumber: 0n }) as NodeState,
  }
  const signer = new Signer({
    engine,
    signLine: lineSigner(jsSecp256k1, key),
    signRequest: (parameters) => signRequestMonitoring(jsSecp256k1, key, parameters),
    signBytes: (data) => signPackedSync(jsSecp256k1, key, data),
  })
  const h = new EffectHandler({
    engine,
    delivery: { enqueue: (records) => void enqueued.push([...records]) },
    transactions: { run: async (record) => void ran.push(record) },
    notices: { publish: (notice) => void notices.push(notice) },
    signer,
    blockSynced: () => void synced++,
    halt: (error) => void halted.push(error),
    report: () => {},
    stopped: new AbortController().signal,
  })
  return { h, signer, engine, enqueued, ran, notices, halted, synced: () => synced }
}

describe('EffectHandler', () => {
  test("carries out each effect of a commit: the sends to delivery at once, in order; transactions to the runner; events to the notices; a block's progress", async () => {
    const { h, signer, enqueued, ran, notices, synced } = handler()
    const batch = [applied(1, [send(1n), transaction(1), event(stateChanged), send(2n)]), applied(2, [send(3n)], { type: 'block', blockNumber: 9n })]
    h.handle(batch)
    expect(enqueued.map((records) => records.map((r) => r.message))).toEqual([
      [
        { type: 'Processed', message_identifier: 1n },
        { type: 'Processed', message_identifier: 2n },
        { type: 'Processed', message_identifier: 3n },
      ],
    ])
    expect(ran.map((r) => r.transaction)).toEqual([close])
    expect(notices).toEqual([stateChanged])
    expect(synced()).toBe(1)
    // Delivery's signer signs what the commit holds.
    expect(await signer.sign({ type: 'Processed', message_identifier: 1n })).toBe(
      await lineSigner(jsSecp256k1, key)({ type: 'Processed', message_identifier: 1n }),
    )
  })

  test('a commit that found the state stale carries out only its events, halts the node, and nothing is signed from then on', async () => {
    const { h, signer, enqueued, ran, notices, halted } = handler()
    const queuedBefore = { type: 'Processed', message_identifier: 4n } as const
    h.handle([applied(1, [send(1n), transaction(1), event(stateChanged)]), applied(2, [event(stale), send(2n)])])
    expect(enqueued).toEqual([])
    expect(ran).toEqual([])
    expect(notices).toEqual([stateChanged, stale])
    expect(halted.map((e) => [e.code, e.message])).toEqual([
      ['STALE_STATE', `this node's state is older than what it signed: our nonce 5 came back with a balance hash we never signed`],
    ])
    // What delivery had queued before is not signed either.
    expect(() => signer.sign(queuedBefore)).toThrow(halted[0]!)
  })

  test('signs a RequestMonitoring as the node, both signatures; delivery then only encodes it; nothing is signed once the state is stale, even before its batch is handled', async () => {
    const { h, signer, engine } = handler()
    const request = () =>
      signer.signRequestMonitoring({
        balanceProof: partnerProof(anvilKeys[2]!, { tokenNetwork, chainId: 1n, channelId: 7n }, { nonce: 3n, transferred: 9n }),
        monitoringServiceContract: tokenNetwork,
        rewardAmount: 5n,
      })
    const signed = request()
    const me = privateKeyToAddress(key)
    expect(requestMonitoringSigners(jsSecp256k1, signed)).toEqual({ closing: privateKeyToAddress(anvilKeys[2]!), nonClosing: me, reward: me })
    expect(await signer.sign(signed)).toBe(encodeMessage(signed))
    // The transition found the state stale; the commit that holds it has not reached the handler yet.
    engine.current = { ...engine.current, stale: { reason: 'our nonce 5 came back', tokenNetwork, channelId: 7n, nonce: 5n, ourNonce: 4n, source: 'chain' } }
    expect(request).toThrow(/older than what it signed: our nonce 5 came back/)
    expect(() => signer.sign(signed)).toThrow(/older than what it signed/)
    engine.current = { ...engine.current, stale: undefined }
    h.handle([applied(1, [event(stale)])])
    expect(request).toThrow(/older than what it signed/)
  })
})
