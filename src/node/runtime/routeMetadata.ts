import { getAddress, type Address, type Hex } from 'viem'
import type { AddressMetadata, LockedTransfer } from '../../protocol/messages/types.ts'
import { sameAddress } from '../../protocol/state/access.ts'
import type { PeerRecordCheck, Transport } from '../../transport/transport.ts'
import { withTimeout } from '../../waits.ts'
import type { PeerRecordNotice } from '../notices.ts'

/**
 * The presence records of a route's nodes that a third party hands on (docs/decisions/0073): a pathfinding service's
 * `address_metadata`, and the one an initiator puts in its LockedTransfer's `metadata.routes[].address_metadata`, as
 * Raiden does. Never trusted: a record is used only once the transport found it signed by the key of the peer id it
 * names, that key being the node's own (`Transport.peerRecord`); anything else is dropped, said in the debug log, and
 * never fails a payment. What a good one gives: the node's public key (a payment's secret is encrypted to the target
 * in its first LockedTransfer), and the way to it (handed to the transport as if a relay had delivered it).
 */

/** Where a record came from, for the log. */
export type RecordSource = PeerRecordNotice['from']

/** Checks `record` as `peer`'s, and with `take` hands it to the transport; a record not used is said (debug). */
export type PeerRecords = (peer: Address, record: unknown, options: { take: boolean; from: RecordSource }) => Promise<PeerRecordCheck>

/** The longest a payment waits for the transport to check and take one record. */
const CHECK_TIMEOUT_MS = 2_000

/** The node's PeerRecords over its transport; one without records (BroadcastChannel) uses none, saying nothing. */
export function peerRecordsOf(transport: Pick<Transport, 'peerRecord'>, notify: (notice: PeerRecordNotice) => void): PeerRecords {
  return async (peer, record, { take, from }) => {
    if (!transport.peerRecord) return { ok: false, reason: 'the transport carries no presence records' }
    let check: PeerRecordCheck
    try {
      // A payment waits for it: bounded, though a check and a take are local work of milliseconds.
      check = await withTimeout(transport.peerRecord(peer, record, { take }), CHECK_TIMEOUT_MS, () => new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`))
    } catch (error) {
      check = { ok: false, reason: `the transport failed to take it: ${error instanceof Error ? error.message : String(error)}` }
    }
    if (!check.ok) notify({ type: 'peerRecordDropped', peer, from, reason: check.reason })
    return check
  }
}

/** The entry of `peer` in an `address_metadata` object, whatever the case of its keys; undefined if none. */
function entryOf(given: Record<string, unknown>, peer: Address): unknown {
  for (const [key, value] of Object.entries(given)) if (key.toLowerCase() === peer.toLowerCase()) return value
  return undefined
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x)

/** The three fields of a record that checked, as answered (strings, which the check made sure of). */
const fieldsOf = (entry: unknown): AddressMetadata => {
  const { user_id, displayname, capabilities } = entry as AddressMetadata
  return { user_id, displayname, capabilities }
}

/** The most nodes of one answered route whose records are checked: a longer route's are left out (a route is a few hops). */
const MAX_CHECKED_NODES = 16

export type ServiceRouteRecords = {
  /** Each route's checked records by EIP-55 address, in the routes' order (undefined: none checked). */
  routeMetadata: (Record<string, AddressMetadata> | undefined)[]
  /** The target's public key, from its record. */
  targetKey: Hex | undefined
}

/**
 * A pathfinding service's routes' `address_metadata`, checked node by node (`paths` are the routes as answered, from
 * us to the target; `given` each one's address_metadata, unread): the records that checked, for each route's
 * LockedTransfer, and the target's key. The target's record and each route's first hop's are handed to the transport
 * (the way to them opens now: our LockedTransfer and our RevealSecret need not wait for the relays' answer); the
 * other nodes' are only checked (we never send to them, the hops before them do).
 */
export async function serviceRouteRecords(
  check: PeerRecords,
  { paths, given, target }: { paths: readonly (readonly Address[])[]; given: readonly unknown[]; target: Address },
): Promise<ServiceRouteRecords> {
  const checked = new Map<string, Promise<PeerRecordCheck>>()
  const checkOnce = (node: Address, entry: unknown, take: boolean) => {
    let key: string
    try {
      // Taken or only checked: a hop in the middle of one route may be the first of another.
      key = `${node.toLowerCase()}|${take}|${JSON.stringify(entry)}`
    } catch {
      return Promise.resolve<PeerRecordCheck>({ ok: false, reason: 'not JSON' })
    }
    let found = checked.get(key)
    if (!found) {
      found = check(node, entry, { take, from: 'pathfinding service' })
      checked.set(key, found)
    }
    return found
  }
  let targetKey: Hex | undefined
  const routeMetadata = await Promise.all(
    paths.map(async (path, i) => {
      const metadata = given[i]
      if (metadata === undefined) return undefined
      if (!isObject(metadata)) {
        await check(target, metadata, { take: false, from: 'pathfinding service' })
        return undefined
      }
      if (path.length > MAX_CHECKED_NODES) return undefined
      const records: Record<string, AddressMetadata> = {}
      await Promise.all(
        path.map(async (node, j) => {
          const entry = entryOf(metadata, node)
          if (entry === undefined) return
          const isTarget = sameAddress(node, target)
          const result = await checkOnce(node, entry, isTarget || j === 1)
          if (!result.ok) return
          records[getAddress(node)] = fieldsOf(entry)
          if (isTarget) targetKey = result.publicKey
        }),
      )
      // In the route's order, as the service answered them: the same metadata from the same answer, whatever the timing.
      const ordered: Record<string, AddressMetadata> = {}
      for (const node of path) {
        const record = records[getAddress(node)]
        if (record) ordered[getAddress(node)] = record
      }
      return Object.keys(ordered).length > 0 ? ordered : undefined
    }),
  )
  return { routeMetadata, targetKey }
}

/**
 * The records in a LockedTransfer that came to us that we will use, handed to the transport: as a mediator, the next
 * hop's (our LockedTransfer goes to it), as its target, the initiator's when we must ask it for the secret (our
 * SecretRequest goes to it; not when the secret came in the metadata: we never talk to the initiator then). From the
 * route that names us, in the metadata the initiator signed; records of anyone else are left alone.
 */
export function takeTransferRecords(check: PeerRecords, message: LockedTransfer, us: Address, { hasSecret }: { hasSecret: boolean }): void {
  const isTarget = sameAddress(message.target, us)
  if (isTarget && hasSecret) return
  const wanted = isTarget ? message.initiator : undefined
  for (const { route, address_metadata } of message.metadata.routes) {
    if (!Array.isArray(route) || !isObject(address_metadata)) continue
    const i = route.findIndex((a) => sameAddress(a, us))
    if (i < 0) continue
    const peer = wanted ?? (i + 1 < route.length ? route[i + 1] : undefined)
    if (!peer || sameAddress(peer, us)) return
    const entry = entryOf(address_metadata, peer)
    if (entry !== undefined) void check(peer, entry, { take: true, from: 'LockedTransfer' })
    return
  }
}
