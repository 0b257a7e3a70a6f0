import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { encryptKeystore } from '../../src/chain/keystore.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { startRelay } from '../../src/transport/libp2p/relay.ts'
import { startNode, type HeadlessNode, type PushEvent, type StartNodeOptions } from '../../src/headless/index.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'

/**
 * @sluice/node's startNode against a real anvil with the real contracts: two nodes in this process (the broadcast
 * transport reaches nodes of one process), a channel and a payment seen on both, a restart from the same dataDir.
 */
const keyA = anvilKeys[1] as Hex
const keyB = anvilKeys[2] as Hex
/** A pair that meets through a relay. */
const keyC = anvilKeys[7] as Hex
const keyD = anvilKeys[8] as Hex
let net: Devnet
let deploymentFile: string
const dirs: string[] = []
const started: HeadlessNode[] = []

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-node-api-'))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  net = await startDevnet([keyA, keyB, keyC, keyD])
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
})
afterAll(async () => {
  await Promise.all(started.map((node) => node.stop()))
  await net?.stop()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Fast settings for a test chain, as `sluice serve --confirmations 0 --polling-interval 50` would take. */
const base = (): StartNodeOptions => ({
  rpc: net.anvil.rpcUrl,
  deployment: deploymentFile,
  confirmations: 0,
  pollingInterval: 50,
  defaultRevealTimeout: 10,
  defaultSettleTimeout: 40,
  environment: 'development',
  logLevel: 'silent',
})

async function start(options: StartNodeOptions): Promise<HeadlessNode> {
  const node = await startNode(options)
  started.push(node)
  return node
}

/** A port nothing listens on (taken from the OS, then let go). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const refused = (url: string) =>
  fetch(url).then(
    () => false,
    () => true,
  )

/** The error a promise rejects with (the test fails if it resolves). */
async function failure(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  return promise.then(
    () => expect.unreachable('it should have failed'),
    (e: { code?: string; message: string }) => e,
  )
}

describe('startNode (the Node API of @sluice/node)', () => {
  test('two nodes open a channel and pay; both see the payment, the payee in its event stream too; the state resumes from dataDir', async () => {
    const dataA = join(tempDir(), 'a')
    const dataB = join(tempDir(), 'b')
    // The deployment as a file's path for one, as the parsed JSON for the other.
    const a = await start({ ...base(), key: keyA, dataDir: dataA })
    let b = await start({ ...base(), deployment: net.deployment, key: keyB, dataDir: dataB })
    expect(a.address).toBe(privateKeyToAddress(keyA))
    expect(b.address).toBe(privateKeyToAddress(keyB))
    expect(a.apiUrl).toBeUndefined()
    // waitForSync (the default): every endpoint answers at once.
    expect(await a.status()).toEqual({ status: 'ready' })

    const events: PushEvent[] = []
    const off = b.subscribe((event) => events.push(event))
    const channel = await a.openChannel({ token_address: net.token, partner_address: b.address, total_deposit: 100n })
    expect(channel).toMatchObject({ partner_address: b.address, total_deposit: '100', state: 'opened' })
    await eventually(async () => expect(await b.channel(net.token, a.address)).toMatchObject({ state: 'opened', total_deposit: '0' }))

    const paid = await a.pay(net.token, b.address, { amount: 5n, identifier: 42n })
    expect(paid).toMatchObject({ amount: '5', identifier: '42', initiator_address: a.address, target_address: b.address })
    expect(await a.payments({ token: net.token, partner: b.address })).toEqual([
      expect.objectContaining({ event: 'EventPaymentSentSuccess', amount: '5', identifier: '42' }),
    ])
    await eventually(async () =>
      expect(await b.payments({ token: net.token })).toEqual([
        expect.objectContaining({ event: 'EventPaymentReceivedSuccess', amount: '5', identifier: '42' }),
      ]),
    )
    await eventually(() => expect(events).toContainEqual(expect.objectContaining({ event: 'payment_received_success' })))
    off()
    expect((await b.channel(net.token, a.address)).balance).toBe('5')
    // Unsubscribed, the listener hears no more (in-process, the stream is ended with its request).
    const heard = events.length
    await a.pay(net.token, b.address, { amount: 1n })
    await eventually(async () => expect((await b.channel(net.token, a.address)).balance).toBe('6'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(events).toHaveLength(heard)

    // Stopped and started again on the same store: the channel, its balance and the history are still there.
    await b.stop()
    b = await start({ ...base(), key: keyB, dataDir: dataB })
    expect((await b.channel(net.token, a.address)).balance).toBe('6')
    expect(await b.payments({ token: net.token })).toEqual([
      expect.objectContaining({ event: 'EventPaymentReceivedSuccess', amount: '5' }),
      expect.objectContaining({ event: 'EventPaymentReceivedSuccess', amount: '1' }),
    ])
    // The resumed node pays back over the same channel.
    await b.pay(net.token, a.address, { amount: 2n })
    await eventually(async () => expect((await a.channel(net.token, b.address)).balance).toBe('96'))
    await Promise.all([a.stop(), b.stop()])
  }, 120_000)

  test('with relay, the transport is libp2p: two nodes meet through a relay in this process and pay', async () => {
    const relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
    try {
      const options = { ...base(), storage: 'memory' as const, relay: [relay.multiaddrs[0]!] }
      const [c, d] = await Promise.all([start({ ...options, key: keyC }), start({ ...options, key: keyD })])
      expect(c.peerId).toMatch(/^16Uiu2/)
      await c.openChannel({ token_address: net.token, partner_address: d.address, total_deposit: 50n })
      await eventually(async () => expect(await d.channel(net.token, c.address)).toMatchObject({ state: 'opened' }))
      await c.pay(net.token, d.address, { amount: 7n })
      await eventually(async () => expect((await d.channel(net.token, c.address)).balance).toBe('7'))
      await Promise.all([c.stop(), d.stop()])
    } finally {
      await relay.stop()
    }
  }, 120_000)

  test('with api, the REST API is served over HTTP as sluice serve serves it, with its token; stop closes it and is idempotent', async () => {
    const token = 'a-token-of-more-than-16-characters'
    const node = await start({ ...base(), key: anvilKeys[3] as Hex, storage: 'memory', api: '127.0.0.1:0', apiToken: token })
    expect(node.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/)
    const answer = await fetch(`${node.apiUrl}/address`, { headers: { authorization: `Bearer ${token}` } })
    expect(await answer.json()).toEqual({ our_address: node.address })
    expect((await fetch(`${node.apiUrl}/address`)).status).toBe(401)
    // The methods go in-process, through the same API (Host and token checked as over HTTP).
    expect(await node.version()).toEqual({ version: expect.any(String) })
    await Promise.all([node.stop(), node.stop()])
    await node.stop()
    expect(await refused(`${node.apiUrl}/address`)).toBe(true)
    await expect(node.status()).rejects.toMatchObject({ status: 503 })
  }, 60_000)

  test('a keystore with its password; waitForSync false resolves before the first sync ends', async () => {
    const key = anvilKeys[4] as Hex
    const keystore = await encryptKeystore(key, 'pw', { c: 1000 })
    const node = await start({ ...base(), keystore, password: 'pw', storage: 'memory', waitForSync: false })
    expect(node.address).toBe(privateKeyToAddress(key))
    await eventually(async () => expect(await node.status()).toEqual({ status: 'ready' }))
    await node.stop()
    const wrong = await failure(startNode({ ...base(), keystore, password: 'not it', storage: 'memory' }))
    expect(wrong.code).toBe('WRONG_PASSWORD')
  })

  test('POST /shutdown stops the node on its own, and onStopped hears it', async () => {
    const node = await start({ ...base(), key: anvilKeys[5] as Hex, storage: 'memory' })
    const stopped = new Promise((resolve) => node.onStopped(resolve))
    await node.shutdown()
    expect(await stopped).toEqual({ reason: 'shutdown' })
    await expect(node.status()).rejects.toMatchObject({ status: 503 })
  })

  test('bad options: INVALID_OPTIONS (or the coded error of what they point at), and nothing is started', async () => {
    const port = await freePort()
    const dataDir = join(tempDir(), 'never')
    const ok = { ...base(), key: keyA, dataDir, api: `127.0.0.1:${port}` }
    const cases: [Partial<StartNodeOptions> & Record<string, unknown>, string, RegExp][] = [
      [{ rpc: undefined }, 'INVALID_OPTIONS', /^rpc is required/],
      [{ rpc: 'ftp://x' }, 'INVALID_OPTIONS', /^rpc must be an http\(s\) or ws\(s\) URL/],
      [{ rpc: 'http://127.0.0.1:8545,localhost:8545' }, 'INVALID_OPTIONS', /^rpc must be an http\(s\) or ws\(s\) URL/],
      [{ rpc: ['http://127.0.0.1:8545', 'localhost:8545'] }, 'INVALID_OPTIONS', /^each of rpc must be an http\(s\) or ws\(s\) URL, not "localhost:8545"$/],
      [{ rpc: ['http://127.0.0.1:8545', 8545] as never }, 'INVALID_OPTIONS', /^each of rpc must be an http\(s\) or ws\(s\) URL, not 8545$/],
      [{ rpc: [] }, 'INVALID_OPTIONS', /^rpc must hold at least one URL$/],
      [{ datadir: dataDir }, 'INVALID_OPTIONS', /^unknown option datadir$/],
      [{ confirmations: -1 }, 'INVALID_OPTIONS', /^confirmations must be/],
      [{ pollingInterval: '50' as never }, 'INVALID_OPTIONS', /^pollingInterval must be/],
      [{ monitoringReward: 5 as never }, 'INVALID_OPTIONS', /^monitoringReward must be a bigint/],
      [{ flatFee: { '0x12': 5n } }, 'INVALID_OPTIONS', /^flatFee must be an object of bigints by token address, each a token address and an amount/],
      [{ flatFee: [] as never }, 'INVALID_OPTIONS', /^flatFee must be an object of bigints by token address, not /],
      [{ proportionalFee: { [`0x${'ab'.repeat(20)}`]: 1_000_001n } }, 'INVALID_OPTIONS', /^proportionalFee .*parts per million from 0 to 1000000/],
      [{ proportionalImbalanceFee: { [`0x${'ab'.repeat(20)}`]: 5 as never } }, 'INVALID_OPTIONS', /^proportionalImbalanceFee must be an object of bigints/],
      [
        { flatFee: { [`0x${'ab'.repeat(20)}`]: 1n, [`0x${'AB'.repeat(20)}`]: 2n } },
        'INVALID_OPTIONS',
        /^flatFee names a token twice \(addresses are compared in lower case\)$/,
      ],
      [{ capMediationFees: 'no' as never }, 'INVALID_OPTIONS', /^capMediationFees must be a boolean, not string$/],
      [{ pathfindingMaxFee: 5 as never }, 'INVALID_OPTIONS', /^pathfindingMaxFee must be a bigint, a decimal integer, not 5$/],
      [{ routingMode: 'basic' as never }, 'INVALID_OPTIONS', /^routingMode must be pfs, private, local, not "basic"$/],
      [{ pathfindingServiceAddress: 'pfs.example' }, 'INVALID_OPTIONS', /^pathfindingServiceAddress must be an http\(s\) URL or auto, not "pfs\.example"$/],
      [{ pathfindingMaxPaths: 0 }, 'INVALID_OPTIONS', /^pathfindingMaxPaths must be an integer from 1 to 25, not 0$/],
      [{ pathfindingIouTimeout: 1.5 }, 'INVALID_OPTIONS', /^pathfindingIouTimeout must be an integer from 1 to 1000000000, not 1\.5$/],
      [{ key: '0x1234567' }, 'INVALID_OPTIONS', /^key must be 32 bytes of hex \(64 hex digits, 0x optional\)$/],
      [{ keystore: 'ks.json', password: 'x' }, 'INVALID_OPTIONS', /^give either key or keystore/],
      [{ key: undefined }, 'INVALID_OPTIONS', /^key or keystore/],
      [{ key: undefined, keystore: 'ks.json', password: 1234 as never }, 'INVALID_OPTIONS', /^password must be a string, not number$/],
      [{ dataDir: undefined }, 'INVALID_OPTIONS', /^dataDir is required/],
      [{ storage: 'memory' }, 'INVALID_OPTIONS', /^dataDir goes with storage 'level'/],
      [
        { relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'], transport: 'broadcast' },
        'INVALID_OPTIONS',
        /^relay goes/,
      ],
      [{ relay: ['/ip4/127.0.0.1/tcp/9090/ws'] }, 'INVALID_OPTIONS', /^each relay must be/],
      [{ transport: 'libp2p' }, 'INVALID_OPTIONS', /needs relay/],
      [{ p2pListen: ['/ip4/127.0.0.1/tcp/0/ws'] }, 'INVALID_OPTIONS', /^p2pListen goes with transport 'libp2p' \(and relay\)$/],
      [
        { relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'], p2pListen: ['/ip4/127.0.0.1/tcp/0'] },
        'INVALID_OPTIONS',
        /^each p2pListen must be a WebSockets listen multiaddr such as \/ip4\/0\.0\.0\.0\/tcp\/4001\/ws .*, not "\/ip4\/127\.0\.0\.1\/tcp\/0"$/,
      ],
      [
        { relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'], p2pAnnounce: ['/dns4/node.example.com/tcp/443/wss'] },
        'INVALID_OPTIONS',
        /^p2pAnnounce goes with p2pListen/,
      ],
      [{ p2pAllowPrivate: 'yes' as never }, 'INVALID_OPTIONS', /^p2pAllowPrivate must be a boolean/],
      [
        { relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'], p2pListen: ['/ip4/127.0.0.1/tcp/0/wss'] },
        'INVALID_OPTIONS',
        /^each p2pListen must be a WebSockets listen multiaddr .*\(\/wss with p2pTlsCert and p2pTlsKey\), not "\/ip4\/127\.0\.0\.1\/tcp\/0\/wss"$/,
      ],
      [
        {
          relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'],
          p2pListen: ['/ip4/127.0.0.1/tcp/0/wss'],
          p2pTlsCert: join(dataDir, 'missing.pem'),
          p2pTlsKey: join(dataDir, 'missing.key'),
        },
        'INVALID_OPTIONS',
        /^cannot read the certificate p2pTlsCert .*missing\.pem: ENOENT$/,
      ],
      [{ api: 'nowhere' }, 'INVALID_OPTIONS', /^api must be HOST:PORT/],
      [{ apiToken: 'short' }, 'INVALID_OPTIONS', /^apiToken has 5 characters/],
      [{ api: undefined, corsOrigins: ['http://localhost:*'] }, 'INVALID_OPTIONS', /go with api/],
      [{ api: `0.0.0.0:${port}` }, 'API_EXPOSED', /not a loopback address/],
      [{ logLevel: 'loud' as never }, 'INVALID_OPTIONS', /^logLevel must be one of/],
      [{ deployment: join(dataDir, 'missing.json') }, 'DEPLOYMENT_NOT_FOUND', /missing\.json/],
      [{ deployment: { chainId: 1 } as never }, 'INVALID_DEPLOYMENT', /./],
      [{ import: join(dataDir, 'missing.json') }, 'INVALID_OPTIONS', /^cannot read the state dump/],
    ]
    for (const [change, code, message] of cases) {
      const error = await failure(startNode({ ...ok, ...change } as StartNodeOptions))
      expect({ change, code: error.code }).toEqual({ change, code })
      expect(error.message).toMatch(message)
    }
    // Nothing was opened: no store, no listening API.
    expect(existsSync(dataDir)).toBe(false)
    expect(await refused(`http://127.0.0.1:${port}/api/v1/status`)).toBe(true)
  })

  test('a failure after the options (the store held by another node) releases what was taken: the port is free again', async () => {
    const dataDir = join(tempDir(), 'held')
    const holder = await start({ ...base(), key: anvilKeys[6] as Hex, dataDir })
    const port = await freePort()
    const error = await failure(startNode({ ...base(), key: anvilKeys[6] as Hex, dataDir, api: `127.0.0.1:${port}` }))
    expect(error.code).toBe('STORAGE_LOCKED')
    expect(await refused(`http://127.0.0.1:${port}/api/v1/status`)).toBe(true)
    await holder.stop()
  })
})
