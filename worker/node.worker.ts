/// <reference lib="webworker" />
/**
 * The origin's node, in a module web worker of the tab that leads (docs/decisions/0020): the same node as
 * `sluice serve` (createNode + hostNode) with IndexedDB storage, served on the request channel so that the service
 * worker and every tab reach it. The page drives it through Comlink (`start`, `stop`).
 */
import * as Comlink from 'comlink'
import type { Hex } from 'viem'
import type { Environment } from '../src/api/context.ts'
import type { Deployment } from '../src/chain/deployment.ts'
import { SluiceError } from '../src/errors.ts'
import { hostNode, type HostedNode } from '../src/host/hostNode.ts'
import { createNode } from '../src/node/createNode.ts'
import type { NodeConfig, TransportFactory } from '../src/node/nodeConfig.ts'
import type { NodeStatus } from '../src/node/notices.ts'
import { openIdbStorage } from '../src/storage/idbStorage.ts'
import { createBroadcastChannelTransport } from '../src/transport/broadcastChannelTransport.ts'
import { version } from '../src/version.ts'
import { serveApiChannel } from './apiChannel.ts'
import { carryErrorCodes } from './comlinkErrors.ts'

/** What the page gives the worker: the node's options (the `sluice serve` flags in camelCase), as data. */
export type NodeWorkerOptions = Pick<
  NodeConfig,
  'confirmations' | 'pollingInterval' | 'defaultRevealTimeout' | 'defaultSettleTimeout' | 'resolverEndpoint' | 'releaseFeedUrl' | 'encryptSecret'
> & {
  rpc: string
  deployment: Deployment
  key: Hex
  /** libp2p relays (`sluice relay` prints them); without any, the node reaches nodes of this origin only. */
  relay?: string[]
  environment?: Environment
  /** The request channel's name (tests use their own). */
  apiChannel?: string
}

export class NodeAlreadyStartedError extends SluiceError {
  override name = 'NodeAlreadyStartedError' as const
  override readonly code = 'NODE_ALREADY_STARTED' as const
}

carryErrorCodes()

let hosted: HostedNode | undefined
let serving: { close(): void } | undefined
let starting: Promise<{ address: string; version: string }> | undefined

const api = {
  /** Builds the node, serves its API on the request channel at once (/status answers during the first sync), and runs it. */
  start(options: NodeWorkerOptions): Promise<{ address: string; version: string }> {
    if (starting) return Promise.reject(new NodeAlreadyStartedError('this worker runs a node already'))
    starting = (async () => {
      const { rpc, deployment, key, relay = [], environment = 'production', apiChannel, ...rest } = options
      const node = await createNode({
        ...rest,
        rpc,
        deployment,
        key,
        version,
        storage: (identity) => openIdbStorage(identity),
        transport: transportFor(relay, deployment),
      })
      hosted = hostNode({ node, version, environment })
      serving = serveApiChannel({ fetch: hosted.fetch, node: crypto.randomUUID(), ...(apiChannel ? { channelName: apiChannel } : {}) })
      void hosted.run()
      return { address: node.address, version }
    })()
    return starting
  },
  status(): NodeStatus | undefined {
    return hosted?.node.status
  },
  /** Stops answering (clients hear `gone`), then stops the node and closes its store. */
  async stop(): Promise<void> {
    serving?.close()
    await hosted?.stop()
  },
}

/** libp2p through the relays when there are any (loaded only then: it is most of the worker's size), else this origin. */
function transportFor(relays: string[], deployment: Deployment): TransportFactory {
  if (relays.length === 0)
    return ({ address }) =>
      createBroadcastChannelTransport({
        address,
        channelName: `sluice-${deployment.chainId}-${deployment.contracts.TokenNetworkRegistry.address.toLowerCase()}`,
      })
  return async ({ key }) => (await import('../src/transport/libp2p/libp2pTransport.ts')).createLibp2pTransport({ privateKey: key, relays })
}

export type NodeWorkerApi = typeof api
Comlink.expose(api)
