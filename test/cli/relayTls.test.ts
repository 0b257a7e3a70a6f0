/**
 * Relays a page can reach (issue 29): `sluice relay` over WebSockets Secure under a DNS name, with TLS in the relay
 * and behind nginx and Caddy (Debian's), and `sluice serve` nodes that reach it by that name and pay each other
 * through it; and a `sluice serve` hub that serves WebSockets Secure itself for direct connections (--p2p-tls-cert). The certificate comes from an authority the test makes (test/support/testCa.ts); the nodes trust it
 * by NODE_EXTRA_CA_CERTS and find the name in an /etc/hosts of their own, nothing switched off.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:tls'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { eventually } from '../integration/support/eventually.ts'
import { freePort, makeTestCa, nodeTrust, type TestCa, withHosts } from '../support/testCa.ts'
import { call } from './devnetProcess.ts'
import { relayListening, runSluice, type SluiceProcess, sluiceBin, startSluice, stopSluice, quickServeFlags } from './sluiceProcess.ts'

const NAME = 'relay.sluice.test'
/** A hub's name, for its direct connections over WebSockets Secure; the test's certificate is for both. */
const HUB = 'hub.sluice.test'
const repo = new URL('../../', import.meta.url)
const keys = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[4], anvilKeys[5], anvilKeys[6], anvilKeys[7], anvilKeys[8]] as Hex[]
const relayKey = anvilKeys[9] as Hex
const relayPeerId = peerIdOfKey(relayKey).toString()

let dir: string
let ca: TestCa
let net: Devnet
let deploymentFile: string
const started: SluiceProcess[] = []
const proxies: ReturnType<typeof spawn>[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-relay-tls-'))
  ca = makeTestCa(join(dir, 'ca'), [NAME, HUB])
  net = await startDevnet(keys)
  deploymentFile = join(dir, 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
})

afterAll(async () => {
  await Promise.all(started.map((p) => stopSluice(p, 5_000)))
  for (const proxy of proxies) if (proxy.exitCode === null && proxy.signalCode === null) proxy.kill('SIGKILL')
  await net?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** In the test's names: a process whose /etc/hosts maps NAME to 127.0.0.1, trusting the test's authority or not. */
function named(trusted: boolean) {
  return { wrap: (command: string[]) => withHosts(dir, { [NAME]: '127.0.0.1', [HUB]: '127.0.0.1' }, command), ...(trusted ? { env: nodeTrust(ca) } : {}) }
}

function start(args: string[], options: Parameters<typeof startSluice>[3] = {}): SluiceProcess {
  const p = startSluice(args, dir, sluiceBin, options)
  started.push(p)
  return p
}

/** What a Node process in the test's names makes of a TLS connection to name:port: `verified`, or the error's code. */
function probe(port: number, trusted: boolean, inNames = true, name = NAME): string {
  const script = `const s = require('node:tls').connect({ host: '${name}', port: ${port}, servername: '${name}' }, () => { console.log('verified'); s.end() }); s.on('error', (e) => console.log(e.code))`
  const command = [process.execPath, '-e', script]
  const [file, ...args] = inNames ? withHosts(dir, { [name]: '127.0.0.1' }, command) : command
  return execFileSync(file!, args, { env: trusted ? nodeTrust(ca) : process.env, encoding: 'utf8', timeout: 10_000 }).trim()
}

/** Resolves once something accepts TLS connections on 127.0.0.1:port (a proxy that has started). */
async function tlsListening(port: number): Promise<void> {
  await eventually(
    () =>
      new Promise<void>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, servername: NAME, ca: readFileSync(ca.caFile) }, () => {
          socket.end()
          resolve()
        })
        socket.once('error', reject)
      }),
    10_000,
  )
}

async function startRelay(args: string[]): Promise<{ relay: SluiceProcess; address: string; sockets: string }> {
  const relay = start(['relay', '--key', relayKey, ...args])
  await relay.waitForOutput(/Press Ctrl-C to stop/)
  const printed = relayListening(relay.stdout())!.multiaddrs
  expect(printed).toHaveLength(1)
  return { relay, address: printed[0]!, sockets: /Sockets: (\S+)/.exec(relay.stdout())?.[1] ?? '' }
}

