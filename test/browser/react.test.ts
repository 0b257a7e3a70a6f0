// sluice/react in a real Chromium with React 19: the provider starts one node under StrictMode and stops it on
// unmount; the hooks show what a headless peer does to the page's node (opens a channel, pays it), refetching only
// when a push event says so (no polling).
import { createElement, StrictMode, useEffect, type ReactNode } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import { topicsOf, useChannels, useNodeEvents, useNodeStatus, usePayments, usePendingTransfers, useSluice, SluiceProvider } from '../../worker/react.ts'
import type { Peer } from './commands/peers.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken } from './support/token.ts'
import { eventually } from '../integration/support/eventually.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')

const key = generatePrivateKey()
const address = privateKeyToAddress(key)
let relay: string
let peer: Peer
let token: Address
const roots: Root[] = []
const containers: HTMLElement[] = []

beforeAll(async () => {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  const [world, deployed] = await Promise.all([commands.startPeers(rpc, deployment, 1), deployTestToken(rpc, deployment, key, 0n)])
  relay = world.relay
  peer = world.peers[0]!
  token = deployed.token
  expect((await commands.peerRequest(peer.api, 'POST', `/_testing/tokens/${token}/mint`, { to: peer.address, value: '500' })).status).toBe(200)
}, 120_000)

afterEach(() => {
  for (const root of roots.splice(0)) root.unmount()
  for (const container of containers.splice(0)) container.remove()
})

afterAll(async () => {
  await commands.stopPeers()
})

function render(element: ReactNode): Root {
  const container = document.createElement('div')
  document.body.append(container)
  containers.push(container)
  const root = createRoot(container)
  root.render(createElement(StrictMode, null, element))
  roots.push(root)
  return root
}

/** What a user sees: each hook's answer as text in its own element. */
function View(): ReactNode {
  const { status } = useSluice()
  const nodeStatus = useNodeStatus()
  const channels = useChannels(token)
  const payments = usePayments({ token })
  const pending = usePendingTransfers(token)
  const show = (id: string, text: string) => createElement('p', { id }, text)
  return createElement(
    'div',
    null,
    show('provider', status),
    show('status', nodeStatus.data?.status ?? (nodeStatus.loading ? 'loading' : 'none')),
    show('channels', channels.data ? channels.data.map((c) => `${c.partner_address} ${c.state} ${c.balance}`).join('; ') || 'no channel' : 'loading'),
    show('payments', payments.data ? payments.data.map((p) => `${p.event} ${p.amount}`).join('; ') || 'no payment' : 'loading'),
    show('pending', pending.data ? String(pending.data.length) : 'loading'),
  )
}

const text = (id: string) => document.getElementById(id)?.textContent ?? ''

