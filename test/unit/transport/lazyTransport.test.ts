import type { Address } from 'viem'
import { afterEach, describe, expect, test } from 'vitest'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { TransportClosedError, TransportError } from '../../../src/transport/errors.ts'
import { type LazyTransportOptions, lazyTransport } from '../../../src/transport/lazyTransport.ts'
import type { Transport } from '../../../src/transport/transport.ts'
import { eventually, freshChannel } from './support.ts'

const A: Address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const B: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

const running: Transport[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()))
})

/** A lazy BroadcastChannel transport for A, and what became of its loads. */
function lazyA(channelName: string, { delay = 0, ...options }: { delay?: number } & LazyTransportOptions = {}) {
  const loads: Transport[] = []
  const lazy = lazyTransport(async () => {
    await new Promise((r) => setTimeout(r, delay))
    const transport = createBroadcastChannelTransport({ address: A, channelName })
    loads.push(transport)
    return transport
  }, options)
  running.push(lazy)
  return { lazy, loads }
}

async function plainB(channelName: string) {
  const transport = createBroadcastChannelTransport({ address: B, channelName })
  const inbox: { lines: string[]; from: Address }[] = []
  await transport.start((lines, from) => inbox.push({ lines, from }))
  running.push(transport)
  return { transport, inbox }
}

