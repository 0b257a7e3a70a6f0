import { getAddress, isAddress, type Address } from 'viem'
import { TransportClosedError, TransportError } from './errors.ts'
import type { Transport } from './transport.ts'

export type BroadcastChannelTransportParameters = {
  /** This node's address: only envelopes addressed to it are taken. */
  address: Address
  /** The channel every node of the group opens (one per chain and registry, say). */
  channelName: string
}

/**
 * What travels on the channel. `hello` is sent on start and answered by `here` (addressed to the newcomer), so
 * both sides learn that the other is online without polling.
 */
type Envelope = { kind: 'lines'; to: string; from: Address; lines: string[] } | { kind: 'hello'; from: Address } | { kind: 'here'; to: string; from: Address }

/** The envelope if `data` has its shape, else undefined: any script of the origin can post on the channel. */
function readEnvelope(data: unknown): Envelope | undefined {
  if (!data || typeof data !== 'object') return undefined
  const e = data as Record<string, unknown>
  if (typeof e.from !== 'string' || !isAddress(e.from, { strict: false })) return undefined
  const from = getAddress(e.from)
  switch (e.kind) {
    case 'hello':
      return { kind: 'hello', from }
    case 'here':
      return typeof e.to === 'string' ? { kind: 'here', to: e.to, from } : undefined
    case 'lines':
      if (typeof e.to !== 'string' || !Array.isArray(e.lines) || !e.lines.every((l) => typeof l === 'string')) return undefined
      return { kind: 'lines', to: e.to, from, lines: e.lines as string[] }
    default:
      return undefined
  }
}

/**
 * Carries wire lines between nodes of one browser origin (workers, tabs) or of one Node process, over one named
 * BroadcastChannel: every node sees every envelope and keeps those addressed to it.
 *
 * The `from` of an envelope is NOT authenticated: any script of the origin can claim any address. That is fine
 * because the delivery layer trusts only the signer it recovers from each message, never this claim; here
 * `from` only says where presence came from.
 */
export function createBroadcastChannelTransport({ address, channelName }: BroadcastChannelTransportParameters): Transport {
  const me = address.toLowerCase()
  const peerListeners: ((peer: Address) => void)[] = []
  /** Peers reported since start: a `here` repeats what a `hello` may already have said (both start at once). */
  const reported = new Set<string>()
  let channel: BroadcastChannel | undefined

  const post = (envelope: Envelope) => channel?.postMessage(envelope)
  const seen = (peer: Address) => {
    reported.add(peer.toLowerCase())
    for (const listener of peerListeners) listener(peer)
  }

  return {
    async start(onMessages) {
      if (channel) throw new TransportError('transport already started')
      const opened = new BroadcastChannel(channelName)
      channel = opened
      opened.onmessage = (event: MessageEvent) => {
        const envelope = readEnvelope(event.data)
        if (!envelope || envelope.from.toLowerCase() === me) return
        switch (envelope.kind) {
          case 'hello':
            // Always reported: a peer that restarts says hello again, and what waits for it must go now.
            post({ kind: 'here', to: envelope.from, from: address })
            seen(envelope.from)
            return
          case 'here':
            if (envelope.to.toLowerCase() === me && !reported.has(envelope.from.toLowerCase())) seen(envelope.from)
            return
          case 'lines':
            if (envelope.to.toLowerCase() === me && envelope.lines.length > 0) onMessages(envelope.lines, envelope.from)
        }
      }
      post({ kind: 'hello', from: address })
    },

    async send(to, lines) {
      if (!channel) throw new TransportClosedError('send')
      post({ kind: 'lines', to, from: address, lines })
    },

    onPeerSeen(listener) {
      peerListeners.push(listener)
    },

    async stop() {
      channel?.close()
      channel = undefined
      reported.clear()
    },
  }
}