const serveArgs = (key: Hex, relay: string) =>
  ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', key, '--data-dir', mkdtempSync(join(dir, 'node-'))].concat([
    ...quickServeFlags,
    '--relay',
    relay,
  ])

/**
 * Two `sluice serve` nodes in the test's names, trusting its authority, with `relay` (by name) as their relay: each
 * reachable through it at that address only, and a payment from the first to the second arrives.
 */
async function payThrough(label: string, relay: string, [keyA, keyB]: [Hex, Hex]): Promise<void> {
  const t0 = performance.now()
  const nodes = await Promise.all(
    [keyA, keyB].map(async (key) => {
      const sluice = start(serveArgs(key, relay), named(true))
      const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
      // The reservation through the relay, at the address the relay announced and nowhere else.
      await sluice.waitForOutput(new RegExp(`libp2p: reachable at ${`${relay}/p2p-circuit/p2p/${peerIdOfKey(key)}`.replace(/[/.]/g, '\\$&')}$`, 'm'), 20_000)
      return { sluice, api: api!.replace(/\/$/, '') }
    }),
  )
  const tReachable = performance.now()
  const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]]
  const [addressA, addressB] = [privateKeyToAddress(keyA), privateKeyToAddress(keyB)]
  await eventually(async () => expect((await call('GET', `${a.api}/status`)).body).toEqual({ status: 'ready' }), 30_000)
  const opened = await call('PUT', `${a.api}/channels`, { partner_address: addressB, token_address: net.token, total_deposit: '100' })
  expect(opened.status).toBe(201)
  const paid = await call('POST', `${a.api}/payments/${net.token}/${addressB}`, { amount: '7', identifier: '1' })
  expect(paid).toMatchObject({ status: 200, body: { initiator_address: addressA, target_address: addressB, amount: '7' } })
  await eventually(async () => expect((await call('GET', `${b.api}/channels/${net.token}/${addressA}`)).body).toMatchObject({ balance: '7' }))
  const tPaid = performance.now()
  await Promise.all(nodes.map(({ sluice }) => stopSluice(sluice)))
  console.log(`${label}: both nodes reachable through it ${Math.round(tReachable - t0)} ms, channel and payment ${Math.round(tPaid - tReachable)} ms`)
  for (const { sluice } of nodes) expect(sluice.stderr()).toBe('')
}

/** The configuration file shipped in docs/relay/, with `replacements` made (each must be found: the file is what ran). */
function shippedConfig(file: string, replacements: [string, string][]): string {
  let text = readFileSync(new URL(`docs/relay/${file}`, repo), 'utf8')
  for (const [from, to] of replacements) {
    expect(text).toContain(from)
    text = text.replaceAll(from, to)
  }
  return text
}

