// The node's chain transport over several endpoints (src/chain/rpcEndpoints.ts), against the run's anvil behind
// endpoints that fail on command (test/support/faultyRpc.ts): the order, moving on, coming back, Retry-After, what is
// never retried, the cost of a black-holed endpoint, another chain refused, and eth_getLogs' range kept through faults.
import { fileURLToPath } from 'node:url'
import { createPublicClient, createTestClient, http, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, describe, expect, inject, test } from 'vitest'
import { createChainClient } from '../../../src/chain/chainClient.ts'
import { getLogsChunk, LogChunkSize } from '../../../src/chain/getLogsByChunk.ts'
import { RpcEndpoints, type RpcEndpointChange, type RpcEndpointsParameters } from '../../../src/chain/rpcEndpoints.ts'
import { rpcFailureKind } from '../../../src/chain/rpcFailure.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { startFaultyRpc, type FaultyRpc } from '../../support/faultyRpc.ts'
import { startSluice } from '../../cli/sluiceProcess.ts'

const rpcUrl = inject('rpcUrl')
const deployment = inject('deployment')
const chainId = deployment.chainId
const seed = Number(process.env.FAULTY_RPC_SEED ?? Math.floor(Math.random() * 2 ** 31))

const opened: FaultyRpc[] = []
afterEach(async () => {
  for (const rpc of opened.splice(0)) await rpc.close()
})
let otherChain: Anvil | undefined
afterAll(async () => {
  await otherChain?.stop()
})

async function faulty(target = rpcUrl): Promise<FaultyRpc> {
  const rpc = await startFaultyRpc(target, { seed })
  opened.push(rpc)
  return rpc
}

/** The endpoints started, a public client over them, and what they told. */
async function endpointsOver(rpcs: FaultyRpc[], options: Omit<RpcEndpointsParameters, 'urls' | 'onChange'> = {}) {
  const changes: RpcEndpointChange[] = []
  const endpoints = new RpcEndpoints({ urls: rpcs.map((r) => r.url), probeIntervalMs: 100, onChange: (c) => changes.push(c), ...options })
  expect(await endpoints.start(chainId)).toBe(chainId)
  const client = createPublicClient({ transport: endpoints.transport, cacheTime: 0 })
  return { endpoints, client, changes }
}

const calls = (rpc: FaultyRpc, method: string) => rpc.stats.calls[method] ?? 0
const label = (rpc: FaultyRpc, n: number) => `#${n} ${rpc.url}`

