import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { vi } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import type { Message, Signed } from '../../../src/protocol/messages/types.ts'
import type { OutboxRecord } from '../../../src/storage/storage.ts'
import type { Backoff } from '../../../src/transport/backoff.ts'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { createDelivery, type Delivery, type DeliveryLogEvent } from '../../../src/transport/delivery.ts'
import { lineSigner } from '../../../src/transport/lineSigner.ts'
import type { Transport } from '../../../src/transport/transport.ts'
import { answerOf } from './messages.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

let channelCounter = 0
/** A channel name of its own for each test, so tests never hear each other. */
export const freshChannel = () => `sluice-test-${process.pid}-${++channelCounter}`

export type TestNode = {
  name: string
  key: Hex
  address: Address
  delivery: Delivery
  /** Peers the transport reported online. */
  peers: Address[]
  /** Every transport.send call, before any line is dropped. */
  sends: { to: Address; lines: string[] }[]
  /** What the runtime got: messages handed up, keys reported done. */
  received: { message: Signed<Message>; sender: Address }[]
  /** With `inOrder`: the nonces the fake state machine refused, in order. */
  refused: bigint[]
  acknowledged: string[]
  logs: DeliveryLogEvent[]
  /** The "durable outbox": records put by the runtime, deleted when acknowledged. */
  outbox: Map<string, OutboxRecord>
  /** Drops outgoing lines for which it returns true (a lossy medium). */
  drop: (line: string, to: Address) => boolean
  /** A send to `to` waits for what it returns before it reaches the medium (a stalled stream). */
  stall: (to: Address) => Promise<void> | undefined
  /** A send to `to` fails, as libp2p's to a peer out of reach does, while this returns true. */
  unreachable: (to: Address) => boolean
  /** Commits and enqueues records, as the runtime does. */
  put(records: OutboxRecord[]): void
}

export type TestNodeOptions = {
  channelName: string
  /** Answers balance proofs and withdraw messages like the state machine (Processed, WithdrawConfirmation). */
  answers?: boolean
  /** Refuses, as the state machine does, a message whose nonce is not the next of its channel: no answer. */
  inOrder?: boolean
  backoff?: Partial<Backoff>
  redeliverAfterMs?: number
  /** The delivery's clock (Date.now if absent): a test that times a window holds it still. */
  now?: () => number
  /** Outbox records from before a restart. */
  outbox?: OutboxRecord[]
  /** When to resend them (Delivery.resume): at once if absent. */
  resendWhen?: () => Promise<unknown>
  /** When the fake runtime has made a handed-up message durable (what onMessage returns); at once if absent. */
  applied?: (message: Signed<Message>) => Promise<unknown> | undefined
}

/** Wraps a transport to record sends and to lose lines on purpose. */
function observed(inner: Transport, node: Pick<TestNode, 'sends' | 'drop' | 'peers' | 'stall' | 'unreachable'>): Transport {
  return {
    start: (onMessages) => inner.start(onMessages),
    async send(to, lines) {
      await node.stall(to)
      node.sends.push({ to, lines })
      if (node.unreachable(to)) throw new Error(`${to} is out of reach`)
      const kept = lines.filter((line) => !node.drop(line, to))
      if (kept.length > 0) await inner.send(to, kept)
    },
    onPeerSeen: (listener) =>
      inner.onPeerSeen!((peer) => {
        node.peers.push(peer)
        listener(peer)
      }),
    stop: () => inner.stop(),
  }
}

/** A delivery instance on a real BroadcastChannel with a tiny fake runtime around it (anvil key `index`). */
export function testNode(index: number, options: TestNodeOptions): TestNode {
  const key = anvilKeys[index]!
  const address = privateKeyToAddress(key)
  const node = {
    name: `node${index}`,
    key,
    address,
    peers: [],
    sends: [],
    received: [],
    refused: [],
    acknowledged: [],
    logs: [],
    outbox: new Map((options.outbox ?? []).map((r) => [r.key, r])),
    drop: () => false,
    stall: () => undefined,
    unreachable: () => false,
  } as unknown as TestNode
  let nonce = 100n
  /** The last nonce taken per sender and channel (`inOrder`). */
  const taken = new Map<string, bigint>()
  /** Whether the fake state machine refuses this message (`inOrder`: not the next nonce of its channel). */
  const refuses = (message: Signed<Message>, sender: Address) => {
    if (!options.inOrder || !('nonce' in message) || !('channel_identifier' in message)) return false
    const channel = `${sender}|${message.channel_identifier}`
    if (message.nonce !== (taken.get(channel) ?? 0n) + 1n) return true
    taken.set(channel, message.nonce)
    return false
  }
  node.delivery = createDelivery({
    curve: jsSecp256k1,
    transport: observed(createBroadcastChannelTransport({ address, channelName: options.channelName }), node),
    address,
    sign: lineSigner(jsSecp256k1, key),
    backoff: { initialMs: options.backoff?.initialMs ?? 30, maxMs: options.backoff?.maxMs ?? Math.max(200, options.backoff?.initialMs ?? 0) },
    ...(options.redeliverAfterMs === undefined ? {} : { redeliverAfterMs: options.redeliverAfterMs }),
    ...(options.now ? { now: options.now } : {}),
    onMessage(message, sender) {
      node.received.push({ message, sender })
      if (refuses(message, sender)) {
        node.refused.push((message as { nonce: bigint }).nonce)
        return options.applied?.(message)
      }
      const answer = options.answers ? answerOf(message, sender, ++nonce) : undefined
      if (answer) node.put([answer])
      return options.applied?.(message)
    },
    onAcknowledged(keys) {
      node.acknowledged.push(...keys)
      for (const k of keys) node.outbox.delete(k)
    },
    log: (event) => node.logs.push(event),
  })
  node.put = (records) => {
    for (const r of records) node.outbox.set(r.key, r)
    node.delivery.enqueue(records)
  }
  node.delivery.resume([...node.outbox.values()], options.resendWhen)
  return node
}

/** Lines of one message type among a node's sends (optionally to one peer). */
export function sentLines(node: TestNode, type: string, to?: Address): Record<string, unknown>[] {
  return node.sends
    .filter((s) => to === undefined || s.to.toLowerCase() === to.toLowerCase())
    .flatMap((s) => s.lines.map((l) => JSON.parse(l) as Record<string, unknown>))
    .filter((m) => m.type === type)
}

/** Waits until every node has seen every other one online, so presence resends are over before a test acts. */
/** vi.waitFor with room for a loaded 2-core machine (signing in pure JS is slow there). */
export const eventually = <T>(check: () => T) => vi.waitFor(check, { timeout: 5_000, interval: 10 })

export async function settle(...nodes: TestNode[]): Promise<void> {
  await eventually(() => {
    for (const n of nodes) for (const m of nodes) if (n !== m && !n.peers.includes(m.address)) throw new Error(`${n.name} has not seen ${m.name}`)
  })
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Posts raw lines on a channel as if from `from` (which the channel does not authenticate). */
export function postRaw(channelName: string, to: Address, from: Address, lines: string[]): void {
  const channel = new BroadcastChannel(channelName)
  channel.postMessage({ kind: 'lines', to, from, lines })
  channel.close()
}