describe('sluice relay over wss, reached by name', () => {
  test('TLS in the relay: it prints its --announce address; nodes trusting the authority reach it by name and pay through it', async () => {
    const port = await freePort()
    const { address, sockets } = await startRelay(
      ['--listen', `/ip4/127.0.0.1/tcp/${port}/wss`, '--tls-cert', ca.certFile, '--tls-key', ca.keyFile].concat([
        '--announce',
        `/dns4/${NAME}/tcp/${port}/wss`,
      ]),
    )
    expect(address).toBe(`/dns4/${NAME}/tcp/${port}/wss/p2p/${relayPeerId}`)
    expect(sockets).toBe(`/ip4/127.0.0.1/tcp/${port}/tls/ws`)
    // Nothing is switched off: the name is the test's alone, and only a process given the authority accepts the certificate.
    expect(probe(port, true, false)).toBe('ENOTFOUND')
    expect(probe(port, false)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE')
    expect(probe(port, true)).toBe('verified')
    await payThrough('TLS in the relay', address, [keys[0]!, keys[1]!])
  })

  test('behind nginx, with the configuration docs/operating.md shows: a plain-ws relay with --announce; nodes pay through it', async () => {
    const port = await freePort()
    const { address, sockets } = await startRelay(['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--announce', `/dns4/${NAME}/tcp/${port}/wss`])
    expect(address).toBe(`/dns4/${NAME}/tcp/${port}/wss/p2p/${relayPeerId}`)
    const relayPort = /^\/ip4\/127\.0\.0\.1\/tcp\/(\d+)\/ws$/.exec(sockets)![1]!
    const server = shippedConfig('nginx.conf', [
      ['/etc/letsencrypt/live/relay.example.com/fullchain.pem', ca.certFile],
      ['/etc/letsencrypt/live/relay.example.com/privkey.pem', ca.keyFile],
      ['relay.example.com', NAME],
      ['listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`],
      ['127.0.0.1:9090', `127.0.0.1:${relayPort}`],
    ])
    const nginxDir = mkdtempSync(join(dir, 'nginx-'))
    writeFileSync(join(nginxDir, 'sluice-relay.conf'), server)
    // nginx's own part, around the shipped server block: in the foreground, one process, everything in nginxDir.
    writeFileSync(
      join(nginxDir, 'nginx.conf'),
      `daemon off;\nmaster_process off;\npid ${nginxDir}/nginx.pid;\nerror_log stderr warn;\nevents { worker_connections 256; }\nhttp {\n  access_log off;\n` +
        ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${nginxDir}/${t};\n`).join('') +
        `  include ${nginxDir}/sluice-relay.conf;\n}\n`,
    )
    const nginx = spawn('nginx', ['-e', 'stderr', '-p', nginxDir, '-c', join(nginxDir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
    proxies.push(nginx)
    let nginxErrors = ''
    nginx.stderr!.on('data', (c: Buffer) => (nginxErrors += c.toString()))
    await tlsListening(port)
    await payThrough('behind nginx', address, [keys[2]!, keys[3]!])
    nginx.kill('SIGTERM')
    await new Promise((resolve) => nginx.once('close', resolve))
    expect(nginxErrors).toBe('')
  })

  test('behind Caddy, with the Caddyfile docs/operating.md shows: nodes pay through it', async () => {
    const port = await freePort()
    const { address, sockets } = await startRelay(['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--announce', `/dns4/${NAME}/tcp/${port}/wss`])
    const relayPort = /^\/ip4\/127\.0\.0\.1\/tcp\/(\d+)\/ws$/.exec(sockets)![1]!
    const site = shippedConfig('Caddyfile', [
      // The test's certificate in place of Let's Encrypt's, and its port on 127.0.0.1.
      ['relay.example.com {', `${NAME}:${port} {\n\tbind 127.0.0.1\n\ttls ${ca.certFile} ${ca.keyFile}`],
      ['127.0.0.1:9090', `127.0.0.1:${relayPort}`],
    ])
    const caddyDir = mkdtempSync(join(dir, 'caddy-'))
    const caddyfile = join(caddyDir, 'Caddyfile')
    // Caddy's own part: no admin endpoint, no port 80 for redirects, its state in caddyDir.
    writeFileSync(caddyfile, `{\n\tadmin off\n\tauto_https disable_redirects\n\tstorage file_system ${caddyDir}/data\n}\n${site}`)
    const env = { ...process.env, HOME: caddyDir, XDG_DATA_HOME: caddyDir, XDG_CONFIG_HOME: caddyDir }
    const caddy = spawn('caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    proxies.push(caddy)
    let caddyLog = ''
    caddy.stderr!.on('data', (c: Buffer) => (caddyLog += c.toString()))
    await tlsListening(port)
    await payThrough('behind Caddy', address, [keys[4]!, keys[5]!])
    caddy.kill('SIGTERM')
    await new Promise((resolve) => caddy.once('close', resolve))
    expect(caddyLog).not.toMatch(/"level":"error"/)
  })

  test('docs/operating.md\'s "Run a relay on a server" shows the configuration files these tests ran', () => {
    const guide = readFileSync(new URL('docs/operating.md', repo), 'utf8')
    for (const file of ['nginx.conf', 'Caddyfile']) expect(guide).toContain(readFileSync(new URL(`docs/relay/${file}`, repo), 'utf8').trim())
  })
})

describe('sluice serve over wss: TLS in the node for its direct connections', () => {
  test('an announced name the certificate is not for, or a key not its pair: one line, exit code 2, before anything starts', async () => {
    const direct = ['--p2p-listen', '/ip4/127.0.0.1/tcp/0/wss', '--p2p-tls-cert', ca.certFile]
    const relay = `/ip4/127.0.0.1/tcp/9/ws/p2p/${relayPeerId}`
    const wrongName = await runSluice(
      [...serveArgs(keys[6]!, relay), ...direct, '--p2p-tls-key', ca.keyFile, '--p2p-announce', '/dns4/other.example/tcp/443/wss'],
      dir,
    )
    expect(wrongName).toMatchObject({ code: 2 })
    expect(wrongName.stderr.trim()).toBe(
      `sluice serve: --p2p-announce /dns4/other.example/tcp/443/wss: the certificate --p2p-tls-cert is for ${NAME}, ${HUB}, not other.example (see sluice serve --help)`,
    )
    const notPair = await runSluice([...serveArgs(keys[6]!, relay), ...direct, '--p2p-tls-key', ca.otherKeyFile], dir)
    expect(notPair).toMatchObject({ code: 2 })
    expect(notPair.stderr.trim()).toBe(
      `sluice serve: --p2p-tls-key ${ca.otherKeyFile} is not the key of the certificate --p2p-tls-cert ${ca.certFile} (they are not a pair)`,
    )
  })

  test('a hub serves /wss with --p2p-tls-cert under its --p2p-announce name; a node trusting the authority dials it there and pays over it, not through the relay', async () => {
    const { address: relay } = await startRelay(['--listen', '/ip4/127.0.0.1/tcp/0/ws'])
    const port = await freePort()
    const [hubKey, payerKey] = [keys[6]!, keys[7]!]
    const direct = ['--p2p-listen', `/ip4/127.0.0.1/tcp/${port}/wss`, '--p2p-tls-cert', ca.certFile, '--p2p-tls-key', ca.keyFile]
    const hub = start([...serveArgs(hubKey, relay), ...direct, '--p2p-announce', `/dns4/${HUB}/tcp/${port}/wss`], named(true))
    // The name resolves to 127.0.0.1 here: a private address, which a node dials only with --p2p-allow-private.
    const payer = start([...serveArgs(payerKey, relay), '--p2p-allow-private'], named(true))
    const [hubApi, payerApi] = await Promise.all(
      [hub, payer].map(async (p) => ((await p.waitForOutput(/REST API: (\S+)\n/, 60_000)) as unknown as string[])[1]!.replace(/\/$/, '')),
    )
    for (const api of [hubApi, payerApi]) await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 30_000)
    // The hub's socket (open once its transport started) serves TLS with the certificate for its name, which a client
    // trusting the authority verifies, and one that does not refuses.
    await eventually(() => expect(probe(port, true, true, HUB)).toBe('verified'), 20_000)
    expect(probe(port, false, true, HUB)).toMatch(/CERT|SIGNATURE/)
    const [hubAddress, payerAddress] = [privateKeyToAddress(hubKey), privateKeyToAddress(payerKey)]
    expect(await call('PUT', `${payerApi}/channels`, { partner_address: hubAddress, token_address: net.token, total_deposit: '100' })).toMatchObject({
      status: 201,
    })
    const paid = await call('POST', `${payerApi}/payments/${net.token}/${hubAddress}`, { amount: '7', identifier: '1' })
    expect(paid).toMatchObject({ status: 200, body: { amount: '7' } })
    await eventually(async () => expect((await call('GET', `${hubApi}/channels/${net.token}/${payerAddress}`)).body).toMatchObject({ balance: '7' }))
    // Over a direct WebSockets Secure connection, which both ends count.
    for (const api of [payerApi, hubApi])
      await eventually(async () => expect((await call('GET', `${api}/_debug/transport`)).body).toMatchObject({ transport: { direct_peers: 1 } }))
    expect(payer.stdout()).toContain(`libp2p: direct connection with ${peerIdOfKey(hubKey)} (outbound)`)
    await Promise.all([hub, payer].map((p) => stopSluice(p)))
    for (const p of [hub, payer]) expect(p.stderr()).toBe('')
  })
})
