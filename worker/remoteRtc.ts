/// <reference lib="webworker" />
/**
 * RTCPeerConnection in the node's worker, which has none of its own (docs/decisions/0065): a stand-in whose every
 * call is carried out by a real RTCPeerConnection in the page that started the worker (webrtcBridge.ts), over a
 * MessagePort. So the worker keeps its one libp2p node and one identity, and libp2p's WebRTC transport
 * (@libp2p/webrtc, browser build) runs in it unchanged: it takes RTCPeerConnection, RTCSessionDescription and
 * RTCIceCandidate from globalThis as it is imported, which is why `installRemoteRtc` must run before that.
 *
 * What is carried over is exactly what @libp2p/webrtc's private-to-private transport uses (its dist/src
 * private-to-private/, muxer.js, stream.js, rtcpeerconnection-to-conn.js, util.js): createOffer, createAnswer,
 * set{Local,Remote}Description, addIceCandidate, createDataChannel, close and the connection's states; the events
 * icecandidate, icecandidateerror, connectionstatechange, iceconnectionstatechange, signalingstatechange and
 * datachannel; a data channel's send, close, readyState, bufferedAmount with bufferedAmountLowThreshold, and its
 * events open, message, closing, close, error and bufferedamountlow. Anything else (media, getStats, restartIce,
 * Blob data) throws RTC_UNSUPPORTED at once rather than doing nothing.
 *
 * State a caller reads synchronously (connectionState, readyState, bufferedAmount) is mirrored here from what the
 * page tells; bytes go over as ArrayBuffers of their own, transferred, not copied again by structured clone.
 */
import { SluiceError } from '../src/errors.ts'
import type { BridgedCall, ChannelFacts, ToPage, ToWorker } from './webrtcBridgeMessages.ts'

/** The page did not answer a call in time, or refused one. */
export class RtcBridgeError extends SluiceError {
  override name = 'RtcBridgeError' as const
  override readonly code = 'RTC_BRIDGE' as const
}

/** A part of RTCPeerConnection or RTCDataChannel that the bridge does not carry (media, statistics, Blobs...). */
export class RtcUnsupportedError extends SluiceError {
  override name = 'RtcUnsupportedError' as const
  override readonly code = 'RTC_UNSUPPORTED' as const
}

/** How long a call waits for the page's answer: an offer or an answer takes milliseconds. */
const CALL_TIMEOUT_MS = 15_000

type Handler = ((this: unknown, event: Event) => unknown) | null
type Handled = { handler: Exclude<Handler, null>; listener: (event: Event) => void }

/** `on<type>` properties as the DOM has them: one handler each, among the event's listeners. */
function defineHandlers(target: { prototype: EventTarget }, types: readonly string[]): void {
  for (const type of types) {
    const slot = Symbol(type)
    Object.defineProperty(target.prototype, `on${type}`, {
      configurable: true,
      get(this: EventTarget & Record<symbol, Handled | undefined>) {
        return this[slot]?.handler ?? null
      },
      set(this: EventTarget & Record<symbol, Handled | undefined>, handler: Handler) {
        const previous = this[slot]
        if (previous) this.removeEventListener(type, previous.listener)
        this[slot] = undefined
        if (typeof handler !== 'function') return
        const listener = (event: Event) => void handler.call(this, event)
        this[slot] = { handler, listener }
        this.addEventListener(type, listener)
      },
    })
  }
}

const unsupported = (what: string) => () => {
  throw new RtcUnsupportedError(`${what} is not carried to the page by Sluice's WebRTC bridge`)
}

function invalidState(message: string): DOMException {
  return new DOMException(message, 'InvalidStateError')
}

export class RemoteSessionDescription {
  readonly type: RTCSdpType
  readonly sdp: string
  constructor(init: RTCSessionDescriptionInit) {
    this.type = init.type
    this.sdp = init.sdp ?? ''
  }
  toJSON(): RTCSessionDescriptionInit {
    return { type: this.type, sdp: this.sdp }
  }
}

