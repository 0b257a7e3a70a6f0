/**
 * The page's end of the WebRTC bridge (docs/decisions/0065): real RTCPeerConnections, made and driven for the node's
 * worker, which has none (remoteRtc.ts is its end). The page that leads starts one per node worker and hands the
 * worker the other end of a MessageChannel; the worker's libp2p then makes its WebRTC connections here. When this
 * page goes, so does the worker (it is the page's own): nothing is left behind, and the tab that takes over starts a
 * bridge of its own.
 */
import type { ChannelFacts, ToPage, ToWorker } from './webrtcBridgeMessages.ts'

/** A WebRTC connection the page holds for the node, as `node.webrtc.connections()` tells it. */
export type WebRtcConnectionInfo = {
  /** The connection's state (RTCPeerConnection.connectionState). */
  state: RTCPeerConnectionState
  /** Its data channels open now (one per libp2p stream). */
  channels: number
  /** Bytes the node sent and received over it, through the bridge. */
  bytesSent: number
  bytesReceived: number
}

export type WebRtcBridge = {
  /** The worker's end, to transfer to it. */
  readonly port: MessagePort
  connections(): WebRtcConnectionInfo[]
  /** Closes every connection and makes no new one: the node's messages go through its relays from then on. */
  close(): void
  /** Ends the bridge with the worker it served: its connections closed, its port closed. */
  dispose(): void
}

/**
 * A browser lets a page hold a few hundred peer connections, and each costs memory and a thread's time: more than
 * this many at once (peers dialling in, say) are refused, and those peers reach the node through the relay.
 */
const MAX_PEER_CONNECTIONS = 64

type Held = { pc: RTCPeerConnection; channels: Set<string>; sent: number; received: number }
type Channel = { dc: RTCDataChannel; pc: string; seq: number; reporting: boolean }

/** Whether this page can hold WebRTC connections for its node's worker. */
export function pageHasWebRtc(): boolean {
  return typeof globalThis.RTCPeerConnection === 'function' && typeof MessageChannel === 'function'
}