describe('several endpoints', () => {
  test('are used in order; one refusing connections is moved past, told down once, and used again once it answers', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { endpoints, client, changes } = await endpointsOver([a, b])
    for (let i = 0; i < 5; i++) await client.getBlockNumber()
    expect([calls(a, 'eth_blockNumber'), calls(b, 'eth_blockNumber')], `seed ${seed}`).toEqual([5, 0])
    expect(endpoints.health()).toMatchObject({ inUse: label(a, 1), endpoints: [{ state: 'up' }, { state: 'up' }] })

    await a.setMode('refuse')
    for (let i = 0; i < 5; i++) await client.getBlockNumber()
    expect(calls(b, 'eth_blockNumber')).toBe(5)
    // The kept-alive connection closed under the first call, or a new one refused.
    const refused = /ECONNREFUSED|other side closed|ECONNRESET/
    expect(changes).toEqual([{ endpoint: label(a, 1), state: 'down', reason: expect.stringMatching(refused) }])
    const health = endpoints.health()
    expect(health.inUse).toBe(label(b, 2))
    expect(health.endpoints[0]).toMatchObject({ endpoint: label(a, 1), state: 'down', lastFailure: { reason: expect.stringMatching(refused) } })
    expect(health.endpoints[1]!.lastSuccessAt).toBeGreaterThanOrEqual(health.endpoints[0]!.lastFailure!.at)

    await a.setMode('up')
    // Probed on the node's own calls, at most every probeIntervalMs: the first is back within a few calls.
    const inUse = async () => {
      await client.getBlockNumber()
      return endpoints.health().inUse
    }
    await expect.poll(inUse, { interval: 50, timeout: 5_000 }).toBe(label(a, 1))
    const before = calls(b, 'eth_blockNumber')
    for (let i = 0; i < 3; i++) await client.getBlockNumber()
    expect(calls(b, 'eth_blockNumber')).toBe(before)
    expect(changes.map((c) => c.state)).toEqual(['down', 'up'])
    expect(changes[1]).toMatchObject({ endpoint: label(a, 1), state: 'up', downForMs: expect.any(Number) })
  })

  test('a black-holed endpoint costs its timeout once, not on every call, nor on calls already waiting for it', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { client, changes } = await endpointsOver([a, b], { attemptTimeoutMs: 500, probeIntervalMs: 200 })
    await client.getBlockNumber()
    await a.setMode('blackhole')
    const started = performance.now()
    // Three at once, all sent to the first before it is known down: they move on together, after one timeout.
    await Promise.all([client.getBlockNumber(), client.getGasPrice(), client.getChainId()])
    const firstCalls = performance.now() - started
    for (let i = 0; i < 10; i++) await client.getBlockNumber()
    const elapsed = performance.now() - started
    expect(firstCalls).toBeGreaterThanOrEqual(450)
    // One timeout in all: the ten later calls went straight to the second endpoint.
    expect(elapsed).toBeLessThan(firstCalls + 10 * 450)
    expect([calls(a, 'eth_blockNumber'), calls(a, 'eth_gasPrice')]).toEqual([2, 1])
    expect([calls(b, 'eth_blockNumber'), calls(b, 'eth_gasPrice')]).toEqual([11, 1])
    expect(changes).toEqual([{ endpoint: label(a, 1), state: 'down', reason: 'timed out' }])
    console.log(`black-holed first endpoint: the first calls took ${Math.round(firstCalls)} ms, 10 more ${Math.round(elapsed - firstCalls)} ms`)

    await a.setMode('up')
    const told = async () => {
      await client.getBlockNumber()
      return changes.map((c) => c.state)
    }
    await expect.poll(told, { interval: 50, timeout: 5_000 }).toEqual(['down', 'up'])
  })

  test('a 429 sends the call to the next endpoint at once, and the first rests as long as its Retry-After says', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { endpoints, client } = await endpointsOver([a, b])
    a.setFaults({ failRate: 1, kinds: ['429'], retryAfterSeconds: 30 })
    for (let i = 0; i < 4; i++) await client.getBlockNumber()
    // Only the first call reached it: the 30 s of rest are honoured, even by the probes.
    expect(a.stats.failed['429']).toBe(1)
    expect(calls(b, 'eth_blockNumber')).toBe(4)
    expect(endpoints.health().endpoints[0]).toMatchObject({ state: 'down', lastFailure: { reason: 'HTTP 429' } })
  })

  test('each failure of an endpoint is told to onFailure with its kind (what the metrics count); an answer is no failure', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const told: string[] = []
    const { client } = await endpointsOver([a, b], { onFailure: ({ endpoint, failure }) => told.push(`${endpoint} ${rpcFailureKind(failure)}`) })
    a.setFaults({ failRate: 1, kinds: ['503'] })
    await client.getBlockNumber()
    expect(told).toEqual([`${label(a, 1)} http_5xx`])
    a.setFaults({ failRate: 0 })
    b.setFaults({ failRate: 1, kinds: ['429'], retryAfterSeconds: 30 })
    await a.setMode('refuse')
    await client.getBlockNumber().catch(() => {})
    expect(told.slice(1, 3).sort()).toEqual([`${label(a, 1)} connection`, `${label(b, 2)} rate_limited`])
    await a.setMode('up')
    told.length = 0
    await expect(client.call({ to: deployment.contracts.TokenNetworkRegistry.address, data: '0xdeadbeef' })).rejects.toThrow(/revert/i)
    expect(told).toEqual([])
  })

  test('a revert, "nonce too low" and bad params are answers: never retried, never sent to the next endpoint', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { client, endpoints } = await endpointsOver([a, b])
    // The registry has no such function and no fallback: it reverts.
    await expect(client.call({ to: deployment.contracts.TokenNetworkRegistry.address, data: '0xdeadbeef' })).rejects.toThrow(/revert/i)
    await expect(client.request({ method: 'eth_getBalance', params: ['0x12' as Hex, 'latest'] })).rejects.toThrow()
    expect([calls(a, 'eth_call'), calls(b, 'eth_call'), calls(a, 'eth_getBalance'), calls(b, 'eth_getBalance')]).toEqual([1, 0, 1, 0])

    const key = generatePrivateKey()
    const account = privateKeyToAccount(key)
    await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({ address: account.address, value: parseEther('1') })
    const tx = { to: account.address, value: 0n, gas: 21_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, chainId }
    const hash = await client.sendRawTransaction({ serializedTransaction: await account.signTransaction({ ...tx, nonce: 0 }) })
    // Mined first: a second nonce 0 while the first waits in the pool would be a replacement, not "nonce too low".
    await client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    const again = await account.signTransaction({ ...tx, nonce: 0, value: 1n })
    await expect(client.sendRawTransaction({ serializedTransaction: again })).rejects.toThrow(/nonce too low/)
    expect([calls(a, 'eth_sendRawTransaction'), calls(b, 'eth_sendRawTransaction')]).toEqual([2, 0])
    expect(endpoints.health().endpoints.map((e) => e.state)).toEqual(['up', 'up'])
  })

  test('a raw transaction whose first endpoint reset is sent to the next; "already known" there means it was broadcast: its hash', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { endpoints } = await endpointsOver([a, b])
    const account = privateKeyToAccount(generatePrivateKey())
    await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({ address: account.address, value: parseEther('1') })
    // Nonce 5 of a new account waits in anvil's pool: sent once more, anvil answers "transaction already imported".
    const raw = await account.signTransaction({
      to: account.address,
      value: 0n,
      gas: 21_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 1n,
      chainId,
      nonce: 5,
    })
    const direct = createPublicClient({ transport: http(rpcUrl) })
    const hash = await direct.request({ method: 'eth_sendRawTransaction', params: [raw] })
    a.setFaults({ failRate: 1, count: 1, kinds: ['reset'], methods: ['eth_sendRawTransaction'] })
    expect(await endpoints.call('eth_sendRawTransaction', [raw])).toBe(hash)
    expect([a.stats.failed.reset, calls(b, 'eth_sendRawTransaction')]).toEqual([1, 1])
    // Without a failure before it, "already known" is the endpoint's answer, as it gave it.
    await expect(endpoints.call('eth_sendRawTransaction', [raw])).rejects.toThrow(/already imported/)
  })

  test('an endpoint of another chain is refused: at start with a clear error, later never used', async () => {
    otherChain ??= await startAnvil({ chainId: 4242 })
    const [a, other] = [await faulty(), await faulty(otherChain.rpcUrl)]
    const refused = await createChainClient({ rpcUrl: [a.url, other.url], privateKey: anvilKeys[1], chainId }).catch((e: unknown) => e)
    expect(refused).toMatchObject({
      code: 'CHAIN_ID_MISMATCH',
      expected: chainId,
      actual: 4242,
      message: `the RPC endpoint ${label(other, 2)} serves chain 4242, not the configured chain ${chainId}`,
    })

    // Down at start, it is checked before any use: once it answers, it is refused and told, never used.
    await other.setMode('refuse')
    const { client, changes, endpoints } = await endpointsOver([a, other])
    await other.setMode('up')
    await a.setMode('refuse')
    await expect(client.getBlockNumber()).rejects.toThrow(/no RPC endpoint answered/)
    expect(calls(other, 'eth_blockNumber')).toBe(0)
    expect(changes).toContainEqual({ endpoint: label(other, 2), state: 'wrong chain', reason: `serves chain 4242, not chain ${chainId}` })
    expect(endpoints.health().endpoints[1]!.state).toBe('wrong chain')
  })
})