describe('lazyTransport', () => {
  test('loads its adapter on start, once, and then carries messages both ways', async () => {
    const name = freshChannel()
    const { lazy, loads } = lazyA(name)
    expect(loads).toHaveLength(0)
    const b = await plainB(name)
    const inbox: { lines: string[]; from: Address }[] = []
    await lazy.start((lines, from) => inbox.push({ lines, from }))
    expect(loads).toHaveLength(1)
    await lazy.send(B, ['to b'])
    await b.transport.send(A, ['to a'])
    await eventually(() => {
      expect(b.inbox).toEqual([{ lines: ['to b'], from: A }])
      expect(inbox).toEqual([{ lines: ['to a'], from: B }])
    })
    expect(loads).toHaveLength(1)
  })

  test('a peer listener registered before start hears the peers the adapter sees', async () => {
    const name = freshChannel()
    const { lazy } = lazyA(name)
    const peers: Address[] = []
    lazy.onPeerSeen!((peer) => peers.push(peer))
    await plainB(name)
    await lazy.start(() => {})
    await eventually(() => expect(peers).toEqual([B]))
  })

  test('a send while the adapter loads waits for it; a send before start is refused', async () => {
    const name = freshChannel()
    const { lazy } = lazyA(name, { delay: 50 })
    await expect(lazy.send(B, ['early'])).rejects.toBeInstanceOf(TransportClosedError)
    const b = await plainB(name)
    const starting = lazy.start(() => {})
    const sent = lazy.send(B, ['while loading'])
    await starting
    await sent
    await eventually(() => expect(b.inbox).toEqual([{ lines: ['while loading'], from: A }]))
  })

  test('stopped while it loads, the adapter is stopped once loaded; stopped before start, nothing is loaded', async () => {
    const name = freshChannel()
    const { lazy, loads } = lazyA(name, { delay: 50 })
    const starting = lazy.start(() => {}).catch((e: unknown) => e)
    await lazy.stop()
    await starting
    expect(loads).toHaveLength(1)
    await expect(loads[0]!.send(B, ['after stop'])).rejects.toBeInstanceOf(TransportClosedError)
    await expect(lazy.send(B, ['after stop'])).rejects.toBeInstanceOf(TransportClosedError)

    const never = lazyA(name)
    await never.lazy.stop()
    await expect(never.lazy.start(() => {})).rejects.toBeInstanceOf(TransportClosedError)
    expect(never.loads).toHaveLength(0)
  })

  test('in the background, start resolves before the adapter has loaded; sends meanwhile wait for it', async () => {
    const name = freshChannel()
    const { lazy, loads } = lazyA(name, { delay: 50, background: true })
    const b = await plainB(name)
    const inbox: { lines: string[]; from: Address }[] = []
    await lazy.start((lines, from) => inbox.push({ lines, from }))
    expect(loads).toHaveLength(0)
    await lazy.send(B, ['sent while it loaded'])
    expect(loads).toHaveLength(1)
    await b.transport.send(A, ['back'])
    await eventually(() => {
      expect(b.inbox).toEqual([{ lines: ['sent while it loaded'], from: A }])
      expect(inbox).toEqual([{ lines: ['back'], from: B }])
    })
  })

  test('in the background, a failed start goes to onError and every send fails with why', async () => {
    const errors: unknown[] = []
    const lazy = lazyTransport(
      async () => {
        throw new Error('no relay answered')
      },
      { background: true, onError: (e) => errors.push(e) },
    )
    running.push(lazy)
    await lazy.start(() => {})
    await eventually(() => expect(errors).toEqual([new Error('no relay answered')]))
    const failed = await lazy.send(B, ['x']).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(TransportError)
    expect((failed as Error).message).toBe('the transport did not start: no relay answered')
  })

  test('in the background, stopped while it loads: the adapter never starts and onError hears nothing', async () => {
    const name = freshChannel()
    const errors: unknown[] = []
    const { lazy, loads } = lazyA(name, { delay: 50, background: true, onError: (e) => errors.push(e) })
    await lazy.start(() => {})
    await lazy.stop()
    expect(loads).toHaveLength(1)
    await expect(loads[0]!.send(B, ['x'])).rejects.toBeInstanceOf(TransportClosedError)
    expect(errors).toEqual([])
  })

  test('in the background with loadWhen, the adapter loads once it resolves, not before', async () => {
    const name = freshChannel()
    let now!: () => void
    const when = new Promise<void>((resolve) => (now = resolve))
    const { lazy, loads } = lazyA(name, { background: true, loadWhen: () => when })
    const b = await plainB(name)
    await lazy.start(() => {})
    await new Promise((r) => setTimeout(r, 50))
    expect(loads).toHaveLength(0)
    now()
    await eventually(() => expect(loads).toHaveLength(1))
    await lazy.send(B, ['after loadWhen'])
    await eventually(() => expect(b.inbox).toEqual([{ lines: ['after loadWhen'], from: A }]))
  })

  test('in the background with loadWhen, a send loads the adapter at once and goes', async () => {
    const name = freshChannel()
    const { lazy, loads } = lazyA(name, { background: true, loadWhen: () => new Promise(() => {}) })
    const b = await plainB(name)
    await lazy.start(() => {})
    await lazy.send(B, ['needed now'])
    expect(loads).toHaveLength(1)
    await eventually(() => expect(b.inbox).toEqual([{ lines: ['needed now'], from: A }]))
  })

  test('in the background with loadWhen, a stop before it resolves ends at once: nothing loads, onError hears nothing', async () => {
    const name = freshChannel()
    const errors: unknown[] = []
    const { lazy, loads } = lazyA(name, { background: true, loadWhen: () => new Promise(() => {}), onError: (e) => errors.push(e) })
    await lazy.start(() => {})
    await lazy.stop()
    await new Promise((r) => setTimeout(r, 20))
    expect(loads).toHaveLength(0)
    expect(errors).toEqual([])
    await expect(lazy.send(B, ['x'])).rejects.toBeInstanceOf(TransportClosedError)
  })

  test("a peer's record handed on goes to the adapter once it started; before, it is not used, and says so", async () => {
    const asked: unknown[] = []
    const lazy = lazyTransport(async () => ({
      ...createBroadcastChannelTransport({ address: A, channelName: freshChannel() }),
      // An adapter that checks records (libp2p's): what it answers is what the lazy transport answers.
      peerRecord: async (peer: Address, record: unknown) => {
        asked.push([peer, record])
        return { ok: true as const, publicKey: '0x01' as const }
      },
    }))
    running.push(lazy)
    expect(await lazy.peerRecord!(B, { user_id: 'x' })).toEqual({ ok: false, reason: 'the transport has not started yet' })
    await lazy.start(() => undefined)
    expect(await lazy.peerRecord!(B, { user_id: 'x' }, { take: true })).toEqual({ ok: true, publicKey: '0x01' })
    expect(asked).toEqual([[B, { user_id: 'x' }]])
  })
})
