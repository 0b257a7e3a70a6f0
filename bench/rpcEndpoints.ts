// `npx tsx bench/rpcEndpoints.ts`: viem's `fallback` transport (without and with `rank`) against the node's
// RpcEndpoints (src/chain/rpcEndpoints.ts), on anvil behind two test/support/faultyRpc.ts endpoints: what a
// black-holed first endpoint costs, whether the operator's order holds, whether the first is used again once it
// recovers, and whether an answer ("nonce too low") is sent on to the second. The figures are in
// docs/decisions/0052-rpc-endpoints.md. Not part of `npm run bench`: it measures a choice, made once.
import { createPublicClient, createTestClient, fallback, http, parseEther, type Transport } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { RpcEndpoints } from '../src/chain/rpcEndpoints.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { startFaultyRpc, type FaultyRpc } from '../test/support/faultyRpc.ts'

const TIMEOUT_MS = 1_000
const CALLS = 10

type Candidate = { name: string; transport: (a: FaultyRpc, b: FaultyRpc) => Promise<Transport> }

const candidates: Candidate[] = [
  {
    name: 'viem fallback',
    transport: async (a, b) => fallback([http(a.url, { timeout: TIMEOUT_MS }), http(b.url, { timeout: TIMEOUT_MS })]),
  },
  {
    name: 'viem fallback, rank (every 200 ms)',
    transport: async (a, b) =>
      fallback([http(a.url, { timeout: TIMEOUT_MS }), http(b.url, { timeout: TIMEOUT_MS })], { rank: { interval: 200, timeout: TIMEOUT_MS } }),
  },
  {
    name: 'RpcEndpoints (ours)',
    transport: async (a, b) => {
      const endpoints = new RpcEndpoints({ urls: [a.url, b.url], attemptTimeoutMs: TIMEOUT_MS, probeIntervalMs: 200 })
      await endpoints.start(31337)
      return endpoints.transport
    },
  },
]

const anvil = await startAnvil()
const rows: string[] = []
try {
  for (const candidate of candidates) {
    const a = await startFaultyRpc(anvil.rpcUrl, { seed: 1 })
    const b = await startFaultyRpc(anvil.rpcUrl, { seed: 2 })
    const count = (rpc: FaultyRpc) => rpc.stats.calls.eth_blockNumber ?? 0
    try {
      const client = createPublicClient({ transport: await candidate.transport(a, b), cacheTime: 0 })
      // The order: the first answers 20 ms slower than the second, and is healthy.
      a.setFaults({ delayMs: 20 })
      await new Promise((r) => setTimeout(r, 1_000))
      for (let i = 0; i < CALLS; i++) await client.getBlockNumber()
      const inOrder = `${count(a)} of ${CALLS} to the first`
      a.setFaults({})

      // A black hole: connections taken, never answered.
      await a.setMode('blackhole')
      const before = count(a)
      const started = performance.now()
      for (let i = 0; i < CALLS; i++) await client.getBlockNumber()
      const blackholed = `${Math.round(performance.now() - started)} ms, ${count(a) - before} reached the first`

      // Back up: is the first used again?
      await a.setMode('up')
      await new Promise((r) => setTimeout(r, 1_000))
      const beforeBack = count(a)
      for (let i = 0; i < CALLS; i++) await client.getBlockNumber()
      const back = `${count(a) - beforeBack} of ${CALLS} to the first`

      // An answer: "nonce too low" for a raw transaction whose nonce is used.
      const account = privateKeyToAccount(generatePrivateKey())
      await createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) }).setBalance({ address: account.address, value: parseEther('1') })
      const tx = { to: account.address, gas: 21_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, chainId: 31337, nonce: 0 }
      await client.sendRawTransaction({ serializedTransaction: await account.signTransaction({ ...tx, value: 0n }) })
      const sent = () => (a.stats.calls.eth_sendRawTransaction ?? 0) + (b.stats.calls.eth_sendRawTransaction ?? 0)
      const sentBefore = sent()
      await client.sendRawTransaction({ serializedTransaction: await account.signTransaction({ ...tx, value: 1n }) }).catch(() => {})
      const answer = `${sent() - sentBefore} endpoint(s) asked`

      rows.push(`| ${candidate.name} | ${inOrder} | ${blackholed} | ${back} | ${answer} |`)
    } finally {
      await a.close()
      await b.close()
    }
  }
} finally {
  await anvil.stop()
}
console.log(`${CALLS} eth_blockNumber calls each; attempt timeout ${TIMEOUT_MS} ms\n`)
console.log('| transport | first 20 ms slower, healthy | first black-holed | first back up | "nonce too low" |')
console.log('| --- | --- | --- | --- | --- |')
for (const row of rows) console.log(row)
// viem's rank loop has no stop: it would keep the process alive.
process.exit(0)