describe('one endpoint', () => {
  test("a 429's Retry-After is waited for, then the call goes on", async () => {
    const a = await faulty()
    const { client } = await endpointsOver([a])
    a.setFaults({ failRate: 1, count: 1, kinds: ['429'], retryAfterSeconds: 2, methods: ['eth_blockNumber'] })
    const started = performance.now()
    await client.getBlockNumber()
    const waited = performance.now() - started
    console.log(`Retry-After: 2 honoured: the call took ${Math.round(waited)} ms`)
    expect(waited).toBeGreaterThanOrEqual(2_000)
    expect(calls(a, 'eth_blockNumber')).toBe(2)
  })

  test('5xx, resets, JSON-RPC internal errors and a hanging request are retried with backoff; a call that cannot end fails in its time', async () => {
    const a = await faulty()
    const { client } = await endpointsOver([a], { attemptTimeoutMs: 300, retryDelayMs: 20 })
    for (const kind of ['500', '502', '503', 'reset', 'rpcError', 'hang'] as const) {
      a.setFaults({ failRate: 1, count: 2, kinds: [kind], methods: ['eth_blockNumber'] })
      expect(typeof (await client.getBlockNumber())).toBe('bigint')
      expect(a.stats.failed[kind], kind).toBe(2)
    }
    a.setFaults({ failRate: 1, kinds: ['503'], methods: ['eth_blockNumber'] })
    const short = await endpointsOver([a], { attemptTimeoutMs: 300, retryDelayMs: 20, retries: 2 })
    const before = calls(a, 'eth_blockNumber')
    const error = await short.client.getBlockNumber().catch((e: unknown) => e)
    expect(String(error)).toMatch(/no RPC endpoint answered[\s\S]*HTTP 503/)
    expect(calls(a, 'eth_blockNumber') - before).toBe(3)
    a.setFaults({ failRate: 1, kinds: ['hang'], methods: ['eth_blockNumber'] })
    const bounded = await endpointsOver([a], { attemptTimeoutMs: 200, callTimeoutMs: 1_000 })
    const started = performance.now()
    await expect(bounded.client.getBlockNumber()).rejects.toThrow(/timed out/)
    expect(performance.now() - started).toBeLessThan(1_000 + 500)
  })

  test('ws: the same endpoint over WebSocket; closed, nothing of it keeps the process alive, and a later call opens it again', async () => {
    const endpoints = new RpcEndpoints({ urls: [rpcUrl.replace(/^http/, 'ws')] })
    expect(await endpoints.start(chainId)).toBe(chainId)
    const client = createPublicClient({ transport: endpoints.transport, cacheTime: 0 })
    expect(await client.getBlockNumber()).toBeGreaterThan(0n)
    await endpoints.close()
    expect(await client.getBlockNumber()).toBeGreaterThan(0n)
    await endpoints.close()

    // A process that used a ws endpoint ends by itself once it closes them (viem's socket and keep-alive would hold it).
    const script = `
      import { RpcEndpoints } from ${JSON.stringify(fileURLToPath(new URL('../../../src/chain/rpcEndpoints.ts', import.meta.url)))}
      const endpoints = new RpcEndpoints({ urls: [${JSON.stringify(rpcUrl.replace(/^http/, 'ws'))}] })
      await endpoints.start(${chainId})
      await endpoints.call('eth_blockNumber', [])
      await endpoints.close()
      console.log('closed')`
    const child = startSluice(['--input-type=module', '-e', script], process.cwd(), ['--import', 'tsx'])
    await child.waitForOutput(/closed/, 20_000)
    const ended = await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 5_000, 'still running'))])
    if (ended === 'still running') child.child.kill()
    expect(ended).toEqual({ code: 0, signal: null })
  })
})

