import { BlockList, isIP } from 'node:net'
import { allowsEveryOrigin, type HostRule, type OriginPattern } from '../api/hostsAndOrigins.ts'
import { CliError } from './cliError.ts'

/** The API would let others than the owner spend the node's funds without a token: one line, exit code 2. */
export class ApiExposedError extends CliError {
  override name = 'ApiExposedError' as const
  override readonly code = 'API_EXPOSED' as const
  constructor(message: string) {
    super(message, 2)
  }
}

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

/** 127.0.0.0/8, ::1 (IPv4-mapped loopback too) or `localhost`: only programs of this machine can connect. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const family = isIP(host)
  return family !== 0 && loopback.check(host, family === 6 ? 'ipv6' : 'ipv4')
}

/**
 * Refuses what would let other machines, or every web page, call the node without a token: an address beyond
 * loopback, `--api-host *` (DNS rebinding allowed), an `--rpccorsdomain` that lets in every origin.
 */
export function checkApiExposure({
  host,
  hosts = [],
  corsOrigins = [],
  token,
}: {
  host: string
  hosts?: readonly HostRule[]
  corsOrigins?: readonly OriginPattern[]
  token?: string | undefined
}): void {
  if (token !== undefined) return
  const fix = 'give --api-token-file FILE (a random token of 16 characters or more on its first line)'
  if (!isLoopbackHost(host))
    throw new ApiExposedError(`--api ${host} is not a loopback address, so other machines could spend this node's funds: ${fix}, or listen on 127.0.0.1`)
  if (hosts.includes('*')) throw new ApiExposedError(`--api-host * lets any web page reach this node by DNS rebinding: ${fix}, or name the hosts`)
  const every = corsOrigins.find(allowsEveryOrigin)
  if (every) throw new ApiExposedError(`--rpccorsdomain ${every.source} lets every web site call this node: ${fix}, or name the origins`)
}
