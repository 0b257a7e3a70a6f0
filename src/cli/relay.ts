import type { Hex } from 'viem'
import { answerAsked, formatFlags, InvalidFlagValueError, integerFlag, parseFlags, stringFlag } from './args.ts'
import { logFlags, loggerFromFlags } from './logFlags.ts'
import { nextSignal } from './processSignals.ts'
import { CliError } from './cliError.ts'
import type { Command } from './command.ts'

export const relayFlags = {
  listen: stringFlag({
    description: 'multiaddr to listen on (WebSockets); tcp/0 picks a free port',
    valueName: 'MULTIADDR',
    default: '/ip4/127.0.0.1/tcp/9090/ws',
  }),
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
    description: 'how many new connections one IP address may open a second (browsers behind one NAT share an address)',
    min: 1,
    max: 1_000_000,
    default: 100,
  }),
  ...logFlags,
}

const usage = `Usage: sluice relay [flags]

Runs a libp2p relay: a circuit relay v2 server through which nodes (browsers included) reach each other by
peer id, and the hub of the presence topic. Logs the multiaddrs that nodes configure as their relay (one line,
\`Relay <peer id> listening on <multiaddr>, ...\`; with --log-json, the fields peerId and multiaddrs), and runs until
Ctrl-C.

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

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, relayFlags)
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  const { listen, key, maxReservations, maxConnectionRate } = parsed.values
  const log = loggerFromFlags(parsed.values)
  const privateKey = key === undefined ? undefined : parseKey(key)
  if (key !== undefined && privateKey === undefined) throw new InvalidFlagValueError('--key', key, '32 bytes of hex (64 digits, 0x optional)')
  // Loaded only now, so that --help and a bad flag answer without loading libp2p.
  const { multiaddr } = await import('@multiformats/multiaddr')
  try {
    multiaddr(listen)
  } catch {
    throw new InvalidFlagValueError('--listen', listen, 'a multiaddr such as /ip4/127.0.0.1/tcp/9090/ws')
  }
  const { startRelay } = await import('../transport/libp2p/relay.ts')
  const stop = nextSignal(['SIGINT', 'SIGTERM'])
  try {
    let relay: Awaited<ReturnType<typeof startRelay>>
    try {
      relay = await startRelay({ listen: [listen], maxReservations, maxConnectionRate, ...(privateKey ? { privateKey } : {}) })
    } catch (e) {
      const reason = listenFailure(e, listen)
      if (reason) throw new ListenFailedError(listen, reason)
      throw e
    }
    log.info('Relay {peerId} listening on {multiaddrs}', { peerId: relay.peerId, multiaddrs: relay.multiaddrs })
    log.info('Press Ctrl-C to stop.')
    const signal = await stop.received
    log.info('{signal}: stopping the relay', { signal })
    await relay.stop()
    return 0
  } finally {
    stop.dispose()
  }
}

export const relayCommand: Command = { name: 'relay', usage, run }