describe('eth_getLogs', () => {
  const registry = deployment.contracts.TokenNetworkRegistry
  const range = {
    address: [registry.address],
    eventSelectors: [] as Hex[],
    fromBlock: BigInt(registry.blockNumber),
    toBlock: BigInt(registry.blockNumber) + 999n,
  }

  test('a 429, a reset or a 5xx is retried and moved past, never taken for a range too large', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { client } = await endpointsOver([a, b])
    const chunkSize = new LogChunkSize({ initial: 1000n, min: 10n })
    for (const kind of ['429', 'reset', '503'] as const) {
      a.setFaults({ failRate: 1, count: 1, kinds: [kind], methods: ['eth_getLogs'], retryAfterSeconds: 0 })
      expect((await getLogsChunk(client, { ...range, chunkSize })).toBlock).toBe(range.toBlock)
      expect(chunkSize.current, kind).toBe(1000n)
    }
    // Every endpoint failing: the chunk fails, and the range learnt stays.
    for (const rpc of [a, b]) rpc.setFaults({ failRate: 1, kinds: ['503'], methods: ['eth_getLogs'] })
    const short = await endpointsOver([a, b], { retries: 1, retryDelayMs: 10 })
    await expect(getLogsChunk(short.client, { ...range, chunkSize })).rejects.toMatchObject({ code: 'CHAIN_RPC', method: 'eth_getLogs' })
    expect(chunkSize.current).toBe(1000n)
  })

  test('a range that times out on an endpoint that answers otherwise is halved, and the endpoint stays in use', async () => {
    const [a, b] = [await faulty(), await faulty()]
    const { client, endpoints } = await endpointsOver([a, b], { attemptTimeoutMs: 400 })
    a.setFaults({ failRate: 1, count: 1, kinds: ['hang'], methods: ['eth_getLogs'] })
    const chunkSize = new LogChunkSize({ initial: 1000n, min: 10n })
    expect((await getLogsChunk(client, { ...range, chunkSize })).toBlock).toBe(range.fromBlock + 499n)
    expect(chunkSize.current).toBe(500n)
    expect(calls(b, 'eth_getLogs')).toBe(0)
    expect(endpoints.health().inUse).toBe(label(a, 1))
  })
})

