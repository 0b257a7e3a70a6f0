// `sluice relay` and `sluice serve` processes in hosts of a test network (network.ts): relays listen on their host's
// overlay address, so nodes reach them over the emulated links; a node's REST API listens on its host's underlay
// address (with a token, as the API requires beyond loopback), so the test drives it without delay.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import type { Deployment } from '../../../src/chain/deployment.ts'
import { defaultContext, initialState } from '../../../src/protocol/state/access.ts'
import type { NodeState } from '../../../src/protocol/state/types.ts'
import { replay } from '../../../src/node/runtime/engine.ts'
import { jsonParse } from '../../../src/storage/json.ts'
import type { StorageDump } from '../../../src/storage/storage.ts'
import { call } from '../../cli/devnetProcess.ts'
import { relayListening, sluiceBin, startSluice, type SluiceProcess } from '../../cli/sluiceProcess.ts'
import type { Host } from './network.ts'

export type HostedRelay = { host: Host; sluice: SluiceProcess; peerId: string; multiaddr: string }

/** `sluice relay` in `host`, listening on its overlay address; resolves once it listens. */
export async function startRelayIn(host: Host, dir: string): Promise<HostedRelay> {
  mkdirSync(dir, { recursive: true })
  const sluice = startSluice(['relay', '--listen', `/ip4/${host.overlay}/tcp/0/ws`], dir, sluiceBin, { wrap: (command) => [...host.exec, ...command] })
  await sluice.waitForOutput(/Press Ctrl-C to stop/, 60_000)
  const { peerId, multiaddrs } = relayListening(sluice.stdout())!
  return { host, sluice, peerId, multiaddr: multiaddrs[0]! }
}

export type HostedNode = {
  host: Host
  sluice: SluiceProcess
  address: Address
  /** http://<underlay>:<port>/api/v1 */
  api: string
  /** A call to its REST API, with its token: `node.call('GET', '/channels')`. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
}

export type ServeInOptions = {
  rpc: string
  deploymentFile: string
  key: Hex
  relays: readonly string[]
  /** Its data directory and token file go here. */
  dir: string
  /** More flags (timeouts, polling). */
  flags?: readonly string[]
}

/** `sluice serve` in `host`: its API on the underlay (with a token), its relays over the overlay; resolves once the API listens. */
export async function startServeIn(host: Host, options: ServeInOptions): Promise<HostedNode> {
  mkdirSync(options.dir, { recursive: true })
  const token = randomBytes(24).toString('hex')
  const tokenFile = join(options.dir, 'api-token')
  writeFileSync(tokenFile, `${token}\n`)
  const args = [
    'serve',
    '--rpc',
    options.rpc,
    '--deployment',
    options.deploymentFile,
    '--key',
    options.key,
    '--data-dir',
    join(options.dir, 'data'),
    '--api',
    `${host.underlay}:0`,
    '--api-token-file',
    tokenFile,
    ...options.relays.flatMap((r) => ['--relay', r]),
    '--environment',
    'development',
    ...(options.flags ?? []),
  ]
  const sluice = startSluice(args, options.dir, sluiceBin, { wrap: (command) => [...host.exec, ...command] })
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 90_000)
  const headers = { authorization: `Bearer ${token}` }
  return {
    host,
    sluice,
    address: privateKeyToAddress(options.key),
    api: api!,
    call: (method, path, body) => call(method, `${api}${path}`, body, headers),
  }
}

/**
 * The state a node holds, read through its REST API: GET /_state/export, replayed as the node replays its store at
 * a start (src/node/createNode.ts), with the node's `confirmations` (its --confirmations: the transitions depend on
 * them). The channel ends' nonces and balance proofs are in it, which no other answer of the API shows.
 */
export async function stateOf(node: HostedNode, deployment: Deployment, confirmations: bigint): Promise<NodeState> {
  const answer = await node.call('GET', '/_state/export')
  if (answer.status !== 200) throw new Error(`GET /_state/export answered ${answer.status}`)
  // call() parsed it as plain JSON: the dump's bigints are {"$bigint": ...} objects that jsonParse revives.
  const dump = jsonParse(JSON.stringify(answer.body)) as StorageDump
  const base =
    dump.snapshot?.state ??
    initialState({
      address: dump.meta.address,
      chainId: dump.meta.chainId,
      blockNumber: BigInt(deployment.contracts.TokenNetworkRegistry.blockNumber) - 1n,
      firstMessageId: BigInt(dump.meta.createdAt),
    })
  return replay(base, dump.snapshot?.seq ?? 0, dump.changes, { ...defaultContext, confirmationBlocks: confirmations }).state
}
