import { readFileSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { getAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { encryptKeystore } from '../../src/chain/keystore.ts'
import { parseFlags, type FlagSpecs } from '../../src/cli/args.ts'
import { serveBackups } from '../../src/cli/backupServer.ts'
import { monitorFlags } from '../../src/cli/monitor.ts'
import { pathfindingFlags } from '../../src/cli/pathfinding.ts'
import { serveFlags } from '../../src/cli/serve.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { jsonParse } from '../../src/storage/json.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startFaultyRpc } from '../support/faultyRpc.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { logged, logMessages, runSluice, startSluice, stopSluice, type SluiceProcess, quickServeFlags } from './sluiceProcess.ts'

const tempDir = tempDirs('sluice-serve-')

/** A new file holding `text`. */
function textFile(text: string): string {
  const file = join(tempDir(), 'file')
  writeFileSync(file, text)
  return file
}

let net: Devnet
let deploymentFile: string
const key = anvilKeys[1] as Hex
beforeAll(async () => {
  net = await startDevnet([key])
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
})
afterAll(async () => {
  await net?.stop()
})

/** A well-formed relay address (nothing listens there: these cases fail before any dial). */
const relayPeer = '12D3KooWKU7okcWxSUvkMzho4KjaAfaXTxvr4pjova2NLypqc72H'
const relayExample = `/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayPeer}`

const baseArgs = (dataDir: string, ...more: string[]) => [
  'serve',
  '--rpc',
  net.anvil.rpcUrl,
  '--deployment',
  deploymentFile,
  '--data-dir',
  dataDir,
  ...quickServeFlags,
  ...more,
]

/** Starts `sluice serve` and resolves with its API base URL once it listens. */
async function startServe(args: string[]): Promise<{ sluice: SluiceProcess; api: string }> {
  const sluice = startSluice(args, tempDir())
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  return { sluice, api: api! }
}

const get = async (url: string) => {
  const r = await fetch(url)
  return { status: r.status, body: (await r.json()) as any, text: '' }
}

async function refused(url: string): Promise<boolean> {
  return fetch(url).then(
    () => false,
    () => true,
  )
}

async function waitReady(api: string) {
  await eventually(async () => expect((await get(`${api}/status`)).body).toEqual({ status: 'ready' }), 30_000)
}

describe('sluice serve', () => {
  test('--help lists the flags and exits 0', async () => {
    const { code, stdout } = await runSluice(['serve', '--help'], tempDir())
    expect(code).toBe(0)
    for (const flag of [
      '--rpc, --eth-rpc-endpoint <URL>',
      '--deployment <FILE>',
      '--key <HEX>',
      '--keystore <FILE>',
      '--keystore-path <DIR>',
      '--address <ADDRESS>',
      '--password-file <FILE>',
      '--metrics <HOST:PORT>',
      '--api, --api-address <HOST:PORT>',
      '--data-dir, --datadir <DIR>',
      '--resolver-endpoint <URL>',
      '--environment, --environment-type <NAME>',
      '--confirmations <N>',
      '--transport <NAME>',
      '--relay <MULTIADDR>',
      '--import <FILE>',
      '--api-host <NAME>',
      '--rpccorsdomain <ORIGINS>',
      '--api-token-file <FILE>',
      '--backup-url <URL>',
      '--log-level <LEVEL>',
      '--log-json',
      '--log-config <CONFIG>',
    ]) {
      expect(stdout).toContain(flag)
    }
    expect(stdout).toMatch(/--transport <NAME> .*\(default: libp2p with --relay, else broadcast\)/)
    expect(stdout).toMatch(/--api, --api-address <HOST:PORT> .*\(default: 127\.0\.0\.1:5001\)/)
  })

  test('serves the API before the sync is done, answers over HTTP, and stops on SIGTERM freeing its port', async () => {
    const dataDir = tempDir()
    const { sluice, api } = await startServe(baseArgs(dataDir, '--key', key))
    // The server listened before the node was ready: its line comes first, and /status answers meanwhile.
    const status = await get(`${api}/status`)
    expect(status.status).toBe(200)
    expect(['syncing', 'ready']).toContain(status.body.status)
    await waitReady(api)
    await sluice.waitForOutput(logged('Ready: synced to block \\d+ event=status$'))
    const out = sluice.stdout()
    expect(out.indexOf('REST API:')).toBeLessThan(out.indexOf('Ready: synced to block'))
    expect(logMessages(out)[0]).toBe(`Sluice node ${privateKeyToAddress(key)} on chain ${net.deployment.chainId} (development), data in ${dataDir}`)
    expect((await get(`${api}/address`)).body).toEqual({ our_address: privateKeyToAddress(key) })
    expect((await get(`${api}/tokens`)).body).toEqual([net.token])
    expect(out).toContain('Transport: broadcast')

    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    // The node's own last word (its status) comes between the two.
    expect(logMessages(sluice.stdout()).slice(-3)).toEqual([
      'SIGTERM: stopping',
      expect.stringMatching(/^Stopped: synced to block \d+ event=status$/),
      'stopped',
    ])
    expect(sluice.stderr()).toBe('')
    expect(await refused(`${api}/status`)).toBe(true)
  })

  test('--api-token-file: beyond loopback with a token, every request needs it (the first line of the file, trimmed)', async () => {
    const token = 'Zm9vYmFyYmF6cXV4LXNsdWljZQ=='
    const args = baseArgs(tempDir(), '--key', key, '--api-token-file', textFile(`  ${token}  \nnot this line\n`))
    const { sluice, api } = await startServe(args.map((a) => (a === '127.0.0.1:0' ? '0.0.0.0:0' : a)))
    const local = api.replace('0.0.0.0', '127.0.0.1')
    const missing = await fetch(`${local}/status`)
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/)
    expect(await missing.json()).toMatchObject({ code: 'UNAUTHORIZED' })
    const authorized = await fetch(`${local}/status`, { headers: { authorization: `Bearer ${token}` } })
    expect(authorized.status).toBe(200)
    // The token does not lift the Origin check: another site's page is refused even with it.
    expect((await fetch(`${local}/status`, { headers: { authorization: `Bearer ${token}`, origin: 'http://attacker.example' } })).status).toBe(403)
    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
  })

  test('POST /shutdown answers, then the process stops with exit code 0', async () => {
    const { sluice, api } = await startServe(baseArgs(tempDir(), '--key', key))
    await waitReady(api)
    const r = await fetch(`${api}/shutdown`, { method: 'POST' })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ status: 'shutdown' })
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(sluice.stdout()).toContain('POST /shutdown: stopping')
    expect(await refused(`${api}/status`)).toBe(true)
  })

  test("--metrics: the endpoints' failures by kind, while the node goes on through the next; the sync lag; no channel", async () => {
    const faulty = await startFaultyRpc(net.anvil.rpcUrl, { seed: 7 })
    const args = baseArgs(tempDir(), '--key', key, '--metrics', '127.0.0.1:0')
    args[2] = `${faulty.url},${net.anvil.rpcUrl}`
    const { sluice, api } = await startServe(args)
    try {
      await waitReady(api)
      const url = metricsUrlOf(sluice.stdout())
      const ready = await scrape(url)
      expect(sampleValue(ready, 'sluice_chain_sync_lag_blocks')).toBeLessThanOrEqual(2)
      expect(sampleValue(ready, 'sluice_channels', { state: 'opened' })).toBe(0)
      expect(sampleValue(ready, 'sluice_payments_sent_total', { outcome: 'success' })).toBe(0)
      // The first endpoint answers 503, then refuses connections: each failure counted by its kind.
      faulty.setFaults({ failRate: 1, kinds: ['503'] })
      await eventually(async () => expect(sampleValue(await scrape(url), 'sluice_rpc_errors_total', { kind: 'http_5xx' })).toBeGreaterThan(0))
      faulty.setFaults({ failRate: 0 })
      await faulty.setMode('refuse')
      await eventually(async () => expect(sampleValue(await scrape(url), 'sluice_rpc_errors_total', { kind: 'connection' })).toBeGreaterThan(0), 15_000)
      expect((await get(`${api}/status`)).body).toEqual({ status: 'ready' })
    } finally {
      await stopSluice(sluice)
      await faulty.close()
    }
  })

  test('--log-json: every line on stdout and stderr is a JSON object with time, level and msg; the facts are fields of their own', async () => {
    const dataDir = tempDir()
    const sluice = startSluice(baseArgs(dataDir, '--key', key, '--log-json'), tempDir())
    const [, api] = await sluice.waitForOutput(logged('REST API: ([^"]+)"'), 60_000)
    await sluice.waitForOutput(logged('Ready: synced to block \\d+"'), 60_000)
    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    const lines = `${sluice.stdout()}${sluice.stderr()}`.split('\n').filter((line) => line !== '')
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown> & { msg: string })
    for (const record of records)
      expect(record).toMatchObject({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), level: 'info', msg: expect.any(String) })
    const find = (start: string) => records.find((r) => r.msg.startsWith(start))
    expect(find('Sluice node ')).toMatchObject({ address: privateKeyToAddress(key), chainId: net.deployment.chainId, environment: 'development', dataDir })
    expect(find('REST API: ')).toMatchObject({ msg: `REST API: ${api}`, url: api })
    expect(find('Transport: ')).toMatchObject({ transport: 'broadcast' })
    expect(find('Ready: ')).toMatchObject({ event: 'status', syncedBlock: expect.stringMatching(/^\d+$/) })
    expect(records.at(-1)).toMatchObject({ msg: 'stopped' })
  })

  test('--log-level warn: no info line (a run with nothing wrong writes nothing at all)', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo
        probe.close(() => resolve(port))
      })
    })
    const sluice = startSluice(
      baseArgs(tempDir(), '--key', key, '--log-level', 'warn').map((a) => (a === '127.0.0.1:0' ? `127.0.0.1:${port}` : a)),
      tempDir(),
    )
    await waitReady(`http://127.0.0.1:${port}/api/v1`)
    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(sluice.stdout()).toBe('')
    expect(sluice.stderr()).toBe('')
  })

  test('--release-feed-url and --min-service-token-balance drive GET /notifications', async () => {
    // A real release feed over HTTP, as a project would publish it.
    const feed = createHttpServer((_, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ latest: '99.0.0', security: ['0.1.0'] })),
    )
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r))
    const feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/releases.json`
    try {
      const { sluice, api } = await startServe(baseArgs(tempDir(), '--key', key, '--release-feed-url', feedUrl, '--min-service-token-balance', '0'))
      await waitReady(api)
      const ids = async () => ((await get(`${api}/notifications`)).body as { id: string }[]).map((n) => n.id).sort()
      // 0.1.0 is older than 99.0.0 and on the security list; a minimum of 0 service tokens is met.
      await eventually(async () => expect(await ids()).toEqual(['version_outdated', 'version_security_warning']), 20_000)
      sluice.child.kill('SIGTERM')
      expect(await sluice.exited).toEqual({ code: 0, signal: null })
    } finally {
      feed.close()
    }
  })

  test('reads the key from a v3 keystore with --password-file (scrypt N = 2^18, as a page exports it)', async () => {
    // The default cost, geth's standard scrypt (N = 2^18, 256 MiB), as a page's exportKeystore() writes it: a file
    // made once (keystore.test.ts covers writing it), so the test pays for one derivation, the node's.
    const keystore = fileURLToPath(new URL('../fixtures/keystore-scrypt-n18.json', import.meta.url))
    const address = getAddress(`0x${(JSON.parse(readFileSync(keystore, 'utf8')) as { address: string }).address}`)
    const { sluice, api } = await startServe(baseArgs(tempDir(), '--keystore', keystore, '--password-file', textFile('testpassword\n')))
    expect((await get(`${api}/status`)).status).toBe(200)
    await waitReady(api)
    expect((await get(`${api}/address`)).body).toEqual({ our_address: address })
    sluice.child.kill('SIGINT')
    expect((await sluice.exited).code).toBe(0)
  })

  test("started with Raiden's flag names (--eth-rpc-endpoint, --datadir, --keystore-path and --address, --api-address, --environment-type) it answers as with ours", async () => {
    // A keystore directory as geth and Raiden keep one: the account's file among another account's and a stray file.
    const keystoreDir = tempDir()
    const fixture = readFileSync(fileURLToPath(new URL('../fixtures/keystore-scrypt-n18.json', import.meta.url)), 'utf8')
    const address = getAddress(`0x${(JSON.parse(fixture) as { address: string }).address}`)
    writeFileSync(join(keystoreDir, `UTC--2024-01-01T00-00-00.000000000Z--${address.slice(2).toLowerCase()}`), fixture)
    const other = await encryptKeystore(generatePrivateKey(), 'testpassword', { n: 16, r: 1, p: 1 })
    writeFileSync(join(keystoreDir, `UTC--2024-01-02T00-00-00.000000000Z--${other.address}`), JSON.stringify(other))
    writeFileSync(join(keystoreDir, 'notes.txt'), 'not a keystore\n')
    const dataDir = tempDir()
    const { sluice, api } = await startServe([
      'serve',
      '--eth-rpc-endpoint',
      net.anvil.rpcUrl,
      '--deployment',
      deploymentFile,
      '--datadir',
      dataDir,
      '--keystore-path',
      keystoreDir,
      '--address',
      address,
      '--password-file',
      textFile('testpassword\n'),
      '--api-address',
      '127.0.0.1:0',
      '--confirmations',
      '0',
      '--polling-interval',
      '50',
      '--environment-type',
      'development',
    ])
    await waitReady(api)
    expect((await get(`${api}/address`)).body).toEqual({ our_address: address })
    expect((await get(`${api}/tokens`)).body).toEqual([net.token])
    expect(sluice.stdout()).toContain(`data in ${dataDir}`)
    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
  })

  test('--backup-url pushes copies (GET /settings shows them) and restores the newest into an empty data directory', async () => {
    const backups = await serveBackups({ dataDir: tempDir(), host: '127.0.0.1', port: 0 })
    try {
      const first = await startServe(baseArgs(tempDir(), '--key', key, '--backup-url', backups.url))
      await waitReady(first.api)
      const pushed = await eventually(async () => {
        const { backup } = (await get(`${first.api}/settings`)).body
        expect(backup).toMatchObject({ url: backups.url, behind: false, last_error: null, restored: null, last_push: { version: expect.any(String) } })
        return backup.last_push.version as string
      }, 20_000)
      first.sluice.child.kill('SIGTERM')
      expect((await first.sluice.exited).code).toBe(0)

      // The data directory is lost: the same key on an empty one comes back from the newest copy.
      const second = await startServe(baseArgs(tempDir(), '--key', key, '--backup-url', backups.url))
      await waitReady(second.api)
      const { backup } = (await get(`${second.api}/settings`)).body
      expect(BigInt(backup.restored.version)).toBeGreaterThanOrEqual(BigInt(pushed))
      second.sluice.child.kill('SIGTERM')
      expect((await second.sluice.exited).code).toBe(0)
    } finally {
      await backups.close(100).catch(() => {})
    }
  })

  test('--backup-url to a server it cannot reach stops the start of an empty data directory', async () => {
    const backups = await serveBackups({ dataDir: tempDir(), host: '127.0.0.1', port: 0 })
    const gone = await backups.close(100).then(() => backups.url)
    const unreachable = await runSluice(baseArgs(tempDir(), '--key', key, '--backup-url', gone), tempDir())
    expect(unreachable.code).not.toBe(0)
    expect(unreachable.stderr).toMatch(/--backup-url .*is empty and the newest copy could not be restored: .*\(BACKUP_UNREACHABLE\)/)
  })

  describe('--import', () => {
    // One node's exported state, shared by the cases: the node runs until "older" stops it.
    let first: { sluice: SluiceProcess; api: string }
    let dataDir = ''
    let dumpFile = ''
    let dump: { meta: { createdAt: number; syncedBlock: bigint } }
    beforeAll(async () => {
      dataDir = tempDir()
      first = await startServe(baseArgs(dataDir, '--key', key))
      await waitReady(first.api)
      const exported = await fetch(`${first.api}/_state/export`)
      expect(exported.status).toBe(200)
      const text = await exported.text()
      dumpFile = join(tempDir(), 'state.json')
      writeFileSync(dumpFile, text)
      dump = jsonParse(text) as typeof dump
    }, 60_000)
    afterAll(async () => {
      if (first) await stopSluice(first.sluice)
    })

    test('a store in use is refused at once; a dump older than its store is refused', async () => {
      const busy = await runSluice(baseArgs(dataDir, '--key', key, '--import', dumpFile), tempDir())
      expect(busy.code).toBe(2)
      expect(busy.stderr).toMatch(/is another node running on --data-dir/)
      expect(busy.stderr.trim().split('\n')).toHaveLength(1)

      // The node moves on (more blocks synced), so the dump becomes older than its store.
      await fetch(`${net.anvil.rpcUrl}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x5'] }),
      })
      await eventually(async () => {
        const again = jsonParse(await (await fetch(`${first.api}/_state/export`)).text()) as typeof dump
        expect(again.meta.syncedBlock).toBeGreaterThan(dump.meta.syncedBlock)
      }, 20_000)
      first.sluice.child.kill('SIGTERM')
      expect((await first.sluice.exited).code).toBe(0)
      const older = await runSluice(baseArgs(dataDir, '--key', key, '--import', dumpFile), tempDir())
      expect(older.code).toBe(2)
      expect(older.stderr).toMatch(/^sluice serve: --import .*state\.json: the dump is older than the stored state[^\n]*\n$/)
    })

    test('a dump of another node is refused', async () => {
      const other = await runSluice(baseArgs(tempDir(), '--key', anvilKeys[2] as Hex, '--import', dumpFile), tempDir())
      expect(other.code).toBe(2)
      expect(other.stderr).toMatch(/^sluice serve: --import .*: the dump belongs to another node address[^\n]*\n$/)
    })

    test('restores an exported state into a new data directory (the same creation time and history)', async () => {
      const restored = await startServe(baseArgs(tempDir(), '--key', key, '--import', dumpFile))
      expect(restored.sluice.stdout()).toContain(`Imported the state dump ${dumpFile}`)
      await waitReady(restored.api)
      const after = jsonParse(await (await fetch(`${restored.api}/_state/export`)).text()) as typeof dump
      expect(after.meta.createdAt).toBe(dump.meta.createdAt)
      restored.sluice.child.kill('SIGTERM')
      expect((await restored.sluice.exited).code).toBe(0)
    })
  })

  describe('bad options exit 2 with one line on stderr', () => {
    let server: Server
    let busyPort = 0
    let keystoreFile = ''
    let cheapKeystore = ''
    let keystoreDir = ''
    beforeAll(async () => {
      keystoreFile = join(tempDir(), 'keystore.json')
      writeFileSync(keystoreFile, '{"version": 3}')
      // A wrong password only needs a keystore: a cheap one.
      cheapKeystore = join(tempDir(), 'cheap-keystore.json')
      writeFileSync(cheapKeystore, JSON.stringify(await encryptKeystore(generatePrivateKey(), 'testpassword', { n: 16, r: 1, p: 1 })))
      keystoreDir = tempDir()
      writeFileSync(join(keystoreDir, 'cheap.json'), readFileSync(cheapKeystore))
      server = createServer()
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      busyPort = (server.address() as { port: number }).port
    })
    afterAll(() => server?.close())

    const cases: [string, () => string[], RegExp][] = [
      ['no --rpc', () => ['serve', '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir()], /--rpc is required/],
      ['no --deployment', () => ['serve', '--rpc', net.anvil.rpcUrl, '--key', key, '--data-dir', tempDir()], /--deployment is required/],
      ['no --data-dir', () => ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', key], /--data-dir is required/],
      ['no key', () => baseArgs(tempDir()), /--key or --keystore is required/],
      [
        'both --data-dir and --database',
        () => baseArgs(tempDir(), '--key', key, '--database', 'postgres://sluice@127.0.0.1:1/hub'),
        /either --data-dir or --database, not both/,
      ],
      ['a --database that is not a postgres URL', () => baseArgs(tempDir(), '--key', key, '--database', 'mysql://h/db'), /--database.*postgres:\/\//],
      ['both keys', () => baseArgs(tempDir(), '--key', key, '--keystore', 'k.json'), /either --key or --keystore, not both/],
      [
        "a flag given as ours and as Raiden's",
        () => baseArgs(tempDir(), '--key', key, '--datadir', tempDir()),
        /--datadir is given more than once \(--data-dir is the same flag\)/,
      ],
      [
        '--address without --keystore-path',
        () => baseArgs(tempDir(), '--key', key, '--address', privateKeyToAddress(key)),
        /--address goes with --keystore-path/,
      ],
      [
        'a --keystore-path without a keystore of --address',
        () => baseArgs(tempDir(), '--keystore-path', keystoreDir, '--address', privateKeyToAddress(key), '--password-file', textFile('testpassword\n')),
        new RegExp(`no keystore file for ${privateKeyToAddress(key)} in the keystore directory .*\\(it holds keystores of 0x[0-9a-f]{40}\\)`),
      ],
      [
        'a bad URL',
        () => ['serve', '--rpc', 'localhost:8545', '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir()],
        /--rpc must be an http\(s\) or ws\(s\) URL, got "localhost:8545"/,
      ],
      [
        'a bad URL among several',
        () => [...baseArgs(tempDir(), '--key', key), '--eth-rpc-endpoint', 'http://127.0.0.1:8545,localhost:8545'],
        /--rpc must be an http\(s\) or ws\(s\) URL, got "[^"]*,http:\/\/127\.0\.0\.1:8545,localhost:8545"/,
      ],
      [
        'no endpoint answers',
        () => ['serve', '--rpc', 'http://127.0.0.1:1', '--rpc', 'http://127.0.0.1:2', '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir()],
        /--rpc http:\/\/127\.0\.0\.1:1,http:\/\/127\.0\.0\.1:2: ChainRpcError: eth_chainId failed/,
      ],
      ['a bad key', () => baseArgs(tempDir(), '--key', '0x1234'), /--key must be 32 bytes of hex/],
      [
        'a bad --api',
        () => ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir(), '--api', '5001'],
        /--api must be HOST:PORT/,
      ],
      [
        'a bad --environment',
        () => ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir(), '--environment', 'staging'],
        /--environment must be development or production, got "staging"/,
      ],
      ['an unknown --transport', () => baseArgs(tempDir(), '--key', key, '--transport', 'nostr'), /--transport must be libp2p or broadcast, got "nostr"/],
      [
        'a --monitoring-reward that is no amount',
        () => baseArgs(tempDir(), '--key', key, '--enable-monitoring', '--monitoring-reward', '1.5'),
        /--monitoring-reward must be a decimal integer, got "1\.5"/,
      ],
      ['--transport libp2p without --relay', () => baseArgs(tempDir(), '--key', key, '--transport', 'libp2p'), /--transport libp2p needs --relay MULTIADDR/],
      [
        '--relay with --transport broadcast',
        () => baseArgs(tempDir(), '--key', key, '--transport', 'broadcast', '--relay', relayExample),
        /--relay goes with --transport libp2p/,
      ],
      [
        'a --relay that is no multiaddr',
        () => baseArgs(tempDir(), '--key', key, '--relay', 'relay.example.org:9090'),
        /--relay must be a WebSockets multiaddr ending in \/p2p\/<relay peer id>.*, got "relay\.example\.org:9090"/,
      ],
      [
        'a --relay that does not parse',
        () => baseArgs(tempDir(), '--key', key, '--relay', `/ip4/999.0.0.1/tcp/9090/ws/p2p/${relayPeer}`),
        /--relay must be a WebSockets multiaddr/,
      ],
      [
        'a --relay without its peer id',
        () => baseArgs(tempDir(), '--key', key, '--relay', '/ip4/127.0.0.1/tcp/9090/ws'),
        /--relay must be a WebSockets multiaddr .*, got "\/ip4\/127\.0\.0\.1\/tcp\/9090\/ws"/,
      ],
      [
        'a --relay that is not WebSockets',
        () => baseArgs(tempDir(), '--key', key, '--relay', `/ip4/127.0.0.1/tcp/9090/p2p/${relayPeer}`),
        /--relay must be a WebSockets multiaddr/,
      ],
      [
        'a bad second --relay',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--relay', '/ip4/127.0.0.1/tcp/9090/ws/p2p/notapeerid'),
        /--relay must be a WebSockets multiaddr .*, got "\/ip4\/127\.0\.0\.1\/tcp\/9090\/ws\/p2p\/notapeerid"/,
      ],
      [
        '--p2p-listen without libp2p',
        () => baseArgs(tempDir(), '--key', key, '--p2p-listen', '/ip4/127.0.0.1/tcp/0/ws'),
        /--p2p-listen goes with --transport libp2p \(and --relay\)/,
      ],
      [
        'a --p2p-listen that is not WebSockets',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--p2p-listen', '/ip4/0.0.0.0/tcp/4001'),
        /--p2p-listen must be a WebSockets listen multiaddr such as \/ip4\/0\.0\.0\.0\/tcp\/4001\/ws .*, got "\/ip4\/0\.0\.0\.0\/tcp\/4001"/,
      ],
      [
        'a --p2p-listen on /wss without a certificate',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--p2p-listen', '/ip4/0.0.0.0/tcp/443/wss'),
        /--p2p-listen must be a WebSockets listen multiaddr .*\(\/wss with --p2p-tls-cert and --p2p-tls-key\)/,
      ],
      [
        'a --p2p-listen on /ws with a certificate',
        () =>
          baseArgs(
            tempDir(),
            '--key',
            key,
            '--relay',
            relayExample,
            '--p2p-listen',
            '/ip4/0.0.0.0/tcp/4001/ws',
            '--p2p-tls-cert',
            'c.pem',
            '--p2p-tls-key',
            'k.pem',
          ),
        /--p2p-listen must be a WebSockets Secure listen multiaddr such as \/ip4\/0\.0\.0\.0\/tcp\/4443\/wss/,
      ],
      [
        '--p2p-tls-cert without --p2p-tls-key',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--p2p-listen', '/ip4/0.0.0.0/tcp/4443/wss', '--p2p-tls-cert', 'c.pem'),
        /--p2p-tls-cert goes with --p2p-tls-key FILE/,
      ],
      [
        '--p2p-tls-cert without --p2p-listen',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--p2p-tls-cert', 'c.pem', '--p2p-tls-key', 'k.pem'),
        /--p2p-tls-cert goes with --p2p-listen/,
      ],
      [
        'a --p2p-tls-cert that cannot be read',
        () =>
          baseArgs(
            tempDir(),
            '--key',
            key,
            '--relay',
            relayExample,
            '--p2p-listen',
            '/ip4/0.0.0.0/tcp/4443/wss',
            '--p2p-tls-cert',
            '/nonexistent.pem',
            '--p2p-tls-key',
            '/nonexistent.key',
          ),
        /cannot read the certificate --p2p-tls-cert \/nonexistent\.pem: ENOENT/,
      ],
      [
        '--p2p-announce without --p2p-listen',
        () => baseArgs(tempDir(), '--key', key, '--relay', relayExample, '--p2p-announce', '/dns4/node.example.com/tcp/443/wss'),
        /--p2p-announce goes with --p2p-listen/,
      ],
      [
        'a --p2p-announce with a peer id',
        () =>
          baseArgs(
            tempDir(),
            '--key',
            key,
            '--relay',
            relayExample,
            '--p2p-listen',
            '/ip4/0.0.0.0/tcp/4001/ws',
            '--p2p-announce',
            `/dns4/node.example.com/tcp/443/wss/p2p/${relayPeer}`,
          ),
        /--p2p-announce must be a WebSockets multiaddr such as \/dns4\/node\.example\.com\/tcp\/443\/wss \(without \/p2p\/: the node adds its own peer id\)/,
      ],
      [
        'a missing deployment file',
        () => ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', '/nonexistent/d.json', '--key', key, '--data-dir', tempDir()],
        /no deployment file at \/nonexistent\/d\.json/,
      ],
      [
        'a keystore without a password on a non-terminal',
        () => baseArgs(tempDir(), '--keystore', keystoreFile),
        /--keystore needs --password-file when standard input is not a terminal/,
      ],
      [
        'a wrong password for the keystore',
        () => baseArgs(tempDir(), '--keystore', cheapKeystore, '--password-file', textFile('nope\n')),
        /cheap-keystore\.json: wrong password for the keystore/,
      ],
      ['a --backup-url that is not http(s)', () => baseArgs(tempDir(), '--key', key, '--backup-url', 'ftp://example'), /--backup-url/],
      // Raiden's fee flags (docs/decisions/0069): a token and a value each.
      [
        'a --flat-fee without its amount',
        () => [...baseArgs(tempDir(), '--key', key), '--flat-fee', net.token],
        /--flat-fee needs a value: --flat-fee <TOKEN AMOUNT>/,
      ],
      [
        'a --proportional-imbalance-fee above 5 %',
        () => baseArgs(tempDir(), '--key', key, '--proportional-imbalance-fee', net.token, '50001'),
        /--proportional-imbalance-fee must be a token address and parts per million from 0 to 50000/,
      ],
      [
        'both --cap-mediation-fees and --no-cap-mediation-fees',
        () => baseArgs(tempDir(), '--key', key, '--cap-mediation-fees', '--no-cap-mediation-fees'),
        /give --cap-mediation-fees or --no-cap-mediation-fees, not both/,
      ],
      // Raiden's routing flags (docs/decisions/0073).
      [
        'an unknown --routing-mode',
        () => baseArgs(tempDir(), '--key', key, '--routing-mode', 'basic'),
        /--routing-mode must be pfs, private, local, got "basic"/,
      ],
      [
        'a --pathfinding-service-address that is no URL',
        () => baseArgs(tempDir(), '--key', key, '--pathfinding-service-address', 'pfs.example:8080'),
        /--pathfinding-service-address must be an http\(s\) URL or auto, got "pfs\.example:8080"/,
      ],
      [
        'a --pathfinding-max-paths above 25',
        () => baseArgs(tempDir(), '--key', key, '--pathfinding-max-paths', '26'),
        /--pathfinding-max-paths must be an integer from 1 to 25, got "26"/,
      ],
      [
        'a --pathfinding-iou-timeout of 0',
        () => baseArgs(tempDir(), '--key', key, '--pathfinding-iou-timeout', '0'),
        /--pathfinding-iou-timeout must be an integer from 1 to 1000000000, got "0"/,
      ],
      [
        'an unreadable keystore',
        () => baseArgs(tempDir(), '--keystore', '/nonexistent/k.json', '--password-file', '/nonexistent/p'),
        /cannot read the keystore \/nonexistent\/k\.json: ENOENT/,
      ],
      [
        'an unreachable RPC',
        () => ['serve', '--rpc', 'http://127.0.0.1:1', '--deployment', deploymentFile, '--key', key, '--data-dir', tempDir()],
        /--rpc http:\/\/127\.0\.0\.1:1: ChainRpcError/,
      ],
      ['a missing dump', () => baseArgs(tempDir(), '--key', key, '--import', '/nonexistent/dump.json'), /cannot read the state dump/],
      ['a port in use', () => [...baseArgs(tempDir(), '--key', key), '--api', `127.0.0.1:${busyPort}`], /127\.0\.0\.1:\d+ is already in use/],
      [
        'a metrics port in use',
        () => [...baseArgs(tempDir(), '--key', key), '--metrics', `127.0.0.1:${busyPort}`],
        /^sluice serve: --metrics 127\.0\.0\.1:\d+: 127\.0\.0\.1:\d+ is already in use \(choose another address or port\)\n$/,
      ],
      [
        'a bad --metrics',
        () => [...baseArgs(tempDir(), '--key', key), '--metrics', 'http://127.0.0.1:9100'],
        /--metrics must be HOST:PORT \(port 0 picks a free one\), got "http:\/\/127\.0\.0\.1:9100"/,
      ],
      // Who may call (docs/decisions/0025): nothing beyond the owner's own programs without a token.
      ...['0.0.0.0', '[::]', '10.1.2.3', 'node.example.org'].map((host): [string, () => string[], RegExp] => [
        `--api ${host} (beyond loopback) without a token`,
        () => [...baseArgs(tempDir(), '--key', key), '--api', `${host}:0`],
        new RegExp(`--api ${host.replace(/[[\]]/g, '').replace(/\./g, '\\.')} is not a loopback address, .*: give --api-token-file FILE`),
      ]),
      [
        '--api-host * without a token',
        () => baseArgs(tempDir(), '--key', key, '--api-host', '*'),
        /--api-host \* lets any web page reach this node by DNS rebinding: give --api-token-file FILE/,
      ],
      [
        '--rpccorsdomain * without a token',
        () => baseArgs(tempDir(), '--key', key, '--rpccorsdomain', 'http://localhost:*,*'),
        /--rpccorsdomain \* lets every web site call this node: give --api-token-file FILE/,
      ],
      [
        'a bad --api-host',
        () => baseArgs(tempDir(), '--key', key, '--api-host', 'node.lan,user@node.lan'),
        /--api-host must be a host name, .*, got "node\.lan,user@node\.lan"/,
      ],
      ['a bad --rpccorsdomain', () => baseArgs(tempDir(), '--key', key, '--rpccorsdomain', 'localhost:3000'), /--rpccorsdomain must be origins such as/],
      [
        'a missing --api-token-file',
        () => baseArgs(tempDir(), '--key', key, '--api-token-file', '/nonexistent/token'),
        /cannot read the API token file \/nonexistent\/token: ENOENT/,
      ],
      [
        'an empty --api-token-file',
        () => baseArgs(tempDir(), '--key', key, '--api-token-file', textFile('\n\n')),
        /has no token on its first line \(make one with: openssl rand -hex 32/,
      ],
      ['an unknown --log-level', () => baseArgs(tempDir(), '--key', key, '--log-level', 'loud'), /--log-level must be debug, info, warn or error, got "loud"/],
      [
        'a --log-config without a root level',
        () => baseArgs(tempDir(), '--key', key, '--log-config', 'raiden:debug'),
        /--log-config must be a root level such as :info or info, alone or among module:LEVEL entries/,
      ],
      [
        '--log-level and --log-config',
        () => baseArgs(tempDir(), '--key', key, '--log-level', 'warn', '--log-config', ':info'),
        /give either --log-level or --log-config, not both/,
      ],
      ['a short API token', () => baseArgs(tempDir(), '--key', key, '--api-token-file', textFile('abcd1234\n')), /has 8 characters, fewer than 16/],
      [
        'an API token a header cannot carry',
        () => baseArgs(tempDir(), '--key', key, '--api-token-file', textFile('correct horse battery staple\n')),
        /may hold only letters, digits and - \. _ ~ \+ \/ \(= at its end\)/,
      ],
    ]
    test.concurrent.each(cases)('%s', async (_, args, message) => {
      let argv = args()
      // --api given twice: keep the last one (the case's own).
      const apis = argv.flatMap((a, i) => (a === '--api' ? [i] : []))
      if (apis.length > 1) argv = argv.filter((_, i) => i !== apis[0] && i !== apis[0]! + 1)
      const { code, stdout, stderr } = await runSluice(argv, tempDir())
      expect(stderr).toMatch(/^sluice serve: /)
      expect(stderr).toMatch(message)
      expect(stderr.endsWith('\n') && stderr.split('\n').length).toBe(2)
      expect(code).toBe(2)
      expect(stdout).toBe('')
    })
  })
})

describe('--rpc', () => {
  const rpcOf = (flags: FlagSpecs, ...argv: string[]) => {
    const parsed = parseFlags(argv, flags)
    return parsed.asked ? undefined : (parsed.values as { rpc?: string[] }).rpc
  }

  test.each([
    ['serve', serveFlags],
    ['monitor', monitorFlags],
    ['pathfinding', pathfindingFlags],
  ] as const)("%s: one, repeated, comma-separated, under Raiden's name too: the endpoints in the order given", (_, flags) => {
    expect(rpcOf(flags, '--rpc', 'http://a:8545')).toEqual(['http://a:8545'])
    expect(rpcOf(flags, '--rpc', 'http://a:8545', '--rpc', 'wss://b.example/v3/key')).toEqual(['http://a:8545', 'wss://b.example/v3/key'])
    expect(rpcOf(flags, '--rpc=http://a:8545,https://b.example')).toEqual(['http://a:8545', 'https://b.example'])
    expect(rpcOf(flags, '--eth-rpc-endpoint', 'http://a:8545, ws://c:8546', '--rpc', 'http://b')).toEqual(['http://a:8545', 'ws://c:8546', 'http://b'])
    for (const bad of ['localhost:8545', 'http://a,', 'ftp://a', 'http://a,,http://b'])
      expect(() => rpcOf(flags, '--rpc', bad), bad).toThrow(expect.objectContaining({ code: 'INVALID_FLAG_VALUE', flag: '--rpc' }))
    expect(() => rpcOf(flags, '--eth-rpc-endpoint', 'http://a', '--eth-rpc-endpoint', 'nope')).toThrow(
      /^--eth-rpc-endpoint must be an http\(s\) or ws\(s\) URL/,
    )
  })

  test('--help says it', async () => {
    const { stdout } = await runSluice(['serve', '--help'], tempDir())
    expect(stdout).toMatch(/--rpc, --eth-rpc-endpoint <URL> +JSON-RPC endpoint of the chain .*repeat or separate with commas for several, used in that order/)
    expect(stdout).toMatch(/Endpoints: several --rpc \(or --eth-rpc-endpoint\) are used in the order given/)
  })
})
