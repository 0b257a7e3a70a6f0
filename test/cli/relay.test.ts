import '../../src/transport/libp2p/nodePolyfills.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../src/transport/libp2p/libp2pTransport.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import { logMessages, relayListening, runSluice, startSluice, type SluiceProcess } from './sluiceProcess.ts'

const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-relay-'))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

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

  test('is listed in the usage of sluice', async () => {
    const { stdout } = await runSluice(['--help'], tmpdir())
    expect(stdout).toMatch(/^ {2}relay +run a libp2p relay/m)
  })

  test('--help lists every flag with its default and exits 0', async () => {
    const { code, stdout } = await runSluice(['relay', '--help'], tmpdir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/--listen <MULTIADDR> .*\(default: \/ip4\/127\.0\.0\.1\/tcp\/9090\/ws\)/)
    expect(stdout).toMatch(/--key <HEX> /)
    expect(stdout).toMatch(/--max-reservations <N> .*\(default: 1000\)/)
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

  // These are refused before anything is loaded.
  test.concurrent.each([
    [['--bogus'], /unknown flag --bogus/],
    [['--listen'], /--listen needs a value/],
    [['--listen', 'nowhere'], /--listen must be a multiaddr/],
    [['--key', '12'], /--key must be 32 bytes of hex/],
    [['--key', '0'.repeat(64)], /--key must be 32 bytes of hex/],
    [['--max-reservations', '0'], /--max-reservations must be an integer from 1 to 1000000, got "0"/],
    [['now'], /unexpected argument "now"/],
  ])('%j exits 2 with a one-line error', async (args, message) => {
    const { code, stdout, stderr } = await runSluice(['relay', ...args], tempDir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.endsWith('\n') && stderr.split('\n').length).toBe(2)
    expect(stderr).toMatch(/^sluice relay: /)
    expect(stderr).toMatch(message)
  })
})