describe('sluice/react', () => {
  test('events name what they may change', () => {
    expect(topicsOf('channel_opened')).toEqual(['channels', 'pending'])
    expect(topicsOf('payment_received_success')).toEqual(['payments', 'channels', 'pending'])
    expect(topicsOf('events_missed')).toEqual(['status', 'channels', 'payments', 'pending'])
    expect(topicsOf('message_rejected')).toEqual([])
  })

  test("a peer's channel and payment show in the hooks from push events, without polling; a given node is not stopped", async () => {
    const node = await startNode(nodeOptions({ key, relay: [relay] }))
    try {
      // The node as the page got it, with its reads counted: the count grows only when an event asks.
      const calls = { status: 0, channels: 0, payments: 0, pendingTransfers: 0 }
      const counted: SluiceBrowserNode = {
        ...node,
        status: () => {
          calls.status++
          return node.status()
        },
        channels: (t) => {
          calls.channels++
          return node.channels(t)
        },
        payments: (f) => {
          calls.payments++
          return node.payments(f)
        },
        pendingTransfers: (t, p) => {
          calls.pendingTransfers++
          return node.pendingTransfers(t, p)
        },
      }
      const events: string[] = []
      function Events(): ReactNode {
        useNodeEvents((e) => events.push(e.event), ['channel_opened', 'payment_received_success'])
        return null
      }
      render(createElement(SluiceProvider, { node: counted }, createElement(View), createElement(Events)))

      await expect.poll(() => text('provider')).toBe('ready')
      await expect.poll(() => text('status')).toBe('ready')
      await expect.poll(() => text('channels')).toBe('no channel')
      await expect.poll(() => text('payments')).toBe('no payment')
      await expect.poll(() => text('pending')).toBe('0')
      // The stream's first event (status) refetches what was read before it opened; then nothing moves.
      await new Promise((resolve) => setTimeout(resolve, 300))
      const settled = { ...calls }
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      expect(calls).toEqual(settled)
      // The status comes from its event: GET /status is read at most by the first render.
      expect(calls.status).toBeLessThanOrEqual(1)

      // The peer opens a channel to the page's node: nothing on the page asks, the channel shows.
      await eventually(async () => {
        const opened = await commands.peerRequest(peer.api, 'PUT', '/channels', { token_address: token, partner_address: address, total_deposit: '200' })
        expect(opened.status, JSON.stringify(opened.body)).toBe(201)
      }, 20_000)
      await expect.poll(() => text('channels'), { timeout: 20_000 }).toBe(`${peer.address} opened 0`)
      expect(events).toContain('channel_opened')
      expect(calls.channels).toBeGreaterThan(settled.channels)
      // A channel event does not touch the payments' answer.
      expect(calls.payments).toBe(settled.payments)

      // The peer pays the page: the payment and the new balance show.
      const beforePayment = { ...calls }
      await eventually(async () => {
        const paid = await commands.peerRequest(peer.api, 'POST', `/payments/${token}/${address}`, { amount: '7', identifier: '1' })
        expect(paid.status, JSON.stringify(paid.body)).toBe(200)
      }, 30_000)
      await expect.poll(() => text('payments'), { timeout: 20_000 }).toBe('EventPaymentReceivedSuccess 7')
      await expect.poll(() => text('channels'), { timeout: 20_000 }).toBe(`${peer.address} opened 7`)
      expect(events).toContain('payment_received_success')
      expect(calls.payments).toBeGreaterThan(beforePayment.payments)
    } finally {
      for (const root of roots.splice(0)) root.unmount()
      await Promise.resolve()
      // The page gave the node: unmounting leaves it running.
      expect((await node.address()).our_address).toBe(address)
      await node.stop()
    }
  }, 120_000)

  test('under StrictMode the provider starts one node from options, and stops it when unmounted', async () => {
    const made: Worker[] = []
    const Original = globalThis.Worker
    globalThis.Worker = class extends Original {
      constructor(url: string | URL, options?: WorkerOptions) {
        super(url, options)
        made.push(this)
      }
    }
    try {
      // Proof that StrictMode rehearses here (React's development build): a plain effect runs twice.
      let effects = 0
      function Probe(): ReactNode {
        useEffect(() => {
          effects++
        }, [])
        return null
      }
      const root = render(createElement(SluiceProvider, { options: nodeOptions({ key }) }, createElement(View), createElement(Probe)))
      await expect.poll(() => text('provider'), { timeout: 60_000 }).toBe('ready')
      expect(effects).toBe(2)
      await expect.poll(() => text('status')).toBe('ready')
      expect(made).toHaveLength(1)
      expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: address })

      root.unmount()
      roots.splice(roots.indexOf(root), 1)
      await expect.poll(async () => (await fetch('/api/v1/address')).status, { timeout: 20_000 }).toBe(503)
      expect(made).toHaveLength(1)
    } finally {
      globalThis.Worker = Original
    }
  }, 90_000)

  test('outside a provider the hooks say so', async () => {
    let caught: unknown
    function Bare(): ReactNode {
      try {
        useChannels()
      } catch (e) {
        caught = e
      }
      return null
    }
    render(createElement(Bare))
    await expect.poll(() => (caught as Error | undefined)?.message).toMatch(/inside a <SluiceProvider>/)
  })
})
