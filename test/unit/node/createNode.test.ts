import { createPublicClient, http, type EIP1193Provider } from 'viem'
import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { createNode } from '../../../src/node/createNode.ts'
import type { Storage, StorageIdentity } from '../../../src/storage/storage.ts'
import { StorageLockedError } from '../../../src/storage/storage.ts'
import { openMemoryStorage } from '../../../src/storage/memoryStorage.ts'
import { devnetNodeConfig, startDevnet, type Devnet } from '../../integration/support/devnet.ts'

// createNode's first step (docs/decisions/0080): the chain and the store open side by side, and whichever fails,
// what the other opened is closed again.

let net: Devnet
beforeAll(async () => {
  net = await startDevnet([])
}, 60_000)
afterAll(async () => {
  await net?.stop()
})

const key = anvilKeys[4]!

/** A memory store that tells when it was closed. */
function watchedStorage() {
  const seen = { opened: 0, closed: 0 }
  const open = async (identity: StorageIdentity): Promise<Storage> => {
    const storage = await openMemoryStorage(identity)
    seen.opened++
    const close = storage.close.bind(storage)
    storage.close = async () => {
      seen.closed++
      await close()
    }
    return storage
  }
  return { seen, open }
}

/** anvil as an EIP-1193 provider that records the methods asked of it. */
function recordingProvider() {
  const asked: string[] = []
  const client = createPublicClient({ transport: http(net.anvil.rpcUrl) })
  const provider = {
    request: async (args: { method: string; params?: unknown }) => {
      asked.push(args.method)
      return client.request(args as never)
    },
  } as unknown as EIP1193Provider
  return { asked, provider }
}

describe('createNode opens the chain and the store', () => {
  test('side by side: the store is opened while the chain is still asked for the registry, not after', async () => {
    const { asked, provider } = recordingProvider()
    const { seen, open } = watchedStorage()
    let storeAsked = false
    // The registry's code is answered only once the store is being opened: one after the other, it never would be.
    const waiting: EIP1193Provider = {
      ...provider,
      request: (async (args: { method: string; params?: unknown }) => {
        if (args.method === 'eth_getCode') {
          const deadline = Date.now() + 10_000
          while (!storeAsked) {
            if (Date.now() > deadline) throw new Error('the store was not opened beside the chain')
            await new Promise((r) => setTimeout(r, 5))
          }
        }
        return provider.request(args as never)
      }) as EIP1193Provider['request'],
    } as EIP1193Provider
    const node = await createNode({
      ...devnetNodeConfig(net, key),
      rpc: undefined,
      provider: waiting,
      storage: (identity) => {
        storeAsked = true
        return open(identity)
      },
    })
    expect(asked).toContain('eth_getCode')
    expect(seen).toEqual({ opened: 1, closed: 0 })
    await node.stop()
    expect(seen.closed).toBe(1)
  })

  test('no registry where the deployment says: DeploymentMismatchError, and the store opened beside it is closed again', async () => {
    const { seen, open } = watchedStorage()
    const wrong = structuredClone(net.deployment)
    wrong.contracts.TokenNetworkRegistry.address = '0x000000000000000000000000000000000000dEaD'
    await expect(createNode({ ...devnetNodeConfig(net, key), deployment: wrong, storage: open })).rejects.toMatchObject({ code: 'DEPLOYMENT_MISMATCH' })
    expect(seen).toEqual({ opened: 1, closed: 1 })
  })

  test('no registry, over a WebSocket endpoint: the chain client opened is closed again (its socket would keep the process alive)', async () => {
    // A TCP proxy in front of anvil: it sees the client's WebSocket connections open and close.
    const anvil = new URL(net.anvil.rpcUrl)
    const open = new Set<Socket>()
    const proxy = createServer((client) => {
      open.add(client)
      const upstream = connect(Number(anvil.port), anvil.hostname)
      client.pipe(upstream).pipe(client)
      const end = () => {
        open.delete(client)
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end).on('error', end)
      upstream.on('close', end).on('error', end)
    })
    proxy.listen(0, '127.0.0.1')
    await once(proxy, 'listening')
    try {
      const wrong = structuredClone(net.deployment)
      wrong.contracts.TokenNetworkRegistry.address = '0x000000000000000000000000000000000000dEaD'
      const rpc = `ws://127.0.0.1:${(proxy.address() as AddressInfo).port}`
      let connected = false
      proxy.once('connection', () => {
        connected = true
      })
      await expect(createNode({ ...devnetNodeConfig(net, key), rpc, deployment: wrong, storage: openMemoryStorage })).rejects.toMatchObject({
        code: 'DEPLOYMENT_MISMATCH',
      })
      expect(connected).toBe(true)
      for (const deadline = Date.now() + 5_000; open.size > 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20))
      expect(open.size, 'connections the failed start left open').toBe(0)
    } finally {
      for (const c of open) c.destroy()
      proxy.close()
    }
  })

  test("a store that fails is the error when the chain answers; when both fail, the chain's error wins", async () => {
    const locked = async () => {
      throw new StorageLockedError('another tab holds the store')
    }
    await expect(createNode({ ...devnetNodeConfig(net, key), storage: locked })).rejects.toMatchObject({ code: 'STORAGE_LOCKED' })
    const wrong = structuredClone(net.deployment)
    wrong.contracts.TokenNetworkRegistry.address = '0x000000000000000000000000000000000000dEaD'
    await expect(createNode({ ...devnetNodeConfig(net, key), deployment: wrong, storage: locked })).rejects.toMatchObject({ code: 'DEPLOYMENT_MISMATCH' })
  })
})
