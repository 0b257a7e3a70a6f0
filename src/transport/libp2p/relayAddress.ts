import type { PeerId } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { InvalidRelayAddressError } from '../errors.ts'

/** A configured relay: where to dial it, and who it must be (`/p2p/<relay peer id>`). */
export type RelayAddress = { addr: Multiaddr; peerId: PeerId }

export const isCircuit = (ma: Multiaddr) => ma.toString().includes('/p2p-circuit')
export const withoutPeerId = (ma: Multiaddr) => ma.toString().replace(/\/p2p\/[^/]+$/, '')

/** A relay multiaddr as given (`--relay`), checked: a multiaddr that ends in the relay's PeerId. */
export function parseRelay(address: string): RelayAddress {
  let addr: Multiaddr
  try {
    addr = multiaddr(address)
  } catch (error) {
    throw new InvalidRelayAddressError(address, `is not a multiaddr (${(error as Error).message})`)
  }
  const id = addr
    .getComponents()
    .filter((c) => c.name === 'p2p')
    .pop()?.value
  if (!id) throw new InvalidRelayAddressError(address, 'has no /p2p/<relay peer id>')
  return { addr, peerId: peerIdFromString(id) }
}

/** Where a peer with a reservation on `relay` is dialled: `<relay>/p2p-circuit/p2p/<peer>`. */
export const circuitThrough = (relay: RelayAddress, peer: PeerId): Multiaddr => multiaddr(`${relay.addr}/p2p-circuit/p2p/${peer}`)
