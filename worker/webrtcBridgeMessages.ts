/**
 * What the node's worker and its page say to each other over the WebRTC bridge's MessagePort (docs/decisions/0065):
 * the worker asks (`ToPage`), the page's real RTCPeerConnections answer and tell what happens to them (`ToWorker`).
 * Peer connections and data channels are named by handles: `w<n>` for those the worker made, `p<n>` for the data
 * channels a remote peer opened (the page names them as they come). Types only: both sides import this.
 */

/** The methods of RTCPeerConnection the worker awaits, carried out by the page's real one. */
export type BridgedCall = 'createOffer' | 'createAnswer' | 'setLocalDescription' | 'setRemoteDescription' | 'addIceCandidate'

export type ToPage =
  | { op: 'create'; pc: string; config: RTCConfiguration }
  | { op: 'call'; pc: string; call: number; method: BridgedCall; arg?: RTCSessionDescriptionInit | RTCIceCandidateInit | null }
  | { op: 'close'; pc: string }
  | { op: 'channel'; pc: string; ch: string; label: string; init: RTCDataChannelInit }
  /** Bytes to send on a channel: an ArrayBuffer of its own, transferred; `seq` counts this channel's sends. */
  | { op: 'send'; ch: string; data: ArrayBuffer | string; seq: number }
  | { op: 'closeChannel'; ch: string }

/** A data channel as the page sees it when it tells the worker about one. */
export type ChannelFacts = { label: string; protocol: string; id: number | null; readyState: RTCDataChannelState; ordered: boolean; negotiated: boolean }

export type ToWorker =
  | { ev: 'answer'; call: number; result?: RTCSessionDescriptionInit; error?: { name: string; message: string } }
  | { ev: 'state'; pc: string; connectionState: RTCPeerConnectionState; iceConnectionState: RTCIceConnectionState; signalingState: RTCSignalingState }
  /** A local ICE candidate (null: gathering is complete). */
  | { ev: 'icecandidate'; pc: string; candidate: RTCIceCandidateInit | null }
  | { ev: 'icecandidateerror'; pc: string; errorText: string; errorCode: number; url: string }
  /** A channel the remote peer opened. */
  | { ev: 'datachannel'; pc: string; ch: string; facts: ChannelFacts }
  | { ev: 'open'; ch: string; id: number | null }
  | { ev: 'message'; ch: string; data: ArrayBuffer | string }
  | { ev: 'closing'; ch: string }
  | { ev: 'closed'; ch: string }
  | { ev: 'error'; ch: string; message: string }
  /** The page's channel holds `amount` bytes not yet sent, once it has handed on every send up to `seq`. */
  | { ev: 'buffered'; ch: string; amount: number; seq: number }
  /** The page refused to make a peer connection (too many, or WebRTC turned off in this tab): it is closed. */
  | { ev: 'refused'; pc: string; message: string }