export class RemoteIceCandidate {
  readonly candidate: string
  readonly sdpMid: string | null
  readonly sdpMLineIndex: number | null
  readonly usernameFragment: string | null
  constructor(init: RTCIceCandidateInit = {}) {
    this.candidate = init.candidate ?? ''
    this.sdpMid = init.sdpMid ?? null
    this.sdpMLineIndex = init.sdpMLineIndex ?? null
    this.usernameFragment = init.usernameFragment ?? null
  }
  toJSON(): RTCIceCandidateInit {
    return { candidate: this.candidate, sdpMid: this.sdpMid, sdpMLineIndex: this.sdpMLineIndex, usernameFragment: this.usernameFragment }
  }
}

/** The worker's end of one bridge: its peer connections and channels by handle, and the calls awaiting answers. */
class Bridge {
  readonly connections = new Map<string, RemotePeerConnection>()
  readonly channels = new Map<string, RemoteDataChannel>()
  readonly #calls = new Map<number, { resolve: (value: RTCSessionDescriptionInit | undefined) => void; reject: (error: Error) => void }>()
  #next = 0

  constructor(readonly port: MessagePort) {
    port.onmessage = ({ data }: MessageEvent<ToWorker>) => this.#receive(data)
  }

  handle(): string {
    return `w${++this.#next}`
  }

  post(message: ToPage, transfer: Transferable[] = []): void {
    this.port.postMessage(message, transfer)
  }

  call(pc: string, method: BridgedCall, arg?: RTCSessionDescriptionInit | RTCIceCandidateInit | null): Promise<RTCSessionDescriptionInit | undefined> {
    const call = ++this.#next
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#calls.delete(call)
        reject(new RtcBridgeError(`the page did not carry out RTCPeerConnection.${method} within ${CALL_TIMEOUT_MS} ms`))
      }, CALL_TIMEOUT_MS)
      this.#calls.set(call, {
        resolve: (value) => {
          clearTimeout(timer)
          resolve(value)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      this.post({ op: 'call', pc, call, method, ...(arg !== undefined ? { arg } : {}) })
    })
  }

  #receive(message: ToWorker): void {
    switch (message.ev) {
      case 'answer': {
        const waiting = this.#calls.get(message.call)
        if (!waiting) return
        this.#calls.delete(message.call)
        if (message.error) waiting.reject(Object.assign(new Error(message.error.message), { name: message.error.name }))
        else waiting.resolve(message.result)
        return
      }
      case 'state':
        this.connections.get(message.pc)?.onState(message)
        return
      case 'refused':
        this.connections.get(message.pc)?.onRefused(message.message)
        return
      case 'icecandidate':
        this.connections.get(message.pc)?.onIceCandidate(message.candidate)
        return
      case 'icecandidateerror':
        this.connections
          .get(message.pc)
          ?.dispatchEvent(Object.assign(new Event('icecandidateerror'), { errorText: message.errorText, errorCode: message.errorCode, url: message.url }))
        return
      case 'datachannel':
        this.connections.get(message.pc)?.onDataChannel(message.ch, message.facts)
        return
      default:
        this.channels.get(message.ch)?.onEvent(message)
    }
  }
}

export class RemotePeerConnection extends EventTarget {
  declare onconnectionstatechange: Handler
  declare oniceconnectionstatechange: Handler
  declare onsignalingstatechange: Handler
  declare onicecandidate: Handler
  declare onicecandidateerror: Handler
  declare ondatachannel: Handler
  #connectionState: RTCPeerConnectionState = 'new'
  #iceConnectionState: RTCIceConnectionState = 'new'
  #signalingState: RTCSignalingState = 'stable'
  #localDescription: RemoteSessionDescription | null = null
  #remoteDescription: RemoteSessionDescription | null = null
  readonly #bridge: Bridge
  readonly #handle: string
  readonly #configuration: RTCConfiguration
  readonly #channels = new Set<RemoteDataChannel>()

