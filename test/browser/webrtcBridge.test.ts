// The WebRTC bridge alone (worker/remoteRtc.ts, worker/webrtcBridge.ts; docs/decisions/0065), in a real Chromium
// page: two page bridges, each with the stand-in RTCPeerConnection on its other port (as a node's worker has it),
// connected to each other with the page's real RTCPeerConnections. What @libp2p/webrtc uses of the surface, as it
// uses it; what it does not, refused with RTC_UNSUPPORTED. Two pages with two nodes: test/engines/webrtc.test.ts.
import { afterEach, describe, expect, test } from 'vitest'
import {
  remotePeerConnection,
  type RemoteDataChannel,
  type RemotePeerConnection,
  RemoteIceCandidate,
  RemoteSessionDescription,
} from '../../worker/remoteRtc.ts'
import { startWebRtcBridge, type WebRtcBridge } from '../../worker/webrtcBridge.ts'

const bridges: WebRtcBridge[] = []
afterEach(() => {
  for (const bridge of bridges.splice(0)) bridge.dispose()
})

function bridged(options?: { maxPeerConnections?: number }) {
  const bridge = startWebRtcBridge(options)
  bridges.push(bridge)
  return { bridge, PeerConnection: remotePeerConnection(bridge.port) }
}

const next = (target: EventTarget, type: string) => new Promise<Event>((resolve) => target.addEventListener(type, resolve, { once: true }))
const until = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Offer, answer and candidates as @libp2p/webrtc exchanges them (through its signalling stream, here directly). */
async function connect(a: RemotePeerConnection, b: RemotePeerConnection) {
  a.onicecandidate = ({ candidate }: Event & { candidate?: RemoteIceCandidate | null }) => {
    if (candidate) void b.addIceCandidate(new RemoteIceCandidate(JSON.parse(JSON.stringify(candidate.toJSON()))))
  }
  b.onicecandidate = ({ candidate }: Event & { candidate?: RemoteIceCandidate | null }) => {
    if (candidate) void a.addIceCandidate(candidate)
  }
  const offer = await a.createOffer()
  await a.setLocalDescription(offer)
  await b.setRemoteDescription(new RemoteSessionDescription({ type: 'offer', sdp: offer.sdp! }))
  const answer = await b.createAnswer()
  await b.setLocalDescription(answer)
  await a.setRemoteDescription(answer)
  await until(() => a.connectionState === 'connected' && b.connectionState === 'connected')
}

describe('the WebRTC bridge', () => {
  test('two stand-ins connect through their pages; data channels carry bytes both ways, and what the worker sent stays its own', async () => {
    const [one, two] = [bridged(), bridged()]
    const a = new one.PeerConnection({ iceServers: [] })
    const b = new two.PeerConnection({ iceServers: [] })
    const states: string[] = []
    a.addEventListener('connectionstatechange', () => states.push(a.connectionState))
    const init = a.createDataChannel('init')
    expect(init.readyState).toBe('connecting')
    const arrived = next(b, 'datachannel') as Promise<Event & { channel: RemoteDataChannel }>
    await connect(a, b)
    expect(states).toContain('connected')
    const { channel: far } = await arrived
    if (init.readyState !== 'open') await next(init, 'open')
    expect([init.readyState, far.label, typeof init.id]).toEqual(['open', 'init', 'number'])

    const received: ArrayBuffer[] = []
    far.binaryType = 'arraybuffer'
    far.onmessage = (event: Event) => void received.push((event as MessageEvent<ArrayBuffer>).data)
    // A view into the middle of a buffer the sender keeps: what goes is the view, and the buffer stays usable.
    const buffer = new Uint8Array(64).map((_, i) => i)
    const view = buffer.subarray(8, 24)
    init.send(view)
    expect(buffer.byteLength).toBe(64)
    expect(init.bufferedAmount).toBe(16)
    await until(() => received.length === 1)
    expect([...new Uint8Array(received[0]!)]).toEqual([...view])
    await until(() => init.bufferedAmount === 0)

    // A large send: bufferedAmount rises, then bufferedamountlow fires as the page's channel drains it.
    init.bufferedAmountLowThreshold = 0
    const low = next(init, 'bufferedamountlow')
    for (let i = 0; i < 64; i++) init.send(new Uint8Array(16 * 1024))
    expect(init.bufferedAmount).toBeGreaterThan(0)
    await low
    expect(init.bufferedAmount).toBe(0)
    await until(() => received.length === 65)

    // The other way, and the page's count of what each connection carried.
    const back: string[] = []
    init.addEventListener('message', (event) => back.push(new TextDecoder().decode((event as MessageEvent<ArrayBuffer>).data)))
    far.send(new TextEncoder().encode('hello'))
    await until(() => back.length === 1)
    expect(back).toEqual(['hello'])
    expect(one.bridge.connections()).toEqual([{ state: 'connected', channels: 1, bytesSent: 16 + 64 * 16 * 1024, bytesReceived: 5 }])

    // Closing a channel closes it at both ends.
    const closed = next(far, 'close')
    init.close()
    expect(init.readyState).toBe('closing')
    await closed
    await until(() => init.readyState === 'closed')
    a.close()
    b.close()
  }, 30_000)

  test('when one end closes, the other end’s connection closes at once (its transports say so), and what it does not carry is refused', async () => {
    const [one, two] = [bridged(), bridged()]
    const a = new one.PeerConnection({ iceServers: [] })
    const b = new two.PeerConnection({ iceServers: [] })
    a.createDataChannel('init')
    await connect(a, b)
    expect(() => a.getStats()).toThrow(expect.objectContaining({ code: 'RTC_UNSUPPORTED' }))
    expect(() => a.addTrack()).toThrow(expect.objectContaining({ code: 'RTC_UNSUPPORTED' }))
    const channel = a.createDataChannel('x')
    expect(() => {
      channel.binaryType = 'blob'
    }).toThrow(expect.objectContaining({ code: 'RTC_UNSUPPORTED' }))
    await expect(a.createOffer({ iceRestart: true })).rejects.toMatchObject({ code: 'RTC_UNSUPPORTED' })

    const gone = next(b, 'connectionstatechange')
    const t0 = performance.now()
    a.close()
    expect(a.connectionState).toBe('closed')
    await gone
    expect(b.connectionState).toBe('closed')
    // Not ICE's consent timeout (many seconds): the remote's DTLS close.
    expect(performance.now() - t0).toBeLessThan(3_000)
    expect(two.bridge.connections()).toEqual([])
  }, 30_000)

  test('a page that turned WebRTC off closes its connections, tells the worker, and refuses new ones; so does one that holds its most', async () => {
    const { bridge, PeerConnection } = bridged({ maxPeerConnections: 1 })
    const first = new PeerConnection({ iceServers: [] })
    const second = new PeerConnection({ iceServers: [] })
    await next(second, 'connectionstatechange')
    expect(second.connectionState).toBe('failed')
    await expect(second.createOffer()).rejects.toThrow(/refused or closed/)
    await until(() => bridge.connections().length === 1)

    const told = next(first, 'connectionstatechange')
    bridge.close()
    await told
    expect(first.connectionState).toBe('closed')
    expect(bridge.connections()).toEqual([])
    const later = new PeerConnection({ iceServers: [] })
    await next(later, 'connectionstatechange')
    expect(later.connectionState).toBe('failed')
  })
})
