import { lookup } from 'node:dns/promises'
import { isPrivateIp } from '@libp2p/utils'

/**
 * Whether a DNS name resolves to a loopback, private or link-local address, or to none (Node only: the system's
 * resolver). A peer's direct address by such a name is not dialled unless private addresses are allowed
 * (directPaths.ts): the name would aim us at a host of our own network as surely as its IP address.
 */
export async function resolvesPrivate(host: string): Promise<boolean> {
  const addresses = await lookup(host, { all: true })
  return addresses.length === 0 || addresses.some((a) => isPrivateIp(a.address) !== false)
}