  constructor(configuration: RTCConfiguration, bridge: Bridge) {
    super()
    this.#bridge = bridge
    this.#handle = bridge.handle()
    // Only what structured clone carries: ICE servers and policies (certificates stay the page's own).
    const { iceServers, iceTransportPolicy, bundlePolicy, rtcpMuxPolicy, iceCandidatePoolSize } = configuration
    this.#configuration = JSON.parse(JSON.stringify({ iceServers, iceTransportPolicy, bundlePolicy, rtcpMuxPolicy, iceCandidatePoolSize })) as RTCConfiguration
    bridge.connections.set(this.#handle, this)
    bridge.post({ op: 'create', pc: this.#handle, config: this.#configuration })
  }

  get connectionState(): RTCPeerConnectionState {
    return this.#connectionState
  }
  get iceConnectionState(): RTCIceConnectionState {
    return this.#iceConnectionState
  }
  get signalingState(): RTCSignalingState {
    return this.#signalingState
  }
  get localDescription(): RemoteSessionDescription | null {
    return this.#localDescription
  }
  get remoteDescription(): RemoteSessionDescription | null {
    return this.#remoteDescription
  }
  getConfiguration(): RTCConfiguration {
    return structuredClone(this.#configuration)
  }

  async createOffer(options?: RTCOfferOptions): Promise<RTCSessionDescriptionInit> {
    if (options && Object.keys(options).length > 0) unsupported('createOffer with options')()
    return this.#call('createOffer') as Promise<RTCSessionDescriptionInit>
  }
  async createAnswer(options?: RTCAnswerOptions): Promise<RTCSessionDescriptionInit> {
    if (options && Object.keys(options).length > 0) unsupported('createAnswer with options')()
    return this.#call('createAnswer') as Promise<RTCSessionDescriptionInit>
  }
  async setLocalDescription(description?: RTCSessionDescriptionInit): Promise<void> {
    const set = await this.#call('setLocalDescription', description ? { type: description.type, sdp: description.sdp ?? '' } : null)
    if (set) this.#localDescription = new RemoteSessionDescription(set)
  }
  async setRemoteDescription(description: RTCSessionDescriptionInit): Promise<void> {
    await this.#call('setRemoteDescription', { type: description.type, sdp: description.sdp ?? '' })
    this.#remoteDescription = new RemoteSessionDescription(description)
  }
  async addIceCandidate(candidate?: RTCIceCandidateInit | null): Promise<void> {
    const init = candidate == null ? null : candidate instanceof RemoteIceCandidate ? candidate.toJSON() : { ...candidate }
    await this.#call('addIceCandidate', init)
  }

  createDataChannel(label: string, init: RTCDataChannelInit = {}): RemoteDataChannel {
    if (this.#connectionState === 'closed') throw invalidState('the RTCPeerConnection is closed')
    const handle = this.#bridge.handle()
    const channel = new RemoteDataChannel(this.#bridge, handle, {
      label,
      protocol: init.protocol ?? '',
      id: init.id ?? null,
      readyState: 'connecting',
      ordered: init.ordered ?? true,
      negotiated: init.negotiated ?? false,
    })
    this.#adopt(channel)
    this.#bridge.post({ op: 'channel', pc: this.#handle, ch: handle, label, init: { ...init } })
    return channel
  }

  /** Closes it here at once, as the DOM does (no connectionstatechange), and in the page. */
  close(): void {
    if (this.#connectionState === 'closed') return
    this.#connectionState = 'closed'
    this.#iceConnectionState = 'closed'
    this.#signalingState = 'closed'
    this.#bridge.post({ op: 'close', pc: this.#handle })
    this.#bridge.connections.delete(this.#handle)
    for (const channel of this.#channels) channel.onEvent({ ev: 'closed', ch: '' })
  }

  #call(method: BridgedCall, arg?: RTCSessionDescriptionInit | RTCIceCandidateInit | null): Promise<RTCSessionDescriptionInit | undefined> {
    if (this.#connectionState === 'closed') return Promise.reject(invalidState('the RTCPeerConnection is closed'))
    return this.#bridge.call(this.#handle, method, arg)
  }

  #adopt(channel: RemoteDataChannel): void {
    this.#channels.add(channel)
    channel.addEventListener('close', () => this.#channels.delete(channel), { once: true })
  }

  /** @internal The page's connection changed state. */
  onState(state: ToWorker & { ev: 'state' }): void {
    if (this.#connectionState === 'closed') return
    const changed = (now: string, was: string, type: string) => now !== was && (() => this.dispatchEvent(new Event(type)))
    const events = [
      changed(state.signalingState, this.#signalingState, 'signalingstatechange'),
      changed(state.iceConnectionState, this.#iceConnectionState, 'iceconnectionstatechange'),
      changed(state.connectionState, this.#connectionState, 'connectionstatechange'),
    ]
    this.#signalingState = state.signalingState
    this.#iceConnectionState = state.iceConnectionState
    this.#connectionState = state.connectionState
    if (state.connectionState === 'closed') this.#bridge.connections.delete(this.#handle)
    for (const dispatch of events) if (dispatch) dispatch()
    // Closed by the page (WebRTC turned off in the tab): so are its channels.
    if (state.connectionState === 'closed') for (const channel of this.#channels) channel.onEvent({ ev: 'closed', ch: '' })
  }

  /** @internal The page would not make this connection: it fails, as one whose ICE failed. */
  onRefused(message: string): void {
    this.dispatchEvent(Object.assign(new Event('icecandidateerror'), { errorText: message, errorCode: 0, url: '' }))
    this.onState({ ev: 'state', pc: this.#handle, connectionState: 'failed', iceConnectionState: 'failed', signalingState: this.#signalingState })
  }

  /** @internal */
  onIceCandidate(candidate: RTCIceCandidateInit | null): void {
    this.dispatchEvent(Object.assign(new Event('icecandidate'), { candidate: candidate ? new RemoteIceCandidate(candidate) : null }))
  }

  /** @internal The remote peer opened a channel. */
  onDataChannel(handle: string, facts: ChannelFacts): void {
    const channel = new RemoteDataChannel(this.#bridge, handle, facts)
    this.#adopt(channel)
    this.dispatchEvent(Object.assign(new Event('datachannel'), { channel }))
  }

  getStats = unsupported('RTCPeerConnection.getStats')
  addTrack = unsupported('RTCPeerConnection.addTrack')
  removeTrack = unsupported('RTCPeerConnection.removeTrack')
  addTransceiver = unsupported('RTCPeerConnection.addTransceiver')
  getSenders = unsupported('RTCPeerConnection.getSenders')
  getReceivers = unsupported('RTCPeerConnection.getReceivers')
  getTransceivers = unsupported('RTCPeerConnection.getTransceivers')
  restartIce = unsupported('RTCPeerConnection.restartIce')
  setConfiguration = unsupported('RTCPeerConnection.setConfiguration')
}
defineHandlers(RemotePeerConnection, [
  'connectionstatechange',
  'iceconnectionstatechange',
  'signalingstatechange',
  'icecandidate',
  'icecandidateerror',
  'datachannel',
])

export class RemoteDataChannel extends EventTarget {
  declare onopen: Handler
  declare onmessage: Handler
  declare onclosing: Handler
  declare onclose: Handler
  declare onerror: Handler
  declare onbufferedamountlow: Handler
  readonly label: string
  readonly protocol: string
  readonly ordered: boolean
  readonly negotiated: boolean
  bufferedAmountLowThreshold = 0
  #id: number | null
  #readyState: RTCDataChannelState
  #binaryType: BinaryType = 'arraybuffer'
  /** Sends the page has not yet said it handed on, by sequence number, and what its channel still held then. */
  readonly #unreported: { seq: number; bytes: number }[] = []
  #reported = 0
  #seq = 0
  readonly #bridge: Bridge
  readonly #handle: string

  constructor(bridge: Bridge, handle: string, facts: ChannelFacts) {
    super()
    this.#bridge = bridge
    this.#handle = handle
    this.label = facts.label
    this.protocol = facts.protocol
    this.ordered = facts.ordered
    this.negotiated = facts.negotiated
    this.#id = facts.id
    this.#readyState = facts.readyState
    bridge.channels.set(handle, this)
  }

  get id(): number | null {
    return this.#id
  }
  get readyState(): RTCDataChannelState {
    return this.#readyState
  }
  get binaryType(): BinaryType {
    return this.#binaryType
  }
  set binaryType(type: BinaryType) {
    // The page's channel hands over ArrayBuffers: a Blob would be one more copy, and @libp2p/webrtc never asks for one.
    if (type !== 'arraybuffer') unsupported(`RTCDataChannel.binaryType '${type}'`)()
    this.#binaryType = type
  }
  get bufferedAmount(): number {
    return this.#reported + this.#unreported.reduce((sum, send) => sum + send.bytes, 0)
  }

  send(data: string | ArrayBuffer | ArrayBufferView | Blob): void {
    if (this.#readyState !== 'open') throw invalidState(`the RTCDataChannel is ${this.#readyState}`)
    let payload: ArrayBuffer | string
    let bytes: number
    if (typeof data === 'string') {
      payload = data
      bytes = new TextEncoder().encode(data).byteLength
    } else if (data instanceof ArrayBuffer) {
      // Copied once, here: the caller may keep using its buffer, and a transferred one is gone from the worker.
      payload = data.slice(0)
      bytes = data.byteLength
    } else if (ArrayBuffer.isView(data)) {
      payload = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice().buffer
      bytes = data.byteLength
    } else throw new RtcUnsupportedError("RTCDataChannel.send of a Blob is not carried to the page by Sluice's WebRTC bridge")
    const seq = ++this.#seq
    this.#unreported.push({ seq, bytes })
    this.#bridge.post({ op: 'send', ch: this.#handle, data: payload, seq }, typeof payload === 'string' ? [] : [payload])
  }

  close(): void {
    if (this.#readyState === 'closing' || this.#readyState === 'closed') return
    this.#readyState = 'closing'
    this.#bridge.post({ op: 'closeChannel', ch: this.#handle })
  }

  /** @internal What the page's channel did. */
  onEvent(event: Exclude<ToWorker, { ev: 'answer' | 'state' | 'refused' | 'icecandidate' | 'icecandidateerror' | 'datachannel' }>): void {
    if (this.#readyState === 'closed') return
    switch (event.ev) {
      case 'open':
        this.#id = event.id
        this.#readyState = 'open'
        this.dispatchEvent(new Event('open'))
        return
      case 'message':
        this.dispatchEvent(new MessageEvent('message', { data: event.data }))
        return
      case 'buffered': {
        const before = this.bufferedAmount
        while (this.#unreported.length > 0 && this.#unreported[0]!.seq <= event.seq) this.#unreported.shift()
        this.#reported = event.amount
        if (before > this.bufferedAmountLowThreshold && this.bufferedAmount <= this.bufferedAmountLowThreshold)
          this.dispatchEvent(new Event('bufferedamountlow'))
        return
      }
      case 'closing':
        this.#readyState = 'closing'
        this.dispatchEvent(new Event('closing'))
        return
      case 'error':
        this.dispatchEvent(Object.assign(new Event('error'), { error: new RtcBridgeError(event.message) }))
        return
      case 'closed':
        this.#readyState = 'closed'
        this.#bridge.channels.delete(this.#handle)
        this.dispatchEvent(new Event('close'))
        return
    }
  }
}
defineHandlers(RemoteDataChannel, ['open', 'message', 'closing', 'close', 'error', 'bufferedamountlow'])

/** RTCPeerConnection whose connections are made at the other end of `port` (webrtcBridge.ts). */
export function remotePeerConnection(port: MessagePort): new (configuration?: RTCConfiguration) => RemotePeerConnection {
  const bridge = new Bridge(port)
  return class extends RemotePeerConnection {
    constructor(configuration: RTCConfiguration = {}) {
      super(configuration, bridge)
    }
  }
}

/**
 * Makes RTCPeerConnection, RTCSessionDescription and RTCIceCandidate of this worker the page's, through `port`
 * (the worker's end of webrtcBridge.ts): before @libp2p/webrtc is imported, which reads them as it loads.
 */
export function installRemoteRtc(port: MessagePort): void {
  Object.assign(globalThis, {
    RTCPeerConnection: remotePeerConnection(port),
    RTCSessionDescription: RemoteSessionDescription,
    RTCIceCandidate: RemoteIceCandidate,
  })
}
