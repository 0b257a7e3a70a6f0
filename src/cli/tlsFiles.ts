import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createSecureContext } from 'node:tls'
import { CliError } from './cliError.ts'

/** A certificate or key that the relay cannot serve (unreadable, not PEM, not a pair, out of date): exit code 2. */
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
export async function readTlsFiles(certPath: string, keyPath: string, now = new Date()): Promise<TlsFiles> {
  const [cert, key] = await Promise.all([readText(certPath, '--tls-cert', 'certificate'), readText(keyPath, '--tls-key', 'private key')])
  let certificate: X509Certificate
  try {
    if (!cert.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate')
    certificate = new X509Certificate(cert)
  } catch {
    throw new TlsFilesError(`--tls-cert ${certPath} is not a certificate in PEM (-----BEGIN CERTIFICATE-----)`)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(key)
  } catch {
    throw new TlsFilesError(`--tls-key ${keyPath} is not an unencrypted private key in PEM (-----BEGIN PRIVATE KEY-----, as certbot writes it)`)
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new TlsFilesError(`--tls-key ${keyPath} is not the key of the certificate --tls-cert ${certPath} (they are not a pair)`)
  if (new Date(certificate.validTo) < now) throw new TlsFilesError(`the certificate --tls-cert ${certPath} expired on ${certificate.validTo}`)
  if (new Date(certificate.validFrom) > now) throw new TlsFilesError(`the certificate --tls-cert ${certPath} is not valid before ${certificate.validFrom}`)
  try {
    // What node:https will make of them: anything else wrong with the chain shows here rather than at the first node.
    createSecureContext({ cert, key })
  } catch (e) {
    throw new TlsFilesError(`--tls-cert ${certPath} and --tls-key ${keyPath} cannot serve TLS: ${(e as Error).message}`)
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
