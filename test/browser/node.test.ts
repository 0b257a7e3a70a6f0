// Two Sluice nodes, each in its own module web worker with IndexedDB, talking over BroadcastChannel, on anvil.
import * as Comlink from 'comlink'
import { createTestClient, getAddress, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, expect, inject, onTestFailed, test } from 'vitest'
import { createChainClient, createTransactionQueue, mintTokens, registerToken } from '../../src/chain/index.ts'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'
import { eventually } from '../integration/support/eventually.ts'
import type { NodeWorkerApi } from './fixtures/nodeWorker.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

/** The node workers running now, by name. */
const running = new Map<string, { worker: Worker; node: Comlink.Remote<NodeWorkerApi>; errors: string[] }>()
function spawn(name: string): Comlink.Remote<NodeWorkerApi> {
  const worker = new Worker(new URL('./fixtures/nodeWorker.ts', import.meta.url), { type: 'module' })
  const node = Comlink.wrap<NodeWorkerApi>(worker)
  const errors: string[] = []
  // A worker whose module fails to load never answers: Comlink's calls would wait for ever, so a failure says so.
  worker.addEventListener('error', (e) => errors.push(`worker error: ${e.message || 'its module did not load'}`))
  worker.addEventListener('messageerror', () => errors.push('a message could not be read'))
  running.set(name, { worker, node, errors })
  return node
}
/** Ends the worker at once, as a crash or a closed tab does (no goodbye). */
function kill(name: string): void {
  running.get(name)?.worker.terminate()
  running.delete(name)
}
afterAll(() => [...running.keys()].forEach(kill))

/** The test's step, and what a failure (a timeout above all) prints: the step and what each node says of itself. */
function steps(): (step: string) => void {
  let current = 'setup'
  onTestFailed(async () => {
    const said = await Promise.all(
      [...running].map(async ([name, { node, errors }]) => {
        const answer = await Promise.race([node.diagnose(), new Promise((r) => setTimeout(() => r('no answer in 5 s'), 5000))])
        return `${name}: ${[...errors, answer].join('; ')}`
      }),
    )
    console.error(`failed at "${current}"\n${said.join('\n')}`)
  })
  return (step) => {
    current = step
  }
}

test('two nodes in two workers open a channel, pay, and one resumes from IndexedDB after its worker is reloaded', async () => {
  const step = steps()
  const rpcUrl = inject('rpcUrl')
  const deployment = inject('deployment')
  const [keyA, keyB] = [generatePrivateKey(), generatePrivateKey()]
  const anvil = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
  for (const key of [keyA, keyB]) await anvil.setBalance({ address: privateKeyToAccount(key).address, value: parseEther('10') })
  // A token of this test's own, registered, and minted to A.
  step('a token of its own')
  const chainA = await createChainClient({ rpcUrl, privateKey: keyA, pollingInterval: 50 })
  const queue = createTransactionQueue(chainA)
  const hash = await chainA.walletClient.deployContract({ abi: CustomToken.abi, bytecode: bytecode.CustomToken, args: [10n ** 24n, 18, 'Worker Token', 'WKT'] })
  const token = getAddress((await waitForReceipt(chainA.publicClient, hash, { timeout: 20_000 })).contractAddress!)
  const { tokenNetwork } = await registerToken(chainA, queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
  await mintTokens(chainA, queue, { token, amount: 1000n })

  const channelName = `sluice-browser-${Math.random()}`
  const a = spawn('a')
  const b = spawn('b')
  const options = (privateKey: `0x${string}`) => ({ rpcUrl, deployment, privateKey, channelName })
  step('both nodes start')
  const [addrA, addrB] = (await Promise.all([a.start(options(keyA)), b.start(options(keyB))])) as [Address, Address]
  expect(await a.status()).toBe('ready')

  step('A opens a channel')
  await a.openChannel(tokenNetwork, addrB, 500n)
  step('B sees the channel')
  await b.waitForBlock(await chainA.publicClient.getBlockNumber())
  step('A pays 40 and 2')
  expect(await a.pay(tokenNetwork, addrB, 40n)).toBe(40n)
  expect(await a.pay(tokenNetwork, addrB, 2n)).toBe(2n)
  step('B sees 42')
  await eventually(async () => expect((await b.view(tokenNetwork, addrA))?.balance).toBe(42n))

  // B's worker is killed (no goodbye) and a new one opens the same IndexedDB: it resumes where it was.
  kill('b')
  const b2 = spawn('b2')
  step('B starts again')
  expect(await b2.start(options(keyB))).toBe(addrB)
  expect((await b2.view(tokenNetwork, addrA))?.balance).toBe(42n)
  step('A pays 8 to the resumed B')
  expect(await a.pay(tokenNetwork, addrB, 8n)).toBe(8n)
  step('B sees 50')
  await eventually(async () => expect((await b2.view(tokenNetwork, addrA))?.balance).toBe(50n))
  const [viewA, viewB] = [await a.view(tokenNetwork, addrB), await b2.view(tokenNetwork, addrA)]
  expect(viewA).toMatchObject({ balance: 450n, ourNonce: viewB!.partnerNonce, partnerNonce: viewB!.ourNonce })
  step('both stop')
  await a.stop()
  await b2.stop()
}, 90_000)
