// The page's startNode with several endpoints in a real Chromium: the first is down when the node starts, the node
// starts and works through the second, and reads through the first once it answers; bad endpoints are refused.
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, afterEach, beforeEach, expect, inject, test, vi } from 'vitest'
import { commands } from 'vitest/browser'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import { nodeOptions } from './support/nodeOptions.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
let started: SluiceBrowserNode | undefined
let lines: string[]

beforeEach(() => {
  lines = []
  const original = console.info.bind(console)
  vi.spyOn(console, 'info').mockImplementation((...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('[sluice] ')) lines.push(args[0])
    else original(...args)
  })
})
afterEach(async () => {
  await started?.stop()
  started = undefined
  vi.restoreAllMocks()
})
afterAll(() => commands.stopFaultyEndpoints())

test('rpc: [a, b] whose first is down: the node starts and works through the second, and uses the first once it answers', async () => {
  const first = await commands.startFaultyEndpoint(rpc, 'refuse')
  const second = await commands.startFaultyEndpoint(rpc)
  const key = generatePrivateKey()
  const address = privateKeyToAddress(key)
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('1') })
  const node = await startNode(nodeOptions({ key, rpc: [first, second], logLevel: 'info' }))
  started = node
  expect(await node.status()).toEqual({ status: 'ready' })
  // A transaction, through the second endpoint.
  await node.mint(deployment.tokens.TTT!, { to: address, value: 7n })
  expect((await commands.faultyEndpointCalls(second)).eth_sendRawTransaction).toBe(1)
  expect((await commands.faultyEndpointCalls(first)).eth_sendRawTransaction).toBeUndefined()

  await commands.setFaultyEndpointMode(first, 'up')
  await expect.poll(() => lines.some((l) => /INFO +RPC endpoint #1 http:\/\/127\.0\.0\.1:\d+ answers again/.test(l)), { timeout: 15_000 }).toBe(true)
  // The node reads the chain through the first again: its block polls go there, no more to the second.
  const polls = async () => [
    (await commands.faultyEndpointCalls(first)).eth_blockNumber ?? 0,
    (await commands.faultyEndpointCalls(second)).eth_blockNumber ?? 0,
  ]
  const inUse = async () => {
    const [a0, b0] = await polls()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const [a1, b1] = await polls()
    return a1! > a0! && b1 === b0 ? 'first' : b1! > b0! && a1 === a0 ? 'second' : 'both or neither'
  }
  await expect.poll(inUse, { timeout: 10_000 }).toBe('first')
  await node.mint(deployment.tokens.TTT!, { to: address, value: 7n })
  expect((await commands.faultyEndpointCalls(first)).eth_sendRawTransaction).toBe(1)
}, 60_000)

test('bad endpoints are refused before anything starts: INVALID_OPTIONS', async () => {
  for (const bad of [['http://127.0.0.1:8545', 'localhost:8545'], [], 'http://a,ftp://b', ['http://a', 5]])
    await expect(startNode(nodeOptions({ rpc: bad as string[] })), JSON.stringify(bad)).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringMatching(/^rpc must be an http\(s\) or ws\(s\) URL, or a list of them/),
    })
})
