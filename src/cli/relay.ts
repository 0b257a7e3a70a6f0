import type { Hex } from 'viem'
import { answerAsked, type FlagSpec, formatFlags, InvalidFlagValueError, integerFlag, parseFlags, stringFlag } from './args.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { metricsFlags, startMetrics } from './metricsFlags.ts'
import { nextSignal } from './processSignals.ts'
import { CliError, UsageError } from './cliError.ts'
import type { Command } from './command.ts'
import { certificateNames, checkCertificateNames, readTlsFiles, type TlsFiles } from './tlsFiles.ts'
import { defaultRelayLimits, isProxyEntry } from '../transport/libp2p/relayLimitOptions.ts'
import { isDialableWebSockets } from './directFlags.ts'

const PLAIN_LISTEN = '/ip4/127.0.0.1/tcp/9090/ws'
const TLS_LISTEN = '/ip4/0.0.0.0/tcp/443/wss'
const announceExpected = 'a WebSockets multiaddr such as /dns4/relay.example.com/tcp/443/wss (without /p2p/: the relay adds its own peer id)'

export const relayFlags = {
  listen: stringFlag({
    description: `multiaddr to listen on (WebSockets: /ws, or /wss with --tls-cert); tcp/0 picks a free port (default: ${PLAIN_LISTEN}, with --tls-cert ${TLS_LISTEN})`,
    valueName: 'MULTIADDR',
  }),
  tlsCert: stringFlag({
    description: "the certificate for a /wss listen address, in PEM, the chain after it (certbot's fullchain.pem); with --tls-key",
    valueName: 'FILE',
  }),
  tlsKey: stringFlag({ description: "the certificate's private key, in PEM, unencrypted (certbot's privkey.pem)", valueName: 'FILE' }),
  announce: {
    ...stringFlag({
      description:
        'the address nodes reach the relay at, printed and given out in place of the listen address: behind a TLS proxy or under a DNS name, /dns4/relay.example.com/tcp/443/wss; repeat the flag for several',
      valueName: 'MULTIADDR',
    }),
    expected: announceExpected,
    parse: (raw: string) => {
      const values = raw.split(',').map((v) => v.trim())
      return values.every((v) => v.startsWith('/')) ? values : undefined
    },
    repeatable: true,
  } as FlagSpec<string[], false>,
  key: stringFlag({
    description: "32-byte secp256k1 private key in hex, so the relay's peer id stays the same across restarts (default: a new key each run)",
    valueName: 'HEX',
  }),
  maxReservations: integerFlag({
    description: 'how many peers may hold a reservation at once',
    min: 1,
    max: 1_000_000,
    default: 1000,
  }),
  maxConnectionRate: integerFlag({
    description: 'how many new connections one IP address may open a second (browsers behind one NAT share an address), and new circuits its peers may',
    min: 1,
    max: 1_000_000,
    default: defaultRelayLimits.maxConnectionRate,
  }),
  maxCircuitRate: integerFlag({
    description: 'how many new circuits (relayed connections to other peers) one peer may open a second',
    min: 1,
    max: 1_000_000,
    default: defaultRelayLimits.maxCircuitRate,
  }),
  maxConnectionsPerIp: integerFlag({
    description: 'how many connections one IP address may hold open at once',
    min: 1,
    max: 1_000_000,
    default: defaultRelayLimits.maxConnectionsPerIp,
  }),
  maxReservationsPerIp: integerFlag({
    description: 'how many peers of one IP address may hold a reservation at once',
    min: 1,
    max: 1_000_000,
    default: defaultRelayLimits.maxReservationsPerIp,
  }),
  peerBytesPerSecond: integerFlag({
    description: 'bytes a second one peer may send through the relay; over it, its connection waits',
    min: 1024,
    max: Number.MAX_SAFE_INTEGER,
    default: defaultRelayLimits.peerBytesPerSecond,
  }),
  ipBytesPerSecond: integerFlag({
    description: 'bytes a second the peers of one IP address may send together',
    min: 1024,
    max: Number.MAX_SAFE_INTEGER,
    default: defaultRelayLimits.ipBytesPerSecond,
  }),
  maxAnnouncementBytes: integerFlag({
    description: 'the largest presence announcement passed on (one is a few hundred bytes)',
    min: 256,
    max: 1024 * 1024,
    default: defaultRelayLimits.maxAnnouncementBytes,
  }),
  maxAnnouncementsPerMinute: integerFlag({
    description: 'presence announcements one peer may publish a minute (a node makes two, and one per newcomer)',
    min: 1,
    max: 1_000_000,
    default: defaultRelayLimits.maxAnnouncementsPerMinute,
  }),
  maxWatchesPerIp: integerFlag({
    description: "addresses the nodes of one IP address may watch at once in the relay's presence registry",
    min: 1,
    max: 100_000_000,
    default: defaultRelayLimits.maxWatchesPerIp,
  }),
  proxy: {
    ...stringFlag({
      description:
        'the address (or CIDR block) of a reverse proxy in front of the relay: every peer behind it comes from that address, so the per-IP limits do not apply to it (the per-peer ones do); repeat the flag for several',
      valueName: 'IP',
    }),
    expected: 'an IP address or a CIDR block, such as 127.0.0.1 or 10.0.0.0/8',
    parse: (raw: string) => {
      const values = raw.split(',').map((v) => v.trim())
      return values.every(isProxyEntry) ? values : undefined
    },
    repeatable: true,
  } as FlagSpec<string[], false>,
  dropLogInterval: integerFlag({
    description: 'seconds between the log lines that tell, for each peer or address, what the relay refused or held back',
    min: 1,
    max: 86_400,
    default: 60,
  }),
  ...metricsFlags,
  ...logFlags,
}

