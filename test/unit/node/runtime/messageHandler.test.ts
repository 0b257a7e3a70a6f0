import type { Address, Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import type { Message, Signed } from '../../../../src/protocol/messages/types.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
import type { Applied } from '../../../../src/node/runtime/engine.ts'
import { MessageHandler } from '../../../../src/node/runtime/messageHandler.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const tokenNetwork: Address = '0x00000000000000000000000000000000000000aa'
const partner: Address = '0x00000000000000000000000000000000000000bb'
const us: Address = '0x00000000000000000000000000000000000000cc'
const channelKey = `${tokenNetwork.toLowerCase()}:7`

/** A partner's balance proof under nonce 1 of channel 7: what the handler looks at of it (the core is not run here). */
const unlock = {
  type: 'Unlock',
  token_network_address: tokenNetwork,
  channel_identifier: 7n,
  nonce: 1n,
  signature: `0x${'11'.repeat(65)}`,
} as unknown as Signed<Message>

const withoutChannel = { channels: {} } as unknown as NodeState
const withChannel = {
  channels: { [channelKey]: { tokenNetwork, id: 7n, partner, partnerEnd: { nonce: 0n }, our: { nonce: 0n } } },
} as unknown as NodeState

/**
 * The handler over an engine whose dispatches the test settles: what it was handed, in order, and the state it shows.
 * The engine is the boundary the race is about (when a change is applied, and what the store holds by then).
 */
function handlerOver() {
  const dispatched: { change: StateChange; settle: (applied: Partial<Applied>) => void }[] = []
  const engine = {
    current: withoutChannel,
    dispatch: (change: StateChange) =>
      new Promise<Applied>((resolve) => dispatched.push({ change, settle: (a) => resolve({ seq: dispatched.length, change, effects: [], ...a }) })),
  }
  const handler = new MessageHandler({
    curve: jsSecp256k1,
    engine,
    store: { receivedMessage: async () => undefined, sentProof: async () => undefined },
    address: us,
    privateKey: new Uint8Array(32),
    report: () => {},
  })
  return { engine, handler, dispatched }
}

const refusedForUnknownChannel: Partial<Applied> = {
  effects: [{ type: 'event', event: { type: 'messageRejected', sender: partner, messageType: 'Unlock', reason: 'unknown channel 7', unknownChannel: true } }],
}

describe("a partner's message that came before the chain showed its channel", () => {
  test('refused for want of the channel, it is handed to the core again once the channel is opened', async () => {
    const { engine, handler, dispatched } = handlerOver()
    void handler.receive(unlock, partner, '0x04' as Hex)
    expect(dispatched).toHaveLength(1)
    dispatched[0]!.settle(refusedForUnknownChannel)
    engine.current = withChannel
    handler.channelOpened(tokenNetwork, 7n)
    await new Promise((r) => setTimeout(r, 0))
    expect(dispatched.map((d) => d.change.type)).toEqual(['receive', 'receive'])
  })

  test('applied meanwhile (its change came after the opening), it is not handed again: its nonce would be used and its copy not yet stored', async () => {
    const { engine, handler, dispatched } = handlerOver()
    void handler.receive(unlock, partner, '0x04' as Hex)
    // The opening is applied first (a batch before the message's), and says so before the message's batch is durable.
    engine.current = withChannel
    handler.channelOpened(tokenNetwork, 7n)
    dispatched[0]!.settle({ effects: [] })
    await new Promise((r) => setTimeout(r, 0))
    expect(dispatched).toHaveLength(1)
  })
})
