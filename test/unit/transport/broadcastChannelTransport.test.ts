import type { Address } from 'viem'
import { afterEach, describe, expect, test } from 'vitest'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { TransportClosedError } from '../../../src/transport/errors.ts'
import type { Transport } from '../../../src/transport/transport.ts'
import { eventually, freshChannel, sleep } from './support.ts'

const A: Address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const B: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const C: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'

const running: Transport[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()))
})

async function started(address: Address, channelName: string) {
  const transport = createBroadcastChannelTransport({ address, channelName })
  const inbox: { lines: string[]; from: Address }[] = []
  const peers: Address[] = []
  transport.onPeerSeen!((peer) => peers.push(peer))
  await transport.start((lines, from) => inbox.push({ lines, from }))
  running.push(transport)
  return { transport, inbox, peers }
}

describe('BroadcastChannel transport', () => {
  test('delivers each envelope only to the node it is addressed to, whatever the case of the address', async () => {
    const name = freshChannel()
    const a = await started(A, name)
    const b = await started(B, name)
    const c = await started(C, name)
    await a.transport.send(B.toLowerCase() as Address, ['one', 'two'])
    await eventually(() => expect(b.inbox).toEqual([{ lines: ['one', 'two'], from: A }]))
    await sleep(20)
    expect(c.inbox).toEqual([])
    expect(a.inbox).toEqual([])
  })

  test('reports a peer that comes online, on both sides', async () => {
    const name = freshChannel()
    const a = await started(A, name)
    const b = await started(B, name)
    await eventually(() => {
      expect(a.peers).toEqual([B])
      expect(b.peers).toEqual([A])
    })
    // A third node's answer to its own announcement reaches only the newcomer.
    const c = await started(C, name)
    await eventually(() => expect([...c.peers].sort()).toEqual([A, B].sort()))
    await sleep(20)
    expect(a.peers).toEqual([B, C])
    expect(b.peers).toEqual([A, C])
  })

  test('reports a peer once when both start at the same moment', async () => {
    const name = freshChannel()
    const [a, b] = await Promise.all([started(A, name), started(B, name)])
    await eventually(() => {
      expect(a.peers).toEqual([B])
      expect(b.peers).toEqual([A])
    })
    await sleep(30)
    expect(a.peers).toEqual([B])
    expect(b.peers).toEqual([A])
  })

  test('ignores envelopes of the wrong shape', async () => {
    const name = freshChannel()
    const b = await started(B, name)
    const raw = new BroadcastChannel(name)
    for (const junk of [
      null,
      'text',
      { kind: 'lines', to: B, from: 'nobody', lines: ['x'] },
      { kind: 'lines', to: B, from: A, lines: [1] },
      { kind: 'lines', from: A, lines: ['x'] },
      { kind: 'other', from: A },
    ])
      raw.postMessage(junk)
    raw.postMessage({ kind: 'lines', to: B, from: A, lines: ['ok'] })
    raw.close()
    await eventually(() => expect(b.inbox).toEqual([{ lines: ['ok'], from: A }]))
  })

  test('stop closes the channel: nothing more arrives, and sending throws a typed error', async () => {
    const name = freshChannel()
    const a = await started(A, name)
    const b = await started(B, name)
    await b.transport.stop()
    await a.transport.send(B, ['late'])
    await sleep(30)
    expect(b.inbox).toEqual([])
    await expect(b.transport.send(A, ['x'])).rejects.toBeInstanceOf(TransportClosedError)
    await expect(b.transport.send(A, ['x'])).rejects.toMatchObject({ name: 'TransportClosedError' })
  })
})
