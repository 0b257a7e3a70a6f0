import { describe, expect, test } from 'vitest'
import { hexToBytes, sha256, type Hex } from 'viem'
import type { LockedTransfer, Message } from '../../../../src/protocol/messages/types.ts'
import { decryptSecret, encryptSecret } from '../../../../src/protocol/secretCipher.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const types = (net: Network, name: string) => net.node(name).sent.map((s) => s.message.type)

/** Starts A→(route) payment 1 with a hand-made metadata.secret. */
async function payWith(net: Network, to: string, route: string[], payload: { secret?: Hex; amount?: bigint; paymentId?: bigint }, encryptTo = to) {
  const secret = sha256('0xaa')
  const encryptedSecret = encryptSecret(jsSecp256k1, {
    payload: { secret: payload.secret ?? secret, amount: payload.amount ?? 10n, paymentId: payload.paymentId ?? 1n },
    targetPublicKey: jsSecp256k1.publicKey(hexToBytes(net.node(encryptTo).key)),
    ephemeralPrivateKey: hexToBytes(sha256('0x01')),
    nonce: new Uint8Array(16),
  })
  await net.dispatch('A', {
    type: 'initPayment',
    tokenNetwork: net.chain.tokenNetwork,
    target: net.node(to).address,
    amount: 10n,
    paymentId: 1n,
    secret,
    secrethash: sha256(secret),
    ownSecret: true,
    routes: [route.map((n) => net.node(n).address)],
    freshSecrets: [],
    encryptedSecret,
  })
}

describe('the payment secret in the LockedTransfer metadata (docs/protocol.md §3.9)', () => {
  test('the initiator puts the encrypted secret in the metadata, and the target can read it', async () => {
    const net = new Network(['A', 'B'])
    net.secretInMetadata = () => true
    await net.open('A', 'B', 100n, 100n)
    await net.pay('A', 'B', 10n, 1n)
    const transfer = net.node('A').sent[0]!.message as LockedTransfer
    expect(transfer.type).toBe('LockedTransfer')
    expect(decryptSecret(jsSecp256k1, transfer.metadata.secret!, hexToBytes(net.node('B').key))).toEqual({
      secret: sha256(`0x${1n.toString(16).padStart(64, '0')}`),
      amount: 10n,
      paymentId: 1n,
    })
  })

  test('no ciphertext, no metadata.secret (the usual SecretRequest flow)', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 100n)
    await net.pay('A', 'B', 10n, 1n)
    expect((net.node('A').sent[0]!.message as LockedTransfer).metadata).not.toHaveProperty('secret')
    await net.deliverAll()
    expect(types(net, 'B')).toContain('SecretRequest')
  })

  test('direct: the target skips the SecretRequest, reveals to its payer at once; 5 signed messages settle it', async () => {
    const net = new Network(['A', 'B'])
    net.secretInMetadata = () => true
    await net.open('A', 'B', 100n, 100n)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverMessage('A', 'B', 'LockedTransfer')
    expect(types(net, 'B')).toEqual(['Processed', 'RevealSecret'])
    expect(Object.values(net.node('B').state.targets)).toMatchObject([{ state: 'secret_revealed' }])
    await net.deliverAll()
    expect(types(net, 'A')).toEqual(['LockedTransfer', 'Unlock'])
    expect(types(net, 'B')).toEqual(['Processed', 'RevealSecret', 'Processed'])
    expect(net.outcomes('A', 1n).map((e) => e.type)).toEqual(['paymentSentSuccess'])
    expect(net.node('B').events.some((e) => e.type === 'paymentReceivedSuccess')).toBe(true)
  })

  test('mediated: the target reveals to the mediator; nobody asks the initiator for the secret', async () => {
    const net = new Network(['A', 'B', 'C'])
    net.secretInMetadata = () => true
    await net.open('A', 'B', 100n, 100n)
    await net.open('B', 'C', 100n, 100n)
    await net.pay('A', 'C', 10n, 1n, [['B', 'C']])
    await net.deliverAll()
    const all: Message['type'][] = ['A', 'B', 'C'].flatMap((n) => types(net, n))
    expect(all).not.toContain('SecretRequest')
    expect(types(net, 'A')).toEqual(['LockedTransfer', 'Unlock'])
    expect(types(net, 'C')).toEqual(['Processed', 'RevealSecret', 'Processed'])
    expect(net.outcomes('A', 1n).map((e) => e.type)).toEqual(['paymentSentSuccess'])
    expect(net.node('C').events.some((e) => e.type === 'paymentReceivedSuccess')).toBe(true)
  })

  const fallbacks: [string, { secret?: Hex; amount?: bigint; paymentId?: bigint }, string?][] = [
    ['a secret that does not open the lock', { secret: sha256('0xbb') }],
    ['a promised amount above the lock', { amount: 11n }],
    ['another payment identifier', { paymentId: 2n }],
    ['a ciphertext for someone else', {}, 'A'],
  ]
  for (const [what, payload, encryptTo] of fallbacks) {
    test(`${what}: ignored, the target asks for the secret as usual and is paid`, async () => {
      const net = new Network(['A', 'B'])
      await net.open('A', 'B', 100n, 100n)
      await payWith(net, 'B', ['B'], payload, encryptTo)
      await net.deliverMessage('A', 'B', 'LockedTransfer')
      expect(types(net, 'B')).toEqual(['Processed', 'SecretRequest'])
      await net.deliverAll()
      expect(net.outcomes('A', 1n).map((e) => e.type)).toEqual(['paymentSentSuccess'])
    })
  }

  test('a lower promised amount is fine (the light client checks received >= promised)', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 100n)
    await payWith(net, 'B', ['B'], { amount: 9n })
    await net.deliverMessage('A', 'B', 'LockedTransfer')
    expect(types(net, 'B')).toEqual(['Processed', 'RevealSecret'])
  })

  test('in the danger zone the target neither uses the secret nor asks for it', async () => {
    const net = new Network(['A', 'B'])
    net.secretInMetadata = () => true
    await net.open('A', 'B', 100n, 100n, 100n, 10n)
    await net.pay('A', 'B', 10n, 1n, undefined, 12n) // lock expires 11 blocks on: within the reveal timeout (10) after 2 blocks
    await net.mine(2)
    await net.deliverMessage('A', 'B', 'LockedTransfer')
    expect(types(net, 'B')).toEqual(['Processed'])
  })
})
