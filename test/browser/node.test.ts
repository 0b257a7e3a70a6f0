// Two Sluice nodes, each in its own module web worker with IndexedDB, talking over BroadcastChannel, on anvil.
import * as Comlink from 'comlink'
import { createTestClient, getAddress, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, expect, inject, test } from 'vitest'
import { createChainClient, createTransactionQueue, mintTokens, registerToken } from '../../src/chain/index.ts'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'
import { eventually } from '../integration/support/eventually.ts'
import type { NodeWorkerApi } from './fixtures/nodeWorker.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

const workers: Worker[] = []
function spawn(): Comlink.Remote<NodeWorkerApi> {
  const worker = new Worker(new URL('./fixtures/nodeWorker.ts', import.meta.url), { type: 'module' })
  workers.push(worker)
  return Comlink.wrap<NodeWorkerApi>(worker)
}
afterAll(() => workers.forEach((w) => w.terminate()))

test('two nodes in two workers open a channel, pay, and one resumes from IndexedDB after its worker is reloaded', async () => {
  const rpcUrl = inject('rpcUrl')
  const deployment = inject('deployment')
  const [keyA, keyB] = [generatePrivateKey(), generatePrivateKey()]
  const anvil = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
  for (const key of [keyA, keyB]) await anvil.setBalance({ address: privateKeyToAccount(key).address, value: parseEther('10') })
  // A token of this test's own, registered, and minted to A.
  const chainA = await createChainClient({ rpcUrl, privateKey: keyA, pollingInterval: 50 })
  const queue = createTransactionQueue(chainA)
  const hash = await chainA.walletClient.deployContract({ abi: CustomToken.abi, bytecode: bytecode.CustomToken, args: [10n ** 24n, 18, 'Worker Token', 'WKT'] })
  const token = getAddress((await waitForReceipt(chainA.publicClient, hash, { timeout: 20_000 })).contractAddress!)
  const { tokenNetwork } = await registerToken(chainA, queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
  await mintTokens(chainA, queue, { token, amount: 1000n })

  const channelName = `sluice-browser-${Math.random()}`
  const a = spawn()
  const b = spawn()
  const options = (privateKey: `0x${string}`) => ({ rpcUrl, deployment, privateKey, channelName })
  const [addrA, addrB] = (await Promise.all([a.start(options(keyA)), b.start(options(keyB))])) as [Address, Address]
  expect(await a.status()).toBe('ready')

  await a.openChannel(tokenNetwork, addrB, 500n)
  await b.waitForBlock(await chainA.publicClient.getBlockNumber())
  expect(await a.pay(tokenNetwork, addrB, 40n)).toBe(40n)
  expect(await a.pay(tokenNetwork, addrB, 2n)).toBe(2n)
  await eventually(async () => expect((await b.view(tokenNetwork, addrA))?.balance).toBe(42n))

  // B's worker is killed (no goodbye) and a new one opens the same IndexedDB: it resumes where it was.
  workers[1]!.terminate()
  const b2 = spawn()
  expect(await b2.start(options(keyB))).toBe(addrB)
  expect((await b2.view(tokenNetwork, addrA))?.balance).toBe(42n)
  expect(await a.pay(tokenNetwork, addrB, 8n)).toBe(8n)
  await eventually(async () => expect((await b2.view(tokenNetwork, addrA))?.balance).toBe(50n))
  const [viewA, viewB] = [await a.view(tokenNetwork, addrB), await b2.view(tokenNetwork, addrA)]
  expect(viewA).toMatchObject({ balance: 450n, ourNonce: viewB!.partnerNonce, partnerNonce: viewB!.ourNonce })
  await a.stop()
  await b2.stop()
}, 90_000)
