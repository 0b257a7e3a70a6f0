import '../../src/transport/libp2p/nodePolyfills.ts'
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { createBroadcastChannelTransport } from '../../src/transport/broadcastChannelTransport.ts'
import type { Transport } from '../../src/transport/transport.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

/**
 * What made the page's first payment to a new partner slow (issue 19), each kept from coming back: the first
 * LockedTransfer waited for a circuit through the relay to be dialled, and it went without the payment's secret (the
 * target's key was unknown until a message of it came), so the target asked for it, one more round trip over the
 * relay. Two nodes over libp2p and a real relay: the partner's way is opened while the channel's transaction is
 * mined, its key comes from its authenticated presence (asked of the relay then), and the first payment needs
 * neither a dial nor a SecretRequest.
 */

const [keyA, keyB, keyC, keyD] = [anvilKeys[7], anvilKeys[8], anvilKeys[9], anvilKeys[6]] as [Hex, Hex, Hex, Hex]
let net: Devnet
let relay: Relay
const nodes: SluiceNode[] = []

/** The node's libp2p transport, and every message type it sent. */
type Wire = { transport?: Libp2pTransport; sent: string[] }

function libp2p(wire: Wire) {
  return ({ key }: { key: Hex }): Transport => {
    const transport = createLibp2pTransport({ privateKey: key, relays: relay.multiaddrs })
    wire.transport = transport
    return {
      ...transport,
      send: (to: Address, lines: string[]) => {
        for (const line of lines) wire.sent.push((JSON.parse(line) as { type: string }).type)
        return transport.send(to, lines)
      },
    }
  }
}

beforeAll(async () => {
  ;[net, relay] = await Promise.all([startDevnet([keyA, keyC]), startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })])
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await relay?.stop()
  await net?.stop()
})

describe('the first payment to a new partner, over libp2p and a relay', () => {
  test('goes over a way opened ahead, with its secret encrypted to a key the transport authenticated: no dial, no SecretRequest', async () => {
    const wireA: Wire = { sent: [] }
    const wireB: Wire = { sent: [] }
    const a = await startNode(net, keyA, { transport: libp2p(wireA) })
    const b = await startNode(net, keyB, { transport: libp2p(wireB) })
    nodes.push(a, b)

    // Opening the channel opens the way to B (A asks the relay for B's presence as it asks for the channel): a
    // stream, and not a line sent.
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 100n })
    await eventually(() => expect(wireA.transport!.stats().streamsOpened).toBe(1))
    // (A's announcements of the new channel to its partner go as they will, decision 0074: not a protocol message.)
    const protocolLines = (wire: Wire) => wire.sent.filter((type) => type !== 'PFSCapacityUpdate' && type !== 'PFSFeeUpdate')
    expect(protocolLines(wireA)).toEqual([])
    // B is known to A from its presence only: no message of B has reached A, yet A has B's key, the one a
    // signature of B recovers.
    expect(a.client.publicKeyOf(b.address)).toBe(`0x${privateKeyToAccount(keyB).publicKey.slice(4)}`)
    expect(a.state.publicKeys?.[b.address.toLowerCase()]).toBeUndefined()
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))

    const paid = await sendPayment(a.client, { token: net.token, target: b.address, amount: 7n })
    expect(paid).toMatchObject({ amount: 7n })
    // B had the secret from the LockedTransfer: it revealed it at once, and never asked for it.
    await eventually(() => expect(wireB.sent).toContain('RevealSecret'))
    expect(wireB.sent).not.toContain('SecretRequest')
    // No dial in the payment's path: it went over the stream opened with the channel.
    expect(wireA.transport!.stats().streamsOpened).toBe(1)
  })

  test("a payment made before the partner's node saw the channel is taken once it sees it, with no resend", async () => {
    // C resends nothing for a minute; D reads the chain at its start and then not for a minute, unless asked.
    const typesOf = (lines: string[]) => lines.map((line) => (JSON.parse(line) as { type: string }).type)
    const sentByC: string[] = []
    const receivedByD: string[] = []
    const c = await startNode(net, keyC, {
      backoff: { initialMs: 60_000, maxMs: 60_000 },
      transport: ({ address }) => {
        const t = createBroadcastChannelTransport({ address, channelName: net.channelName })
        return {
          ...t,
          send: (to, lines) => {
            sentByC.push(...typesOf(lines))
            return t.send(to, lines)
          },
        }
      },
    })
    const d = await startNode(net, keyD, {
      pollingInterval: 60_000,
      transport: ({ address }) => {
        const t = createBroadcastChannelTransport({ address, channelName: net.channelName })
        return {
          ...t,
          start: (onMessages) =>
            t.start((lines, from) => {
              receivedByD.push(...typesOf(lines))
              onMessages(lines, from)
            }),
        }
      },
    })
    nodes.push(c, d)
    await openChannelOnChain(c.client, { tokenNetwork: net.tokenNetwork, partner: d.address, totalDeposit: 100n })

    const paying = sendPayment(c.client, { token: net.token, target: d.address, amount: 5n })
    await eventually(() => expect(receivedByD).toContain('LockedTransfer'))
    // D has not seen the channel: the core refused the transfer, and C will not send it again.
    expect(d.client.channel(net.tokenNetwork, c.address)).toBeUndefined()
    await d.client.waitForBlock(c.state.blockNumber)
    expect(await paying).toMatchObject({ amount: 5n })
    expect(sentByC.filter((t) => t === 'LockedTransfer')).toEqual(['LockedTransfer'])
  })
})