export function startWebRtcBridge({ maxPeerConnections = MAX_PEER_CONNECTIONS } = {}): WebRtcBridge {
  const { port1: port, port2: workerPort } = new MessageChannel()
  const connections = new Map<string, Held>()
  const channels = new Map<string, Channel>()
  let refusing: string | undefined
  let nextChannel = 0
  const post = (message: ToWorker, transfer: Transferable[] = []) => port.postMessage(message, transfer)

  const tellState = (handle: string, pc: RTCPeerConnection) =>
    post({ ev: 'state', pc: handle, connectionState: pc.connectionState, iceConnectionState: pc.iceConnectionState, signalingState: pc.signalingState })

  const facts = (dc: RTCDataChannel): ChannelFacts => ({
    label: dc.label,
    protocol: dc.protocol,
    id: dc.id,
    readyState: dc.readyState,
    ordered: dc.ordered,
    negotiated: dc.negotiated,
  })

  /** Tells the worker what the channel does, until it closes. */
  const wire = (handle: string, pcHandle: string, dc: RTCDataChannel) => {
    dc.binaryType = 'arraybuffer'
    dc.bufferedAmountLowThreshold = 0
    const held = connections.get(pcHandle)
    held?.channels.add(handle)
    const entry: Channel = { dc, pc: pcHandle, seq: 0, reporting: false }
    channels.set(handle, entry)
    dc.onopen = () => post({ ev: 'open', ch: handle, id: dc.id })
    dc.onmessage = ({ data }: MessageEvent<ArrayBuffer | string>) => {
      if (held) held.received += typeof data === 'string' ? data.length : data.byteLength
      // The event's buffer is this page's alone: handed over, not copied.
      post({ ev: 'message', ch: handle, data }, typeof data === 'string' ? [] : [data])
    }
    dc.onclosing = () => post({ ev: 'closing', ch: handle })
    dc.onclose = () => {
      channels.delete(handle)
      held?.channels.delete(handle)
      post({ ev: 'closed', ch: handle })
    }
    dc.onerror = (event) => post({ ev: 'error', ch: handle, message: (event as RTCErrorEvent).error?.message ?? 'data channel error' })
    dc.onbufferedamountlow = () => report(handle)
  }

  /** What the channel still holds, once per burst of sends (the worker's bufferedAmount and its low event). */
  const report = (handle: string) => {
    const entry = channels.get(handle)
    if (!entry || entry.reporting) return
    entry.reporting = true
    queueMicrotask(() => {
      entry.reporting = false
      post({ ev: 'buffered', ch: handle, amount: entry.dc.bufferedAmount, seq: entry.seq })
    })
  }

  const create = (handle: string, config: RTCConfiguration) => {
    if (refusing || connections.size >= maxPeerConnections) {
      post({ ev: 'refused', pc: handle, message: refusing ?? `this page holds ${maxPeerConnections} WebRTC connections already` })
      return
    }
    let pc: RTCPeerConnection
    try {
      pc = new RTCPeerConnection(config)
    } catch (error) {
      post({ ev: 'refused', pc: handle, message: `the browser would not make an RTCPeerConnection: ${(error as Error).message}` })
      return
    }
    const held: Held = { pc, channels: new Set(), sent: 0, received: 0 }
    connections.set(handle, held)
    pc.onicecandidate = ({ candidate }) => post({ ev: 'icecandidate', pc: handle, candidate: candidate ? candidate.toJSON() : null })
    pc.onicecandidateerror = (event) => {
      const { errorText, errorCode, url } = event as RTCPeerConnectionIceErrorEvent
      post({ ev: 'icecandidateerror', pc: handle, errorText, errorCode, url })
    }
    pc.onconnectionstatechange = () => {
      tellState(handle, pc)
      if (pc.connectionState === 'connected') watchTransports(handle, pc)
    }
    pc.oniceconnectionstatechange = () => tellState(handle, pc)
    pc.onsignalingstatechange = () => tellState(handle, pc)
    pc.ondatachannel = ({ channel }) => {
      const ch = `p${++nextChannel}`
      wire(ch, handle, channel)
      post({ ev: 'datachannel', pc: handle, ch, facts: facts(channel) })
      // Open already as it arrives, or soon: the worker hears `open` either way.
      if (channel.readyState === 'open') post({ ev: 'open', ch, id: channel.id })
    }
  }

  /**
   * The remote peer closed its end (its page turned WebRTC off or went): its DTLS close or SCTP abort arrives at
   * once, where the connection's own state would say so only once ICE's consent runs out, many seconds later, and
   * every stream opened on it meanwhile would wait in vain. So the connection closes as soon as its transports do.
   */
  const watchTransports = (handle: string, pc: RTCPeerConnection) => {
    const sctp = pc.sctp
    if (!sctp) return
    const check = () => {
      if (sctp.state === 'closed' || sctp.transport.state === 'closed' || sctp.transport.state === 'failed') closeConnection(handle, true)
    }
    sctp.addEventListener('statechange', check)
    sctp.transport.addEventListener('statechange', check)
  }

  const closeConnection = (handle: string, tell: boolean) => {
    const held = connections.get(handle)
    if (!held) return
    connections.delete(handle)
    held.pc.close()
    for (const ch of held.channels) channels.delete(ch)
    // A page's own close() fires no event: the worker is told, unless it asked.
    if (tell) post({ ev: 'state', pc: handle, connectionState: 'closed', iceConnectionState: 'closed', signalingState: 'closed' })
  }

  const receive = async (message: ToPage) => {
    switch (message.op) {
      case 'create':
        create(message.pc, message.config)
        return
      case 'call': {
        const held = connections.get(message.pc)
        try {
          if (!held) throw new DOMException('no such RTCPeerConnection in the page (refused or closed)', 'InvalidStateError')
          const { pc } = held
          let result: RTCSessionDescriptionInit | undefined
          switch (message.method) {
            case 'createOffer':
            case 'createAnswer': {
              const description = await pc[message.method]()
              result = { type: description.type, sdp: description.sdp ?? '' }
              break
            }
            case 'setLocalDescription':
              await pc.setLocalDescription((message.arg as RTCSessionDescriptionInit | null) ?? undefined)
              result = pc.localDescription ? { type: pc.localDescription.type, sdp: pc.localDescription.sdp } : undefined
              break
            case 'setRemoteDescription':
              await pc.setRemoteDescription(message.arg as RTCSessionDescriptionInit)
              break
            case 'addIceCandidate':
              await pc.addIceCandidate((message.arg as RTCIceCandidateInit | null) ?? undefined)
              break
          }
          post({ ev: 'answer', call: message.call, ...(result ? { result } : {}) })
        } catch (error) {
          const { name = 'Error', message: text = String(error) } = error as Error
          post({ ev: 'answer', call: message.call, error: { name, message: text } })
        }
        return
      }
      case 'close':
        closeConnection(message.pc, false)
        return
      case 'channel': {
        const held = connections.get(message.pc)
        let dc: RTCDataChannel
        try {
          if (!held) throw new Error('no such RTCPeerConnection in the page')
          dc = held.pc.createDataChannel(message.label, message.init)
        } catch (error) {
          post({ ev: 'error', ch: message.ch, message: (error as Error).message })
          post({ ev: 'closed', ch: message.ch })
          return
        }
        wire(message.ch, message.pc, dc)
        if (dc.readyState === 'open') post({ ev: 'open', ch: message.ch, id: dc.id })
        return
      }
      case 'send': {
        const entry = channels.get(message.ch)
        if (!entry) return
        entry.seq = message.seq
        try {
          // The overloads take a string or an ArrayBuffer; TypeScript wants one at a time.
          if (typeof message.data === 'string') entry.dc.send(message.data)
          else entry.dc.send(message.data)
          const held = connections.get(entry.pc)
          if (held) held.sent += typeof message.data === 'string' ? message.data.length : message.data.byteLength
        } catch (error) {
          post({ ev: 'error', ch: message.ch, message: (error as Error).message })
        }
        report(message.ch)
        return
      }
      case 'closeChannel':
        channels.get(message.ch)?.dc.close()
        return
    }
  }
  port.onmessage = ({ data }: MessageEvent<ToPage>) => void receive(data)

  const closeAll = () => {
    for (const handle of [...connections.keys()]) closeConnection(handle, true)
  }

  return {
    port: workerPort,
    connections: () =>
      [...connections.values()].map(({ pc, channels: open, sent, received }) => ({
        state: pc.connectionState,
        channels: open.size,
        bytesSent: sent,
        bytesReceived: received,
      })),
    close() {
      refusing = 'WebRTC was turned off in this tab (node.webrtc.close())'
      closeAll()
    },
    dispose() {
      refusing = 'the bridge is gone'
      closeAll()
      port.close()
    },
  }
}
