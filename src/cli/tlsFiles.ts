import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createSecureContext } from 'node:tls'
import { CliError, UsageError } from './cliError.ts'

/** A certificate or key that a listener cannot serve (unreadable, not PEM, not a pair, out of date): exit code 2. */
export class TlsFilesError extends CliError {
  override name = 'TlsFilesError' as const
  override readonly code = 'TLS_FILES' as const
  constructor(message: string) {
    super(message, 2)
  }
}

export type TlsFiles = {
  /** The certificate file as given: the server's certificate first, then the chain (certbot's fullchain.pem). */
  cert: string
  key: string
  /** The server's certificate, to check announced names against (`checkHost` knows wildcards). */
  certificate: X509Certificate
}

/** The flags a command takes the two files with, named in its messages. */
export type TlsFlags = { cert: string; key: string }
export const relayTlsFlags: TlsFlags = { cert: '--tls-cert', key: '--tls-key' }

async function readText(path: string, flag: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (e) {
    throw new TlsFilesError(`cannot read the ${what} ${flag} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

/**
 * Reads and checks what a TLS listener will serve, so that a wrong file is one line at start rather than a
 * handshake that fails for every node later: a certificate in PEM, its unencrypted private key, the two a pair, and
 * the certificate valid today.
 */
export async function readTlsFiles(certPath: string, keyPath: string, now = new Date(), flags: TlsFlags = relayTlsFlags): Promise<TlsFiles> {
  const [certFlag, keyFlag] = [flags.cert, flags.key]
  // Both read at once; of two failures, the certificate's is told, whichever came first.
  const read = await Promise.allSettled([readText(certPath, certFlag, 'certificate'), readText(keyPath, keyFlag, 'private key')])
  const failed = read.find((r) => r.status === 'rejected')
  if (failed) throw failed.reason
  const [cert, key] = read.map((r) => (r as PromiseFulfilledResult<string>).value) as [string, string]
  let certificate: X509Certificate
  try {
    if (!cert.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate')
    certificate = new X509Certificate(cert)
  } catch {
    throw new TlsFilesError(`${certFlag} ${certPath} is not a certificate in PEM (-----BEGIN CERTIFICATE-----)`)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(key)
  } catch {
    throw new TlsFilesError(`${keyFlag} ${keyPath} is not an unencrypted private key in PEM (-----BEGIN PRIVATE KEY-----, as certbot writes it)`)
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new TlsFilesError(`${keyFlag} ${keyPath} is not the key of the certificate ${certFlag} ${certPath} (they are not a pair)`)
  if (new Date(certificate.validTo) < now) throw new TlsFilesError(`the certificate ${certFlag} ${certPath} expired on ${certificate.validTo}`)
  if (new Date(certificate.validFrom) > now) throw new TlsFilesError(`the certificate ${certFlag} ${certPath} is not valid before ${certificate.validFrom}`)
  try {
    // What node:https will make of them: anything else wrong with the chain shows here rather than at the first node.
    createSecureContext({ cert, key })
  } catch (e) {
    throw new TlsFilesError(`${certFlag} ${certPath} and --tls-key ${keyPath} cannot serve TLS: ${(e as Error).message}`)
  }
  return { cert, key, certificate }
}

/** The DNS names and IP addresses a certificate is for, as its subjectAltName lists them (else its common name). */
export function certificateNames(certificate: X509Certificate): string[] {
  const names = (certificate.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:') || n.startsWith('IP Address:'))
    .map((n) => n.slice(n.indexOf(':') + 1))
  if (names.length > 0) return names
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(certificate.subject)?.[1]
  return cn ? [cn] : []
}

/**
 * Each announced address by a name or an IP address that `tls`'s certificate is not for: one line at start, not a
 * handshake that fails for every node later. A plain `/ws` address carries no TLS here (a proxy's) and is skipped.
 */
export function checkCertificateNames(
  announce: readonly string[],
  tls: TlsFiles,
  flags: { announce: string; cert: string },
  multiaddr: typeof import('@multiformats/multiaddr').multiaddr,
): void {
  for (const address of announce) {
    const [host, , ...rest] = multiaddr(address).getComponents()
    if (rest.at(-1)?.name === 'ws' && rest.length === 1) continue
    const name = host!.value!
    const held = host!.name.startsWith('ip') ? tls.certificate.checkIP(name) : tls.certificate.checkHost(name)
    if (held === undefined)
      throw new UsageError(`${flags.announce} ${address}: the certificate ${flags.cert} is for ${certificateNames(tls.certificate).join(', ')}, not ${name}`)
  }
}