const usage = `Usage: sluice relay [flags]

Runs a libp2p relay: a circuit relay v2 server through which nodes (browsers included) reach each other by
peer id, and the hub of the presence topic. Logs the multiaddrs that nodes configure as their relay (one line,
\`Relay <peer id> listening on <multiaddr>, ...\`; with --log-json, the fields peerId and multiaddrs): the --announce
addresses when given, else those it listens on. Runs until Ctrl-C.

Every peer and every IP address has limits (connections, reservations, bytes a second, announcements); what the
relay refuses or holds back is logged once a --drop-log-interval per peer or address. Behind a reverse proxy on
this machine, every peer comes from its address: give it with --proxy 127.0.0.1.

A page served over HTTPS may open WebSockets Secure only: serve TLS in the relay (--tls-cert, --tls-key, a /wss
listen address), or run it on /ws behind a proxy that does (Caddy, nginx), with --announce
/dns4/<name>/tcp/443/wss. "Run a relay on a server" in the repository's docs/operating.md has both.

Flags:
${formatFlags(relayFlags)}`

export class ListenFailedError extends CliError {
  override name = 'ListenFailedError' as const
  override readonly code = 'LISTEN_FAILED' as const
  constructor(
    readonly listen: string,
    reason: string,
  ) {
    super(`cannot listen on ${listen}: ${reason}`, 2)
  }
}

function parseKey(raw: string): Hex | undefined {
  const hex = raw.startsWith('0x') ? raw.slice(2) : raw
  return /^[0-9a-fA-F]{64}$/.test(hex) && !/^0+$/.test(hex) ? (`0x${hex.toLowerCase()}` as Hex) : undefined
}

/**
 * Why libp2p could not listen, in a few words, or undefined if the error is something else. libp2p lists each
 * address that failed on its own line (`  <addr>: <error>`), followed by a stack trace.
 */
function listenFailure(error: unknown, listen: string): string | undefined {
  if (!(error instanceof Error) || error.name !== 'UnsupportedListenAddressesError') return undefined
  const detail =
    error.message
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.startsWith(`${listen}: `))
      ?.slice(listen.length + 2) ?? ''
  if (/EADDRINUSE/.test(detail)) return 'the address is already in use (choose another port, or tcp/0 for a free one)'
  if (/EADDRNOTAVAIL/.test(detail)) return 'the address is not one of this machine'
  if (/EACCES/.test(detail)) return 'permission denied (ports below 1024 need root)'
  if (/UnsupportedListenAddressError/.test(detail)) return 'not a WebSockets address (use /ip4/HOST/tcp/PORT/ws)'
  return detail.replace(/^\w*Error: /, '') || 'libp2p refused it'
}

/**
 * With TLS in the relay, each secure address announced by name must be one its certificate holds: a node checks
 * the certificate against the name it dials, and would be refused every time.
 */
