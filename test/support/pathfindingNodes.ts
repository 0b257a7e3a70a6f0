// The nodes of the pathfinding service's CLI tests (`sluice pathfinding`): each one online on the relay with a libp2p
// transport of its own, the capacity and fee updates they sign for their channels on the devnet's token network, and
// their sending until the service acknowledges; the IOUs they pay the service with; and requests to the service's
// HTTP API. No vitest imports.
import { createPublicClient, http, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { UserDeposit } from '../../src/contracts/index.ts'
import type { SignedIou } from '../../src/pathfinding/iou.ts'
import { pfsJson } from '../../src/pathfinding/service/api.ts'
import type { PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../../src/protocol/messages/types.ts'
import { encodeMessage } from '../../src/protocol/messages/wire.ts'
import { pfsUpdateAckId } from '../../src/protocol/pfsUpdateAck.ts'
import type { Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import type { Devnet } from '../integration/support/devnet.ts'
import { signIou } from './ious.ts'
import { pythonTimestamp, signCapacityUpdate, signFeeUpdate } from './pathfinding.ts'
import { acknowledgedTransport } from './serviceProcess.ts'

/**
 * A request to the service's HTTP API (`body` as Raiden's clients encode it, or a string sent as it is), and its
 * answer with its numbers read losslessly: integers beyond 2^53 as bigints, not rounded.
 */
export async function request(method: string, url: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : pfsJson(body) }),
  })
  const text = await r.text()
  const parsed = text
    ? JSON.parse(text, (_key, value, context?: { source?: string }) =>
        typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^\d+$/.test(context.source) ? BigInt(context.source) : value,
      )
    : undefined
  return { status: r.status, body: parsed, headers: r.headers }
}

export type PathfindingNodes = {
  /** Each node's transport, by its address (a test that stops one takes it out). */
  transports: Map<Address, Libp2pTransport>
  /** Ids of the Delivered the service sent the nodes. */
  acknowledged: Set<bigint>
  /** `key`'s capacity update for its channel with `partner`: nonces 1, each side its deposit; `change` alters it. */
  capacity(key: Hex, partner: Address, channelId: bigint, change?: Partial<PFSCapacityUpdate>): Signed<PFSCapacityUpdate>
  /** `key`'s fee schedule on a channel, stamped `timestamp` (ms): a flat fee per mediation through it (Raiden's model adds the two channels' flat fees). */
  fees(key: Hex, channelId: bigint, timestamp: number, flat?: bigint): Signed<PFSFeeUpdate>
  /** Sends `update` from `key`'s node, again and again (as a node's delivery resends), until it is acknowledged; fails after 20 s. */
  sendUntilAcknowledged(key: Hex, update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): Promise<void>
  /** `key`'s IOU to the service on the devnet's OneToN, for `amount` until `expirationBlock`; `change` alters it. */
  iou(key: Hex, amount: bigint, expirationBlock: bigint, change?: Partial<SignedIou>): SignedIou
  /** `who`'s balance in the UserDeposit (where the service's claims of the IOUs land). */
  udcBalance(who: Address): Promise<bigint>
  /** Stops the transports still in `transports`. */
  stop(): Promise<void>
}

/**
 * The nodes of `keys` online on `relays`, hearing `service`'s acknowledgements; their channels on `net`'s token network
 * each hold `deposit` on both sides, with a reveal timeout of `revealTimeout`. If one fails to start, the others stop.
 */
export async function startPathfindingNodes(
  keys: readonly Hex[],
  { net, relays, service, deposit, revealTimeout }: { net: Devnet; relays: string[]; service: Address; deposit: bigint; revealTimeout: bigint },
): Promise<PathfindingNodes> {
  const transports = new Map<Address, Libp2pTransport>()
  const acknowledged = new Set<bigint>()
  const stop = async () => {
    await Promise.all([...transports.values()].map((t) => t.stop()))
  }
  const starts = await Promise.allSettled(
    keys.map(async (key) => transports.set(privateKeyToAddress(key), await acknowledgedTransport(key, relays, service, acknowledged))),
  )
  const failed = starts.find((s) => s.status === 'rejected')
  if (failed) {
    await stop()
    throw failed.reason
  }

  const chain = createPublicClient({ transport: http(net.anvil.rpcUrl) })
  const canonical = (channelId: bigint) => ({
    chain_identifier: BigInt(net.deployment.chainId),
    token_network_address: net.tokenNetwork,
    channel_identifier: channelId,
  })
  return {
    transports,
    acknowledged,
    capacity: (key, partner, channelId, change = {}) =>
      signCapacityUpdate(key, {
        canonical_identifier: canonical(channelId),
        updating_participant: privateKeyToAddress(key),
        other_participant: partner,
        updating_nonce: 1n,
        other_nonce: 1n,
        updating_capacity: deposit,
        other_capacity: deposit,
        reveal_timeout: revealTimeout,
        ...change,
      }),
    fees: (key, channelId, timestamp, flat = 0n) =>
      signFeeUpdate(key, {
        canonical_identifier: canonical(channelId),
        updating_participant: privateKeyToAddress(key),
        fee_schedule: { cap_fees: true, flat, proportional: 0n, imbalance_penalty: null },
        timestamp: pythonTimestamp(timestamp),
      }),
    async sendUntilAcknowledged(key, update) {
      const transport = transports.get(privateKeyToAddress(key))!
      const id = pfsUpdateAckId(update)
      const deadline = Date.now() + 20_000
      while (!acknowledged.has(id)) {
        if (Date.now() > deadline) throw new Error('the service did not acknowledge the update within 20 s')
        await transport.send(service, [encodeMessage(update)]).catch(() => {})
        for (let i = 0; i < 10 && !acknowledged.has(id); i++) await new Promise((r) => setTimeout(r, 30))
      }
    },
    iou: (key, amount, expirationBlock, change = {}) =>
      signIou(key, {
        oneToNAddress: net.deployment.contracts.OneToN.address,
        chainId: BigInt(net.deployment.chainId),
        receiver: service,
        amount,
        expirationBlock,
        ...change,
      }),
    udcBalance: (who) =>
      chain.readContract({ address: net.deployment.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'balances', args: [who] }),
    stop,
  }
}
