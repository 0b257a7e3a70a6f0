import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createApi, type Api } from '../../../src/api/app.ts'
import type { Environment } from '../../../src/api/context.ts'
import { listen, type HttpServer } from '../../../src/cli/httpServer.ts'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { createNode } from '../../../src/node/createNode.ts'
import type { SluiceNode } from '../../../src/node/sluiceNode.ts'
import type { NodeConfig } from '../../../src/node/nodeConfig.ts'
import { openMemoryStorage } from '../../../src/storage/memoryStorage.ts'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { startDevnet, startNode, type Devnet, type StartNodeOptions } from '../../integration/support/devnet.ts'

export type Reply = { status: number; body: any; text: string; headers: Headers }

/** A client of one node's REST API over real HTTP. */
export type ApiClient = {
  url: string
  request(method: string, path: string, body?: unknown): Promise<Reply>
  get(path: string): Promise<Reply>
}

export type ApiNode = ApiClient & { node: SluiceNode; api: Api; server: HttpServer; internalErrors: unknown[]; shutdowns: number }

export type ApiNet = Devnet & {
  nodes: ApiNode[]
  /** Resolves once every node has synced the chain's current head. */
  synced(): Promise<void>
  stopAll(): Promise<void>
}

export function apiClient(url: string): ApiClient {
  const request = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } }
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body)
    const response = await fetch(`${url}${path}`, init)
    const text = await response.text()
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    return { status: response.status, body: parsed, text, headers: response.headers }
  }
  return { url, request, get: (path) => request('GET', path) }
}

/** Serves one started node's API over HTTP on a free port. */
export async function serveNode(
  node: SluiceNode,
  { environment = 'development', eventLogCapacity }: { environment?: Environment; eventLogCapacity?: number } = {},
): Promise<ApiNode> {
  const internalErrors: unknown[] = []
  let out!: ApiNode
  const api = createApi({
    node,
    version: '0.1.0',
    environment,
    ...(eventLogCapacity ? { eventLogCapacity } : {}),
    shutdown: () => {
      out.shutdowns++
      api.shuttingDown()
    },
    onInternalError: (error) => internalErrors.push(error),
  })
  const server = await listen(api.app.fetch, { host: '127.0.0.1', port: 0 })
  const client = apiClient(`${server.url}/api/v1`)
  out = { ...client, node, api, server, internalErrors, shutdowns: 0 }
  return out
}

export type StartApiNetOptions = { nodes?: number; environment?: Environment; node?: StartNodeOptions }

/** anvil with the contracts and TTT registered, and `nodes` nodes (funded dev keys 1..n), each served over HTTP. */
export async function startApiNet({ nodes = 2, environment, node: nodeOptions }: StartApiNetOptions = {}): Promise<ApiNet> {
  const keys = anvilKeys.slice(1, 1 + nodes) as Hex[]
  const net = await startDevnet(keys)
  const started: ApiNode[] = []
  for (const key of keys) started.push(await serveNode(await startNode(net, key, nodeOptions), environment ? { environment } : {}))
  return {
    ...net,
    nodes: started,
    synced: async () => {
      const head = await started[0]!.node.client.chain.publicClient.getBlockNumber()
      await Promise.all(started.map((n) => n.node.client.waitForBlock(head)))
    },
    stopAll: async () => {
      for (const n of started) {
        await n.server.close(100)
        await n.node.stop()
      }
      await net.stop()
    },
  }
}

/**
 * A node on the net's chain and channel, with memory storage, created but not run (`node.run()` catches up with
 * the chain): for tests of what the API says while a node syncs.
 */
export const createApiNode = (net: Devnet, key: Hex, options: Partial<NodeConfig> = {}) =>
  createNode({
    rpc: net.anvil.rpcUrl,
    deployment: net.deployment,
    key,
    storage: (identity) => openMemoryStorage(identity),
    transport: ({ address }) => createBroadcastChannelTransport({ address, channelName: net.channelName }),
    confirmations: 0,
    pollingInterval: 50,
    ...options,
  })

export const addressOf = (key: Hex) => privateKeyToAddress(key)
