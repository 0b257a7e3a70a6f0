// A Sluice node in its own worker thread, driven by the benchmark over a tiny request/response protocol.
import { parentPort, workerData } from 'node:worker_threads'
import type { Address, Hex } from 'viem'
import type { Deployment } from '../src/chain/deployment.ts'
import { createNode } from '../src/node/createNode.ts'
import { useNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { openLevelStorage } from '../src/storage/levelStorage.ts'
import { createBroadcastChannelTransport } from '../src/transport/broadcastChannelTransport.ts'
import { openChannelOnChain } from '../src/node/actions/channels.ts'
import { sendPayment } from '../src/node/actions/payments.ts'

const { rpcUrl, deployment, key, dataDir, channelName } = workerData as {
  rpcUrl: string
  deployment: Deployment
  key: Hex
  dataDir: string
  channelName: string
}

await useNativeSecp256k1()
const node = await createNode({
  rpc: rpcUrl,
  deployment,
  key,
  storage: (identity) => openLevelStorage(identity, { dataDir }),
  transport: ({ address }) => createBroadcastChannelTransport({ address, channelName }),
  confirmations: 0,
  pollingInterval: 100,
  defaultRevealTimeout: 50,
  defaultSettleTimeout: 500,
  backoff: { initialMs: 2000, maxMs: 10_000 },
})
await node.run()

type Request = { id: number; method: string; args: unknown[] }
const methods: Record<string, (...args: never[]) => Promise<unknown>> = {
  address: async () => node.address,
  openChannel: async (tokenNetwork: Address, partner: Address, totalDeposit: bigint) => {
    await openChannelOnChain(node.client, { tokenNetwork, partner, totalDeposit })
  },
  waitForBlock: async (block: bigint) => node.client.waitForBlock(block),
  /** `count` payments to `target` with `inFlight` at a time; returns each one's latency in ms. */
  payMany: async (tokenNetwork: Address, target: Address, count: number, inFlight: number) => {
    const latencies: number[] = []
    const token = node.state.tokenNetworks[tokenNetwork]!.token
    let next = 0
    const lane = async () => {
      while (next < count) {
        next++
        const t0 = performance.now()
        await sendPayment(node.client, { token, target, amount: 1n })
        latencies.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: inFlight }, lane))
    return latencies
  },
  cpu: async () => process.cpuUsage(),
  stop: async () => node.stop(),
}

parentPort!.on('message', async ({ id, method, args }: Request) => {
  try {
    parentPort!.postMessage({ id, result: await methods[method]!(...(args as never[])) })
  } catch (error) {
    parentPort!.postMessage({ id, error: String(error) })
  }
})
parentPort!.postMessage({ ready: true })
