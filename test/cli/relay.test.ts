import '../../src/transport/libp2p/nodePolyfills.ts'
import { tmpdir } from 'node:os'
import { multiaddr } from '@multiformats/multiaddr'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { makeTestCa, type TestCa } from '../support/testCa.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { bareNode } from '../unit/transport/libp2p/roguePeer.ts'
import { logMessages, relayListening, runSluice, startSluice, type SluiceProcess } from './sluiceProcess.ts'

const tempDir = tempDirs('sluice-relay-')

// A certificate for relay.sluice.test from an authority made now (test/support/testCa.ts).
const caDir = tempDir()
const ca: TestCa = makeTestCa(caDir, ['relay.sluice.test'])

/** Starts `sluice relay` and waits until it is ready; returns the process and the multiaddrs it printed. */
async function startRelayCommand(args: string[]) {
  const sluice = startSluice(['relay', ...args], tempDir())
  await sluice.waitForOutput(/Press Ctrl-C to stop/)
  const { peerId, multiaddrs } = relayListening(sluice.stdout())!
  return { sluice, peerId, multiaddrs }
}

async function stop(sluice: SluiceProcess, signal: NodeJS.Signals) {
  sluice.child.kill(signal)
  return sluice.exited
}

describe('sluice relay', () => {
  test('prints where it listens; two nodes meet through it and exchange lines; Ctrl-C stops it', async () => {
    const { sluice, peerId: relayId, multiaddrs } = await startRelayCommand(['--listen', '/ip4/127.0.0.1/tcp/0/ws'])
    expect(multiaddrs).toEqual([expect.stringMatching(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/ws/p2p/${relayId}$`))])
    const [keyA, keyB] = [anvilKeys[1], anvilKeys[2]]
    const inbox: { lines: string[]; from: string }[] = []
    const transports: Libp2pTransport[] = []
    try {
      const a = createLibp2pTransport({ privateKey: keyA, relays: multiaddrs })
      const b = createLibp2pTransport({ privateKey: keyB, relays: multiaddrs })
      transports.push(a, b)
      const seen: string[] = []
      a.onPeerSeen!((p) => seen.push(p))
      await Promise.all([a.start(() => {}), b.start((lines, from) => inbox.push({ lines, from }))])
      // A asks the relay for B (a node hears of the peers it wants).
      a.connect!(privateKeyToAddress(keyB))
      await vi.waitFor(() => expect(seen).toContain(privateKeyToAddress(keyB)), { timeout: 5_000 })
      await a.send(privateKeyToAddress(keyB), ['through the relay'])
      await vi.waitFor(() => expect(inbox).toEqual([{ lines: ['through the relay'], from: privateKeyToAddress(keyA) }]), { timeout: 5_000 })
    } finally {
      await Promise.all(transports.map((t) => t.stop()))
    }
    expect(await stop(sluice, 'SIGINT')).toEqual({ code: 0, signal: null })
    expect(logMessages(sluice.stdout()).at(-1)).toBe('SIGINT: stopping the relay')
    expect(sluice.stderr()).toBe('')
  })

  test('--metrics: the connections and reservations gauges follow two nodes coming and going, the limit beside them', async () => {
    const { sluice, multiaddrs } = await startRelayCommand(['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--metrics', '127.0.0.1:0', '--max-reservations', '40'])
    const url = metricsUrlOf(sluice.stdout())
    const values = async () => {
      const families = await scrape(url)
      return {
        connections: sampleValue(families, 'sluice_relay_connections'),
        reservations: sampleValue(families, 'sluice_relay_reservations'),
        limit: sampleValue(families, 'sluice_relay_reservations_limit'),
      }
    }
    const transports: Libp2pTransport[] = []
    try {
      expect(await values()).toEqual({ connections: 0, reservations: 0, limit: 40 })
      const a = createLibp2pTransport({ privateKey: anvilKeys[4], relays: multiaddrs })
      const b = createLibp2pTransport({ privateKey: anvilKeys[5], relays: multiaddrs })
      transports.push(a, b)
      await Promise.all([a.start(() => {}), b.start(() => {})])
      await vi.waitFor(async () => expect(await values()).toEqual({ connections: 2, reservations: 2, limit: 40 }), { timeout: 10_000 })
      await Promise.all(transports.splice(0).map((t) => t.stop()))
      // Their connections close; a reservation is libp2p's until it expires (hours), gone or not.
      await vi.waitFor(async () => expect((await values()).connections).toBe(0), { timeout: 10_000 })
      expect(sampleValue(await scrape(url), 'sluice_info', { command: 'relay' })).toBe(1)
    } finally {
      await Promise.all(transports.map((t) => t.stop()))
      expect(await stop(sluice, 'SIGTERM')).toEqual({ code: 0, signal: null })
    }
  })

  test('--key gives the relay a fixed peer id (that of the key); SIGTERM stops it', async () => {
    const { sluice, multiaddrs } = await startRelayCommand(['--listen=/ip4/127.0.0.1/tcp/0/ws', '--key', anvilKeys[3].slice(2)])
    expect(multiaddrs[0]).toMatch(new RegExp(`/p2p/${peerIdOfKey(anvilKeys[3])}$`))
    expect(await stop(sluice, 'SIGTERM')).toEqual({ code: 0, signal: null })
  })

  test('an address in use: exits 2 with a one-line error', async () => {
    const { sluice, multiaddrs } = await startRelayCommand(['--listen', '/ip4/127.0.0.1/tcp/0/ws'])
    try {
      const listen = multiaddrs[0]!.replace(/\/p2p\/.*$/, '')
      const { code, stdout, stderr } = await runSluice(['relay', '--listen', listen], tempDir())
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toBe(`sluice relay: cannot listen on ${listen}: the address is already in use (choose another port, or tcp/0 for a free one)\n`)
    } finally {
      await stop(sluice, 'SIGINT')
    }
  })

  test('--announce (repeated) is what it prints, each with its peer id, in the order given; it says where its sockets are', async () => {
    const { sluice, peerId, multiaddrs } = await startRelayCommand(
      ['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--announce', '/dns4/relay.sluice.test/tcp/443/wss'].concat(['--announce', '/ip4/203.0.113.7/tcp/9090/ws']),
    )
    expect(multiaddrs).toEqual([`/dns4/relay.sluice.test/tcp/443/wss/p2p/${peerId}`, `/ip4/203.0.113.7/tcp/9090/ws/p2p/${peerId}`])
    expect(logMessages(sluice.stdout())[1]).toMatch(/^Sockets: \/ip4\/127\.0\.0\.1\/tcp\/\d+\/ws \(nodes are given the --announce addresses above\)$/)
    expect(await stop(sluice, 'SIGTERM')).toEqual({ code: 0, signal: null })
    expect(sluice.stderr()).toBe('')
  })

  test('TLS without --announce: it listens on /tls/ws and warns that nodes need a name its certificate holds', async () => {
    const { sluice, peerId, multiaddrs } = await startRelayCommand(['--listen', '/ip4/127.0.0.1/tcp/0/wss', '--tls-cert', ca.certFile, '--tls-key', ca.keyFile])
    expect(multiaddrs).toEqual([expect.stringMatching(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/tls/ws/p2p/${peerId}$`))])
    // stderr is its own pipe: the warning may come after the ready line on stdout.
    await vi.waitFor(() =>
      expect(sluice.stderr()).toMatch(
        /WARN +Nodes check the certificate against the name they dial: give --announce \/dns4\/<name>\/tcp\/<port>\/wss, a name of relay\.sluice\.test\n$/,
      ),
    )
    expect(await stop(sluice, 'SIGTERM')).toEqual({ code: 0, signal: null })
  })

  test('is listed in the usage of sluice', async () => {
    const { stdout } = await runSluice(['--help'], tmpdir())
    expect(stdout).toMatch(/^ {2}relay +run a libp2p relay/m)
  })

  test('--help lists every flag with its default and exits 0', async () => {
    const { code, stdout } = await runSluice(['relay', '--help'], tmpdir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/--listen <MULTIADDR> .*\(default: \/ip4\/127\.0\.0\.1\/tcp\/9090\/ws, with --tls-cert \/ip4\/0\.0\.0\.0\/tcp\/443\/wss\)/)
    expect(stdout).toMatch(/--tls-cert <FILE> /)
    expect(stdout).toMatch(/--tls-key <FILE> /)
    expect(stdout).toMatch(/--announce <MULTIADDR> /)
    expect(stdout).toMatch(/--key <HEX> /)
    expect(stdout).toMatch(/--max-reservations <N> .*\(default: 1000\)/)
    expect(stdout).toMatch(/--metrics <HOST:PORT> +serve Prometheus metrics at http:\/\/HOST:PORT\/metrics/)
    // The limits per peer and per address (docs/decisions/0064), each with its default.
    expect(stdout).toMatch(/--max-connection-rate <N> .*\(default: 100\)/)
    expect(stdout).toMatch(/--max-circuit-rate <N> .*\(default: 50\)/)
    expect(stdout).toMatch(/--max-connections-per-ip <N> .*\(default: 200\)/)
    expect(stdout).toMatch(/--max-reservations-per-ip <N> .*\(default: 100\)/)
    expect(stdout).toMatch(/--peer-bytes-per-second <N> .*\(default: 1048576\)/)
    expect(stdout).toMatch(/--ip-bytes-per-second <N> .*\(default: 4194304\)/)
    expect(stdout).toMatch(/--max-announcement-bytes <N> .*\(default: 4096\)/)
    expect(stdout).toMatch(/--max-announcements-per-minute <N> .*\(default: 60\)/)
    expect(stdout).toMatch(/--proxy <IP> .*reverse proxy/)
    expect(stdout).toMatch(/--drop-log-interval <N> .*\(default: 60\)/)
  })

  test('what it refuses is logged (warnings, on stderr) once an interval per address, with the count of each reason', async () => {
    const { sluice, multiaddrs } = await startRelayCommand(['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--max-connections-per-ip', '1', '--drop-log-interval', '1'])
    const nodes = await Promise.all([1, 2, 3].map(() => bareNode(generatePrivateKey())))
    try {
      const results = await Promise.allSettled(nodes.map((n) => n.dial(multiaddr(multiaddrs[0]!))))
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(2)
      await vi.waitFor(() => expect(sluice.stderr()).toMatch(/WARN +Refused or held back from 127\.0\.0\.1: connectionsPerIp 2\n/), { timeout: 5_000 })
    } finally {
      await Promise.all(nodes.map((n) => n.stop()))
      // Stopped whatever happened above (a relay left running would outlive the test run).
      if (sluice.child.exitCode === null) sluice.child.kill('SIGTERM')
    }
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(logMessages(sluice.stderr())).toEqual(['Refused or held back from 127.0.0.1: connectionsPerIp 2'])
  })

  // These load libp2p and try to listen: one at a time, so as not to swamp the machine.
  test.each([
    [['--listen', '/ip4/127.0.0.1/tcp/0'], 'cannot listen on /ip4/127.0.0.1/tcp/0: not a WebSockets address (use /ip4/HOST/tcp/PORT/ws)'],
    [['--listen', '/ip4/192.0.2.1/tcp/0/ws'], 'cannot listen on /ip4/192.0.2.1/tcp/0/ws: the address is not one of this machine'],
  ])('%j exits 2 with a one-line error', async (args, message) => {
    const { code, stdout, stderr } = await runSluice(['relay', ...args], tempDir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toBe(`sluice relay: ${message}\n`)
  })

  // What TLS and --announce are given: refused before the relay starts, each with what is wrong in one line.
  const tlsCases: [string, string[], string | RegExp][] = [
    ['a certificate without its key', ['--tls-cert', ca.certFile], '--tls-cert goes with --tls-key FILE (see sluice relay --help)'],
    ['a key without its certificate', ['--tls-key', ca.keyFile], '--tls-key goes with --tls-cert FILE (see sluice relay --help)'],
    [
      'a certificate file that is not there',
      ['--tls-cert', `${ca.certFile}.gone`, '--tls-key', ca.keyFile],
      `cannot read the certificate --tls-cert ${ca.certFile}.gone: ENOENT`,
    ],
    ['a key that is a folder', ['--tls-cert', ca.certFile, '--tls-key', caDir], `cannot read the private key --tls-key ${caDir}: EISDIR`],
    [
      'a key given as the certificate',
      ['--tls-cert', ca.keyFile, '--tls-key', ca.keyFile],
      `--tls-cert ${ca.keyFile} is not a certificate in PEM (-----BEGIN CERTIFICATE-----)`,
    ],
    [
      'a certificate given as the key',
      ['--tls-cert', ca.certFile, '--tls-key', ca.certFile],
      `--tls-key ${ca.certFile} is not an unencrypted private key in PEM (-----BEGIN PRIVATE KEY-----, as certbot writes it)`,
    ],
    [
      "a key that is not the certificate's",
      ['--tls-cert', ca.certFile, '--tls-key', ca.otherKeyFile],
      `--tls-key ${ca.otherKeyFile} is not the key of the certificate --tls-cert ${ca.certFile} (they are not a pair)`,
    ],
    [
      'TLS on a plain /ws address',
      ['--listen', '/ip4/127.0.0.1/tcp/0/ws', '--tls-cert', ca.certFile, '--tls-key', ca.keyFile],
      '--tls-cert is served on a /wss listen address, not on --listen /ip4/127.0.0.1/tcp/0/ws (see sluice relay --help)',
    ],
    [
      'a /wss address without a certificate',
      ['--listen', '/ip4/127.0.0.1/tcp/0/wss'],
      '--listen /ip4/127.0.0.1/tcp/0/wss needs --tls-cert FILE and --tls-key FILE (or listen on /ws behind a TLS proxy, with --announce) (see sluice relay --help)',
    ],
    [
      'an announced name the certificate does not hold',
      ['--listen', '/ip4/127.0.0.1/tcp/0/wss', '--tls-cert', ca.certFile, '--tls-key', ca.keyFile, '--announce', '/dns4/relay.example.com/tcp/443/wss'],
      '--announce /dns4/relay.example.com/tcp/443/wss: the certificate --tls-cert is for relay.sluice.test, not relay.example.com (see sluice relay --help)',
    ],
    [
      'an announce that is not a multiaddr',
      ['--announce', 'relay.example.com:443'],
      /--announce must be a WebSockets multiaddr such as \/dns4\/relay\.example\.com\/tcp\/443\/wss/,
    ],
    [
      'an announce that does not parse',
      ['--announce', '/dns4/relay.example.com/tcp/x/wss'],
      /--announce must be a WebSockets multiaddr .*got "\/dns4\/relay\.example\.com\/tcp\/x\/wss"/,
    ],
    [
      'an announce not over WebSockets',
      ['--announce', '/dns4/relay.example.com/tcp/443'],
      /--announce must be a WebSockets multiaddr .*got "\/dns4\/relay\.example\.com\/tcp\/443"/,
    ],
    [
      'an announce with a peer id',
      ['--announce', `/dns4/relay.example.com/tcp/443/wss/p2p/${peerIdOfKey(anvilKeys[3])}`],
      /--announce must be .*\(without \/p2p\/: the relay adds its own peer id\)/,
    ],
  ]
  test.concurrent.each(tlsCases)('%s: exits 2 with a one-line error', async (_what, args, message) => {
    const { code, stdout, stderr } = await runSluice(['relay', ...args], tempDir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.endsWith('\n') && stderr.split('\n').length).toBe(2)
    if (typeof message === 'string') expect(stderr).toBe(`sluice relay: ${message}\n`)
    else expect(stderr).toMatch(message)
  })

  // These are refused before anything is loaded.
  test.concurrent.each([
    [['--bogus'], /unknown flag --bogus/],
    [['--listen'], /--listen needs a value/],
    [['--listen', 'nowhere'], /--listen must be a multiaddr/],
    [['--key', '12'], /--key must be 32 bytes of hex/],
    [['--key', '0'.repeat(64)], /--key must be 32 bytes of hex/],
    [['--max-reservations', '0'], /--max-reservations must be an integer from 1 to 1000000, got "0"/],
    [['--peer-bytes-per-second', '10'], /--peer-bytes-per-second must be an integer >= 1024, got "10"/],
    [['--proxy', 'nginx'], /--proxy must be an IP address or a CIDR block, such as 127\.0\.0\.1 or 10\.0\.0\.0\/8, got "nginx"/],
    [['--proxy', '10.0.0.0/40'], /--proxy must be an IP address or a CIDR block/],
    [['now'], /unexpected argument "now"/],
    [['--metrics', 'localhost'], /--metrics must be HOST:PORT \(port 0 picks a free one\), got "localhost"/],
    [['--metrics', '127.0.0.1:70000'], /--metrics must be HOST:PORT/],
  ])('%j exits 2 with a one-line error', async (args, message) => {
    const { code, stdout, stderr } = await runSluice(['relay', ...args], tempDir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.endsWith('\n') && stderr.split('\n').length).toBe(2)
    expect(stderr).toMatch(/^sluice relay: /)
    expect(stderr).toMatch(message)
  })
})
