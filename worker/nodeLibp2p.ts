/**
 * The node worker's libp2p (docs/decisions/0024): loaded only with relays, in chunks of its own, and with the page's
 * WebRTC bridge its WebRTC transport too (docs/decisions/0065). libp2p's WebRTC transport reads RTCPeerConnection
 * from globalThis as it is imported: the page's stand-in (remoteRtc.ts) is put in place first, and
 * @libp2p/webrtc is imported only then.
 */
import type { Hex } from 'viem'
import { createLibp2pTransport, type Libp2pTransport } from '../src/transport/libp2p/libp2pTransport.ts'
import { installRemoteRtc } from './remoteRtc.ts'

/** What the worker gets of the page's WebRTC bridge (webrtcBridge.ts): the port its RTCPeerConnections answer on, and the ICE servers. */
export type WebRtcOptions = { port: MessagePort; iceServers: RTCIceServer[] }

export async function createNodeLibp2p({
  key,
  relays,
  webrtc,
  allowPrivateDirect,
  warn,
}: {
  key: Hex
  relays: string[]
  webrtc: WebRtcOptions | undefined
  /** Dial peers' direct addresses on loopback and private networks too (`p2pAllowPrivate`). */
  allowPrivateDirect: boolean
  warn: (message: string, error: unknown) => void
}): Promise<Libp2pTransport> {
  // Without WebRTC the node still reaches every peer through the relays.
  const webRTC = webrtc
    ? await loadWebRtc(webrtc).catch((error: unknown) => {
        warn('WebRTC did not load: every message goes through the relays', error)
        return undefined
      })
    : undefined
  return createLibp2pTransport({ privateKey: key, relays, allowPrivateDirect, ...(webRTC ? { webRTC } : {}) })
}

async function loadWebRtc({ port, iceServers }: WebRtcOptions) {
  if (typeof globalThis.RTCPeerConnection === 'function') port.close()
  else installRemoteRtc(port)
  const { webRTC } = await import('@libp2p/webrtc')
  // Always given, even empty: without it @libp2p/webrtc asks four public STUN servers of its choosing.
  return webRTC({ rtcConfiguration: { iceServers } })
}
