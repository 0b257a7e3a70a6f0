import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { vi } from 'vitest'
import type { Message, Signed } from '../../../../src/protocol/messages/types.ts'
import { createDelivery, type Delivery, type DeliveryLogEvent } from '../../../../src/transport/delivery.ts'
import { createLibp2pTransport, type Libp2pTransport, type Libp2pTransportParameters } from '../../../../src/transport/libp2p/libp2pTransport.ts'
import { lineSigner } from '../../../../src/transport/lineSigner.ts'
import { logMessages, relayListening, startSluice, type SluiceProcess } from '../../../cli/sluiceProcess.ts'
import { record, secretRequest } from '../messages.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

/** A node's messaging as the runtime has it: delivery over a libp2p transport, with a tiny runtime that records. */
export type HonestPeer = {
  key: Hex
  address: Address
  transport: Libp2pTransport
  delivery: Delivery
  received: { message: Signed<Message>; sender: Address }[]
  logs: DeliveryLogEvent[]
  /** Peers the transport reported online. */
  seen: Set<Address>
  /** Sends `to` one message (a SecretRequest) and resolves with the milliseconds until its Delivered came back. */
  roundTrip(to: Address): Promise<number>
  stop(): Promise<void>
}

let nextId = 1_000_000n

export async function honestPeer(key: Hex, relays: readonly string[], more: Partial<Libp2pTransportParameters> = {}): Promise<HonestPeer> {
  const address = privateKeyToAddress(key)
  const transport = createLibp2pTransport({ privateKey: key, relays, ...more })
  const waiting = new Map<string, () => void>()
  const peer: HonestPeer = {
    key,
    address,
    transport,
    received: [],
    logs: [],
    seen: new Set(),
    delivery: createDelivery({
      curve: jsSecp256k1,
      transport,
      address,
      sign: lineSigner(jsSecp256k1, key),
      backoff: { initialMs: 2_000, maxMs: 5_000 },
      onMessage: (message, sender) => {
        peer.received.push({ message, sender })
        return undefined
      },
      onAcknowledged: (keys) => {
        for (const k of keys) waiting.get(k)?.()
      },
      log: (event) => peer.logs.push(event),
    }),
    async roundTrip(to) {
      const sent = record(to, secretRequest(nextId++))
      const t0 = performance.now()
      const acknowledged = new Promise<void>((resolve) => waiting.set(sent.key, resolve))
      peer.delivery.enqueue([sent])
      await acknowledged
      waiting.delete(sent.key)
      return performance.now() - t0
    },
    stop: () => peer.delivery.stop(),
  }
  transport.onPeerSeen!((p) => peer.seen.add(p))
  await peer.delivery.start()
  return peer
}

/** Each of `peers` asks for every other, as a node does for its partners (presence by watch), and waits until it has seen them. */
export async function meet(...peers: HonestPeer[]): Promise<void> {
  for (const p of peers) for (const q of peers) if (p !== q) p.transport.connect!(q.address)
  await vi.waitFor(
    () => {
      for (const p of peers) for (const q of peers) if (p !== q && !p.seen.has(q.address)) throw new Error(`${p.address} has not seen ${q.address}`)
    },
    { timeout: 15_000, interval: 20 },
  )
}

/** The q-quantile of `values` (sorted in place). */
export function quantile(values: number[], q: number): number {
  values.sort((x, y) => x - y)
  return values[Math.min(values.length - 1, Math.floor(q * values.length))]!
}

/** `n` round trips from `from` to `to`, one after the other; their milliseconds. */
export async function roundTrips(from: HonestPeer, to: HonestPeer, n: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < n; i++) times.push(await from.roundTrip(to.address))
  return times
}

const flooderScript = new URL('./flooder.ts', import.meta.url).pathname
const repository = new URL('../../../../', import.meta.url).pathname

export type Flooder = { process: SluiceProcess; sent(): { bytes: number; frames: number; resets: number }; stop(): Promise<void> }

const killed = async (process: SluiceProcess) => {
  process.child.kill('SIGKILL')
  await process.exited
}

/** flooder.ts in a process of its own, started with `task`, once it says it is ready. */
function startRogue(task: object): Promise<SluiceProcess> {
  // From the repository, where `--import tsx` is found.
  const process = startSluice([JSON.stringify(task)], repository, ['--import', 'tsx', flooderScript])
  return process.waitForOutput(/\{"ready":true[^\n]*\}/, 60_000).then(
    () => process,
    async (error: unknown) => {
      await killed(process)
      throw error
    },
  )
}

/** The last line of `process` that starts with `{"<field>"`, parsed. */
function lastReport<T>(process: SluiceProcess, field: string, none: T): T {
  const last = process
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith(`{"${field}"`))
    .at(-1)
  return last ? (JSON.parse(last) as T) : none
}

/** A flooder (flooder.ts) in a process of its own, once its stream to `target` is open. */
export async function startFlooder(task: { key: Hex; relay: string; target: string; lines: 'signed' | 'junk'; perFrame: number }): Promise<Flooder> {
  const process = await startRogue(task)
  return { process, sent: () => lastReport(process, 'bytes', { bytes: 0, frames: 0, resets: 0 }), stop: () => killed(process) }
}

/** A node in a process of its own that holds a reservation on `relay` and reads and drops whatever is sent to it. */
export async function startSink(key: Hex, relay: string): Promise<{ peerId: string; received(): number; stop(): Promise<void> }> {
  const process = await startRogue({ sink: true, key, relay })
  const { peerId } = lastReport(process, 'ready', { peerId: '' })
  return { peerId, received: () => lastReport(process, 'received', { received: 0 }).received, stop: () => killed(process) }
}

/** `sluice relay` in a process of its own, with `args`; its multiaddrs once it is ready. */
export async function startRelayProcess(
  args: readonly string[] = [],
): Promise<{ process: SluiceProcess; multiaddrs: string[]; logs(): string[]; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-relay-limits-'))
  const process = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws', ...args], dir)
  await process.waitForOutput(/Press Ctrl-C to stop/).catch(async (error: unknown) => {
    await killed(process)
    throw error
  })
  return {
    process,
    multiaddrs: relayListening(process.stdout())!.multiaddrs,
    logs: () => logMessages(process.stdout()),
    async stop() {
      if (process.child.exitCode === null) process.child.kill('SIGTERM')
      await process.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
