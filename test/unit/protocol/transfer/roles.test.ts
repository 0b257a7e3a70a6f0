import { describe, expect, test } from 'vitest'
import { decodeMessage, signMessage } from '../../../../src/protocol/messages/index.ts'
import type { SecretRequest } from '../../../../src/protocol/messages/types.ts'
import { channelWith, defaultContext } from '../../../../src/protocol/state/access.ts'
import { transition } from '../../../../src/protocol/transition.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const channelOf = (net: Network, a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)!

describe('mediator', () => {
  test('when the next hop cannot take the lock and it cannot give it back, the lock expires and the payment fails', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 0n)
    await net.open('B', 'C', 5n, 0n)
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expect(net.node('B').sent.map((s) => s.message.type)).toEqual(['Processed'])
    expect(net.outcomes('A', 1n)).toEqual([])
    await net.mine(30)
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentFailed', reason: expect.stringMatching(/lock expired/) }])
    expect(channelOf(net, 'B', 'A').partnerEnd.locks).toEqual([])
    expect(net.node('B').state.mediators).toEqual({})
  })

  /** A→B→C up to the point where C revealed the secret to B (not yet delivered). */
  async function upToReveal() {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 0n, 100n, 10n)
    await net.open('B', 'C', 100n, 0n, 100n, 10n)
    const h = await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    expect(await net.deliverMessage('A', 'B', 'LockedTransfer')).toBe(true)
    expect(await net.deliverMessage('B', 'C', 'LockedTransfer')).toBe(true)
    expect(await net.deliverMessage('C', 'A', 'SecretRequest')).toBe(true)
    expect(await net.deliverMessage('A', 'C', 'RevealSecret')).toBe(true)
    return { net, h }
  }

  test('a mediator that learns the secret in the danger zone registers it on-chain before paying the payee', async () => {
    const { net, h } = await upToReveal()
    const expiration = net.node('B').state.mediators[h]!.payerLock.expiration
    await net.mine(Number(expiration - net.chain.block - 10n))
    expect(await net.deliverMessage('C', 'B', 'RevealSecret')).toBe(true)
    expect(net.node('B').transactions).toContainEqual(expect.objectContaining({ type: 'registerSecret', secrethash: h, deadline: expiration - 1n }))
    expect(net.inFlight.filter((m) => m.from === 'B' && m.to === 'C')).toHaveLength(0) // no Unlock yet
    await net.mine(1)
    expect(net.chain.secrets.has(h)).toBe(true)
    expect(await net.deliverMessage('B', 'C', 'Unlock')).toBe(true)
    expect(net.node('C').events).toContainEqual(expect.objectContaining({ type: 'paymentReceivedSuccess', amount: 20n }))
  })

  test('a mediator holding the secret registers it when the payer lock enters the danger zone unpaid', async () => {
    const { net, h } = await upToReveal()
    expect(await net.deliverMessage('C', 'B', 'RevealSecret')).toBe(true)
    expect(await net.deliverMessage('B', 'C', 'Unlock')).toBe(true)
    expect(net.node('B').transactions).toEqual([])
    net.node('A').online = false // A never unlocks to B
    const expiration = net.node('B').state.mediators[h]!.payerLock.expiration
    await net.mine(Number(expiration - net.chain.block - 11n))
    expect(net.node('B').transactions).toEqual([])
    await net.mine(1)
    expect(net.node('B').transactions).toContainEqual(expect.objectContaining({ type: 'registerSecret', secrethash: h }))
  })
})

describe('initiator', () => {
  test('only the first valid secret request is answered; a request for less, or from another node, is ignored', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 0n)
    const h = await net.pay('A', 'B', 30n, 1n)
    const payment = net.node('A').state.initiators[h]!
    const request: SecretRequest = {
      type: 'SecretRequest',
      message_identifier: 9n,
      payment_identifier: 1n,
      secrethash: h,
      amount: 30n,
      expiration: payment.lock.expiration,
    }
    const offer = async (m: SecretRequest, from: 'B' | 'C') => {
      const signed = await signMessage(jsSecp256k1, net.node(from).key, m)
      const { effects, state } = transition(net.node('A').state, { type: 'receive', message: signed, sender: net.node(from).address }, defaultContext)
      return { reveals: effects.filter((e) => e.type === 'send' && e.message.type === 'RevealSecret').length, state }
    }
    expect((await offer({ ...request, amount: 29n }, 'B')).reveals).toBe(0)
    expect((await offer({ ...request, payment_identifier: 2n }, 'B')).reveals).toBe(0)
    expect((await offer({ ...request, expiration: request.expiration + 1n }, 'B')).reveals).toBe(0)
    expect((await offer(request, 'C')).reveals).toBe(0)
    const first = await offer(request, 'B')
    expect(first.reveals).toBe(1)
    net.node('A').state = first.state
    expect((await offer(request, 'B')).reveals).toBe(0)
  })
})

describe('target', () => {
  test('does not ask for the secret of a lock already in the danger zone', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n, 100n, 10n)
    // A lock timeout of 11 leaves 10 blocks: exactly the reveal timeout, so B must not ask.
    await net.pay('A', 'B', 10n, 1n, undefined, 12n)
    await net.mine(1)
    await net.deliver(0)
    const { message } = await decodeMessage(jsSecp256k1, net.inFlight.find((m) => m.from === 'B')!.text)
    expect(message.type).toBe('Processed')
    expect(net.inFlight.filter((m) => m.from === 'B')).toHaveLength(1)
  })
})
