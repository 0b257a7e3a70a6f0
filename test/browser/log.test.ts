// The node's log in a real Chromium (worker/pageLog.ts): the worker's records reach the page's console at their
// level, filtered by startNode's logLevel in the worker, and a node that stops on its own says why at `error`.
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, beforeEach, expect, inject, test, vi } from 'vitest'
import { storageName } from '../../src/storage/identity.ts'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import { deleteDatabase } from './support/indexedDb.ts'
import { nodeOptions } from './support/nodeOptions.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const METHODS = ['debug', 'info', 'log', 'warn', 'error'] as const
type Method = (typeof METHODS)[number]

let started: SluiceBrowserNode | undefined
let lines: { method: Method; line: string }[]

beforeEach(() => {
  lines = []
  for (const method of METHODS) {
    const original = console[method].bind(console)
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].startsWith('[sluice] ')) lines.push({ method, line: args[0] })
      else original(...args)
    })
  }
})
afterEach(async () => {
  await started?.stop()
  started = undefined
  vi.restoreAllMocks()
})

/** Starts a node with a funded key; resolves once its database is deleted under it and the page heard it stop. */
async function startThenLoseDatabase(logLevel?: 'info') {
  const key = generatePrivateKey()
  const address = privateKeyToAddress(key)
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('1') })
  const node = await startNode(nodeOptions({ key, ...(logLevel ? { logLevel } : {}) }))
  started = node
  const stopped = new Promise<void>((resolve) => node.onStopped(() => resolve()))
  await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
  await stopped
  // The worker's lines come over their own port: the one that says why it stopped is the last to wait for.
  await expect.poll(() => lines.some((l) => l.method === 'error' && /the node stops on its own/.test(l.line)), { timeout: 10_000 }).toBe(true)
  return address
}

const clockAndLevel = (level: string) => new RegExp(`^\\[sluice\\] \\d\\d:\\d\\d:\\d\\d\\.\\d{3} ${level.padEnd(5)} `)

test("logLevel info: the worker's start and sync reach console.info, a stop on its own console.error; nothing at debug", async () => {
  const address = await startThenLoseDatabase('info')
  const info = lines.filter((l) => l.method === 'info').map((l) => l.line)
  expect(info).toContainEqual(expect.stringMatching(new RegExp(`${clockAndLevel('INFO').source}Sluice node started address=${address} `)))
  expect(info).toContainEqual(expect.stringMatching(new RegExp(`${clockAndLevel('INFO').source}Ready: synced to block \\d+ event=status$`)))
  const error = lines.filter((l) => l.method === 'error').map((l) => l.line)
  expect(error).toContainEqual(expect.stringMatching(new RegExp(`${clockAndLevel('ERROR').source}the node stops on its own reason=".*database was taken away`)))
  // Each line went to the console method of its level, and none below the threshold was sent.
  for (const { method, line } of lines) expect(line).toMatch(clockAndLevel(method.toUpperCase()))
  expect(lines.map((l) => l.method)).not.toContain('debug')
  expect(lines.map((l) => l.method)).not.toContain('log')
}, 60_000)

test('by default (warn) the same run writes only its error: no start, sync or status lines', async () => {
  await startThenLoseDatabase()
  expect(lines.length).toBeGreaterThan(0)
  for (const { method } of lines) expect(['warn', 'error']).toContain(method)
}, 60_000)

test('a logLevel that does not exist is refused before anything starts', async () => {
  await expect(startNode(nodeOptions({ logLevel: 'verbose' as 'info' }))).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
})