describe('a wallet (EIP-1193 provider)', () => {
  /** A provider over the run's anvil whose next answers can be made to fail as wallets' do; it counts what it is asked. */
  function walletOverAnvil() {
    const calls: Record<string, number> = {}
    const failNext: ('never' | 'limit' | 'metamask429')[] = []
    let chain: number | undefined
    const provider = {
      calls,
      failNext,
      switchChain: (id: number | undefined) => {
        chain = id
      },
      async request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
        calls[method] = (calls[method] ?? 0) + 1
        if (method === 'eth_chainId' && chain !== undefined) return `0x${chain.toString(16)}`
        const fault = failNext.shift()
        if (fault === 'never') return new Promise(() => {})
        if (fault === 'limit') throw { code: -32005, message: 'Request limit exceeded.' }
        // MetaMask's way of passing on its RPC's 429.
        if (fault === 'metamask429') throw { code: -32603, message: 'Internal JSON-RPC error.', data: { code: 429, message: 'Too Many Requests' } }
        const response = await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
        const body = (await response.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } }
        if (body.error) throw body.error
        return body.result
      },
    }
    return provider
  }

  test("overload errors and a request it never answers are retried within bounds; a revert is not; another chain's is refused", async () => {
    const wallet = walletOverAnvil()
    const changes: RpcEndpointChange[] = []
    const endpoints = new RpcEndpoints({ provider: wallet, attemptTimeoutMs: 300, retryDelayMs: 20, probeIntervalMs: 50, onChange: (c) => changes.push(c) })
    expect(await endpoints.start(chainId)).toBe(chainId)
    const client = createPublicClient({ transport: endpoints.transport, cacheTime: 0 })
    wallet.failNext.push('never', 'limit', 'metamask429')
    expect(await client.getBlockNumber()).toBeGreaterThan(0n)
    expect(wallet.calls.eth_blockNumber).toBe(4)

    await expect(client.call({ to: deployment.contracts.TokenNetworkRegistry.address, data: '0xdeadbeef' })).rejects.toThrow(/revert/i)
    expect(wallet.calls.eth_call).toBe(1)

    // Its user switches networks: the node's calls are refused until it is back on the chain.
    const quick = new RpcEndpoints({ provider: wallet, providerChainCheckMs: 0, probeIntervalMs: 50, onChange: (c) => changes.push(c) })
    await quick.start(chainId)
    const followed = createPublicClient({ transport: quick.transport, cacheTime: 0 })
    wallet.switchChain(1)
    const before = wallet.calls.eth_blockNumber
    await expect(followed.getBlockNumber()).rejects.toThrow(/serves chain 1, not chain/)
    expect(wallet.calls.eth_blockNumber).toBe(before)
    expect(changes.at(-1)).toEqual({ endpoint: 'the wallet (EIP-1193 provider)', state: 'wrong chain', reason: `serves chain 1, not chain ${chainId}` })
    wallet.switchChain(undefined)
    await expect
      .poll(
        () =>
          followed.getBlockNumber().then(
            () => 'answered',
            () => 'refused',
          ),
        { interval: 60, timeout: 5_000 },
      )
      .toBe('answered')
    expect(changes.at(-1)).toMatchObject({ state: 'up' })
  })
})
