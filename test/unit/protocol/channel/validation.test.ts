import { sha256, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { beforeEach, describe, expect, test } from 'vitest'
import { locksroot } from '../../../../src/protocol/locks.ts'
import { decodeMessage, signMessage } from '../../../../src/protocol/messages/index.ts'
import type { LockedTransfer, Message, Signed, Unlock } from '../../../../src/protocol/messages/types.ts'
import { defaultContext } from '../../../../src/protocol/state/access.ts'
import { transition } from '../../../../src/protocol/transition.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

/** Applies `message` signed by `key` to B and returns the rejection reason (undefined if it was applied). */
async function offer(net: Network, message: Message, key: Hex = net.node('A').key) {
  const signed = await signMessage(jsSecp256k1, key, message)
  const before = net.node('B').state
  const { state, effects } = transition(before, { type: 'receive', message: signed, sender: privateKeyToAddress(key) }, defaultContext)
  const rejection = effects.find((e) => e.type === 'event' && e.event.type === 'messageRejected')
  if (rejection) expect(state, 'a rejected message leaves the state as it was').toBe(before)
  return rejection?.type === 'event' && rejection.event.type === 'messageRejected' ? rejection.event.reason : undefined
}

let net: Network
let transfer: Signed<LockedTransfer>

beforeEach(async () => {
  net = new Network(['A', 'B', 'C'])
  await net.open('A', 'B', 100n, 0n)
  await net.pay('A', 'B', 30n, 1n)
  const { message } = await decodeMessage(jsSecp256k1, net.inFlight[0]!.text)
  transfer = message as Signed<LockedTransfer>
})

const unsigned = ({ signature: _, ...m }: Signed<LockedTransfer>): LockedTransfer => m

describe('validation of a received LockedTransfer', () => {
  test('the honest message is applied', async () => {
    expect(await offer(net, unsigned(transfer))).toBeUndefined()
  })

  test('wrong signer: a message signed by someone who is not the channel partner', async () => {
    expect(await offer(net, unsigned(transfer), net.node('C').key)).toMatch(/not by the channel partner/)
  })

  test('nonce that is not the previous one plus one', async () => {
    expect(await offer(net, { ...unsigned(transfer), nonce: 2n })).toMatch(/nonce 2 is not 1/)
  })

  test('wrong channel, token network or chain id', async () => {
    expect(await offer(net, { ...unsigned(transfer), channel_identifier: 99n })).toMatch(/unknown channel/)
    expect(await offer(net, { ...unsigned(transfer), token_network_address: '0x00000000000000000000000000000000000000C3' })).toMatch(/unknown channel/)
    expect(await offer(net, { ...unsigned(transfer), chain_id: 1n })).toMatch(/chain id/)
  })

  test('only a channel the node does not hold is told as unknownChannel (one it may not have synced yet)', async () => {
    const rejection = async (message: Message) => {
      const { effects } = transition(
        net.node('B').state,
        { type: 'receive', message: await signMessage(jsSecp256k1, net.node('A').key, message), sender: net.node('A').address },
        defaultContext,
      )
      return effects.find((e) => e.type === 'event' && e.event.type === 'messageRejected')
    }
    expect(await rejection({ ...unsigned(transfer), channel_identifier: 99n })).toMatchObject({ event: { unknownChannel: true } })
    const otherReason = await rejection({ ...unsigned(transfer), nonce: 2n })
    expect(otherReason).toMatchObject({ event: { type: 'messageRejected' } })
    expect(otherReason).not.toMatchObject({ event: { unknownChannel: true } })
  })

  test('transferred amount going down, or changed without an unlock', async () => {
    expect(await offer(net, { ...unsigned(transfer), transferred_amount: 5n })).toMatch(/transferred amount 5 is not 0/)
  })

  test('locksroot that does not match the pending locks', async () => {
    expect(await offer(net, { ...unsigned(transfer), locksroot: locksroot([]) })).toMatch(/locksroot/)
  })

  test('locked amount that does not sum the locks', async () => {
    expect(await offer(net, { ...unsigned(transfer), locked_amount: 31n })).toMatch(/locked amount/)
  })

  test("amount above the partner's distributable balance", async () => {
    const lock = { ...transfer.lock, amount: 101n }
    expect(await offer(net, { ...unsigned(transfer), lock, locked_amount: 101n, locksroot: locksroot([lock]) })).toMatch(/exceeds the partner's distributable/)
  })

  test('lock expiration beyond the settle timeout', async () => {
    const lock = { ...transfer.lock, expiration: 1000n }
    expect(await offer(net, { ...unsigned(transfer), lock, locksroot: locksroot([lock]) })).toMatch(/beyond the settle timeout/)
  })

  test('too many pending locks', async () => {
    const ctx = { ...defaultContext, maxPendingLocks: 0 }
    const signed = await signMessage(jsSecp256k1, net.node('A').key, unsigned(transfer))
    const { effects } = transition(net.node('B').state, { type: 'receive', message: signed, sender: net.node('A').address }, ctx)
    expect(effects).toContainEqual(expect.objectContaining({ event: expect.objectContaining({ reason: 'too many pending locks (0)' }) }))
  })

  test('we are not the recipient, or the token is wrong', async () => {
    expect(await offer(net, { ...unsigned(transfer), recipient: net.node('C').address })).toMatch(/not the recipient/)
    expect(await offer(net, { ...unsigned(transfer), token: net.node('C').address })).toMatch(/wrong token/)
  })

  test('a resend of an applied message changes nothing and is acknowledged again', async () => {
    await net.deliverAll()
    const before = net.node('B').state
    const change = await net.received('B', transfer, net.node('A').address)
    expect(change).toMatchObject({ applied: { type: 'LockedTransfer', signature: transfer.signature } })
    const { state, effects } = transition(before, change, defaultContext)
    expect(state).toBe(before)
    expect(effects).toEqual([
      { type: 'send', recipient: net.node('A').address, message: { type: 'Processed', message_identifier: transfer.message_identifier } },
    ])
  })

  test('a message under a used nonce, without what was applied under it at hand, is not acknowledged', async () => {
    await net.deliverAll()
    const before = net.node('B').state
    const { state, effects } = transition(before, { type: 'receive', message: transfer, sender: net.node('A').address }, defaultContext)
    expect(state).toBe(before)
    expect(effects).toEqual([{ type: 'event', event: expect.objectContaining({ type: 'messageRejected', reason: expect.stringMatching(/not acknowledged/) }) }])
  })

  test('a different message signed under a used nonce is evidence: kept with both signatures, counted, not acknowledged', async () => {
    await net.deliverAll()
    const before = net.node('B').state
    const variant = await signMessage(jsSecp256k1, net.node('A').key, { ...unsigned(transfer), message_identifier: transfer.message_identifier + 1n })
    const { state, effects } = transition(before, await net.received('B', variant, net.node('A').address), defaultContext)
    expect(effects.filter((e) => e.type === 'send')).toEqual([])
    expect(effects).toEqual([
      {
        type: 'event',
        event: expect.objectContaining({
          type: 'partnerEquivocated',
          partner: net.node('A').address,
          nonce: 1n,
          applied: expect.objectContaining({ signature: transfer.signature }),
          second: expect.objectContaining({ signature: variant.signature }),
        }),
      },
    ])
    const channel = Object.values(state.channels)[0]!
    expect(channel.partnerEnd.equivocations).toBe(1)
    expect({ ...channel.partnerEnd, equivocations: undefined }).toEqual({ ...Object.values(before.channels)[0]!.partnerEnd, equivocations: undefined })
  })
})

describe('validation of a received Unlock and LockExpired', () => {
  test('an Unlock for an unknown secret, or with the wrong transferred amount, is refused', async () => {
    await net.deliverAll()
    const channelB = Object.values(net.node('B').state.channels)[0]!
    const base: Unlock = {
      type: 'Unlock',
      message_identifier: 77n,
      chain_id: 31337n,
      token_network_address: net.chain.tokenNetwork,
      channel_identifier: channelB.id,
      nonce: channelB.partnerEnd.nonce + 1n,
      transferred_amount: channelB.partnerEnd.balanceProof!.transferredAmount,
      locked_amount: 0n,
      locksroot: locksroot([]),
      payment_identifier: 1n,
      secret: sha256('0x01'),
    }
    expect(await offer(net, base)).toMatch(/no pending lock for this secret/)
  })

  test('a LockExpired before the lock expired and was confirmed is refused', async () => {
    await net.deliver(0) // only the LockedTransfer: the lock is pending at B
    const channelA = Object.values(net.node('A').state.channels)[0]!
    const lock = transfer.lock
    // A (wrongly) tries to take back a lock that has not expired.
    const early = {
      type: 'LockExpired' as const,
      message_identifier: 78n,
      chain_id: 31337n,
      token_network_address: net.chain.tokenNetwork,
      channel_identifier: channelA.id,
      nonce: channelA.our.nonce + 1n,
      transferred_amount: 0n,
      locked_amount: 0n,
      locksroot: locksroot([]),
      recipient: net.node('B').address,
      secrethash: lock.secrethash,
    }
    expect(await offer(net, early)).toMatch(/lock expires at/)
  })
})
