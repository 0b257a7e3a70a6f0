import { yamux } from '@libp2p/yamux'
import { StreamState, YamuxStream } from '@libp2p/yamux/stream'

/** The receive-window fields @libp2p/yamux keeps private; read only by the window rule below. */
type WindowFields = { state: StreamState; recvWindow: number; recvWindowCapacity: number }

let installed = false

/**
 * yamux as every Sluice libp2p node and relay uses it: @libp2p/yamux with go-yamux's rule for window updates.
 *
 * @libp2p/yamux 8.0.3 answers every data frame it reads with a WindowUpdate frame. Over a relay there are two
 * yamux layers (the circuit's inside the relay connection's), and the inner update is itself data to the outer
 * layer: a one-line message from a page to its peer cost four WebSocket sends, each through Noise. go-yamux,
 * rust-yamux (#100, #109) and py-libp2p (#1269) send an update only once half the window has been read, which
 * the spec allows (the receiver decides when). Our messages are about a kilobyte and the window 256 KiB, so an
 * update now comes every hundred messages or so, and a message costs one send. The version is pinned, and
 * test/unit/transport/yamuxMuxer.test.ts checks both the rule and that the fields it reads still exist.
 * docs/decisions/0038.
 */
export function yamuxMuxer(): ReturnType<typeof yamux> {
  if (!installed) {
    installed = true
    const send = YamuxStream.prototype.sendWindowUpdate
    YamuxStream.prototype.sendWindowUpdate = function (this: YamuxStream) {
      const { state, recvWindow, recvWindowCapacity } = this as unknown as WindowFields
      // SYN/ACK flags (Init, SYNReceived) and the paused bookkeeping go through as before.
      const quiet = state === StreamState.SYNSent || state === StreamState.Established || state === StreamState.Finished
      if (quiet && recvWindowCapacity * 2 > recvWindow) return
      send.call(this)
    }
  }
  return yamux()
}
