import { webSocket, type Transport } from 'viem'

/** viem's WebSocket transport for one ws/wss endpoint, its retries left to RpcEndpoints; loaded only when one is given. */
export function webSocketTransport(url: string, timeoutMs: number): Transport {
  return webSocket(url, { retryCount: 0, timeout: timeoutMs })
}
