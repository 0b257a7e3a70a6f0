/**
 * The WebSockets addresses a relay or a node is reached at, as the flags give them (`sluice relay --announce`,
 * `sluice serve --p2p-listen` and `--p2p-announce`): checked with the multiaddr parser, loaded only when one is given,
 * so that `--help` stays fast.
 */
import { InvalidFlagValueError } from './args.ts'

/**
 * An address other nodes dial: IP or DNS name, TCP port, then ws, wss or tls/ws, and no peer id (libp2p appends
 * the relay's or the node's own; a second /p2p/ would make the address unusable).
 */
export function isDialableWebSockets(components: readonly { name: string }[]): boolean {
  const names = components.map((c) => c.name)
  return ['ip4', 'ip6', 'dns', 'dns4', 'dns6'].includes(names[0] ?? '') && names[1] === 'tcp' && ['ws', 'wss', 'tls/ws'].includes(names.slice(2).join('/'))
}

export const p2pListenExpected = 'a WebSockets listen multiaddr such as /ip4/0.0.0.0/tcp/4001/ws (/wss with --p2p-tls-cert and --p2p-tls-key)'
export const p2pTlsListenExpected = 'a WebSockets Secure listen multiaddr such as /ip4/0.0.0.0/tcp/4443/wss (--p2p-tls-cert serves it)'
export const p2pAnnounceExpected = 'a WebSockets multiaddr such as /dns4/node.example.com/tcp/443/wss (without /p2p/: the node adds its own peer id)'

/**
 * `--p2p-listen` and `--p2p-announce` as `sluice serve` and `startNode` take them: each listen address an IP
 * address, a TCP port and `/ws`, or `/wss` when the node serves TLS itself (`tls`), each announced one an address
 * other nodes dial.
 */
export async function checkDirectAddresses(listen: readonly string[], announce: readonly string[], tls = false): Promise<void> {
  const { multiaddr } = await import('@multiformats/multiaddr')
  const names = (raw: string) => {
    try {
      return multiaddr(raw).getComponents()
    } catch {
      return undefined
    }
  }
  for (const address of listen) {
    const components = names(address)?.map((c) => c.name)
    const kind = components?.slice(2).join('/')
    if (!components || !['ip4', 'ip6'].includes(components[0] ?? '') || components[1] !== 'tcp' || !(tls ? ['wss', 'tls/ws'] : ['ws']).includes(kind ?? ''))
      throw new InvalidFlagValueError('--p2p-listen', address, tls ? p2pTlsListenExpected : p2pListenExpected)
  }
  for (const address of announce) {
    const components = names(address)
    if (!components || !isDialableWebSockets(components)) throw new InvalidFlagValueError('--p2p-announce', address, p2pAnnounceExpected)
  }
}