/** `peerThrottled 12, announcementTooOften 40`: the reasons of one report, in a word each. */
function dropSummary(counts: Partial<Record<string, number>>): string {
  return Object.entries(counts)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ')
}

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, relayFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const { key, tlsCert, tlsKey, maxReservations, dropLogInterval } = parsed.values
  const { maxConnectionRate, maxCircuitRate, maxConnectionsPerIp, maxReservationsPerIp, peerBytesPerSecond, ipBytesPerSecond } = parsed.values
  const { maxAnnouncementBytes, maxAnnouncementsPerMinute, maxWatchesPerIp } = parsed.values
  const proxies = parsed.values.proxy ?? []
  const announce = parsed.values.announce ?? []
  const log = loggerFromFlags(parsed.values)
  const privateKey = key === undefined ? undefined : parseKey(key)
  if (key !== undefined && privateKey === undefined) throw new InvalidFlagValueError('--key', key, '32 bytes of hex (64 digits, 0x optional)')
  if ((tlsCert === undefined) !== (tlsKey === undefined))
    throw new UsageError(tlsCert === undefined ? '--tls-key goes with --tls-cert FILE' : '--tls-cert goes with --tls-key FILE')
  const listen = parsed.values.listen ?? (tlsCert === undefined ? PLAIN_LISTEN : TLS_LISTEN)
  // Loaded only now, so that --help and a bad flag answer without loading libp2p.
  const { multiaddr } = await import('@multiformats/multiaddr')
  let secure: boolean
  try {
    const names = multiaddr(listen)
      .getComponents()
      .map((c) => c.name)
    secure = names.at(-1) === 'wss' || names.slice(-2).join('/') === 'tls/ws'
  } catch {
    throw new InvalidFlagValueError('--listen', listen, 'a multiaddr such as /ip4/127.0.0.1/tcp/9090/ws')
  }
  if (secure && tlsCert === undefined)
    throw new UsageError(`--listen ${listen} needs --tls-cert FILE and --tls-key FILE (or listen on /ws behind a TLS proxy, with --announce)`)
  if (!secure && tlsCert !== undefined) throw new UsageError(`--tls-cert is served on a /wss listen address, not on --listen ${listen}`)
  for (const address of announce) {
    let dialable: boolean
    try {
      dialable = isDialableWebSockets(multiaddr(address).getComponents())
    } catch {
      dialable = false
    }
    if (!dialable) throw new InvalidFlagValueError('--announce', address, announceExpected)
  }
  const tls: TlsFiles | undefined = tlsCert === undefined ? undefined : await readTlsFiles(tlsCert, tlsKey!)
  if (tls) checkCertificateNames(announce, tls, { announce: '--announce', cert: '--tls-cert' }, multiaddr)
  const { startRelay } = await import('../transport/libp2p/relay.ts')
  const stop = nextSignal(['SIGINT', 'SIGTERM'])
  const metrics = await startMetrics(parsed.values.metrics, 'relay', log)
  try {
    let relay: Awaited<ReturnType<typeof startRelay>>
    try {
      relay = await startRelay({
        listen: [listen],
        announce,
        maxReservations,
        limits: {
          maxConnectionRate,
          maxCircuitRate,
          maxConnectionsPerIp,
          maxReservationsPerIp,
          peerBytesPerSecond,
          ipBytesPerSecond,
          maxAnnouncementBytes,
          maxAnnouncementsPerMinute,
          maxWatchesPerIp,
          proxies,
        },
        // One line per peer or address that had drops in the interval, with the count of each reason.
        onDrops: (source, counts) => log.warn('Refused or held back from {source}: {drops}', { source, drops: dropSummary(counts) }),
        dropReportIntervalMs: dropLogInterval * 1000,
        ...(privateKey ? { privateKey } : {}),
        ...(tls ? { tls: { cert: tls.cert, key: tls.key } } : {}),
      })
    } catch (e) {
      const reason = listenFailure(e, listen)
      if (reason) throw new ListenFailedError(listen, reason)
      throw e
    }
    if (metrics) (await import('../metrics/relayMetrics.ts')).observeRelay(metrics.metrics, relay, { maxReservations })
    log.info('Relay {peerId} listening on {multiaddrs}', { peerId: relay.peerId, multiaddrs: relay.multiaddrs })
    if (announce.length > 0) log.info('Sockets: {sockets} (nodes are given the --announce addresses above)', { sockets: relay.listening })
    else if (tls)
      log.warn('Nodes check the certificate against the name they dial: give --announce /dns4/<name>/tcp/<port>/wss, a name of {names}', {
        names: certificateNames(tls.certificate),
      })
    log.info('Press Ctrl-C to stop.')
    const signal = await stop.received
    log.info('{signal}: stopping the relay', { signal })
    await relay.stop()
    return 0
  } finally {
    await metrics?.server.close()
    stop.dispose()
  }
}

export const relayCommand: Command = { name: 'relay', usage, run }
