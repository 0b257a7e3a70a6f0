/**
 * A certificate authority of the test's own, made at test time with Debian's openssl, and the ways a process is
 * made to trust it and to find the test's names, without touching the machine's settings (docs/decisions/0060):
 * - Node: NODE_EXTRA_CA_CERTS (`nodeTrust`), which Node reads at start into every TLS connection's roots;
 * - browsers: an NSS database (`trustInNss`, Debian's certutil) under a HOME of the test's own for Chromium, in its
 *   profile for Firefox (test/support/engines/ `launchEngine`'s `trustCa`);
 * - names: a process in a mount namespace of its own whose /etc/hosts is the test's file (`withHosts`, as
 *   `ip netns exec` does with /etc/netns/<ns>/hosts), so glibc resolves them for it and for nothing else;
 *   browsers map them themselves (`launchEngine`'s `hosts`).
 * Nothing here turns a check off: a process not given the authority refuses the certificate.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'

export type TestCa = {
  /** The authority's certificate (PEM): what a trusting process is given. */
  caFile: string
  /** A server certificate for `names`, signed by the authority, and its key (PEM). */
  certFile: string
  keyFile: string
  /** The names the certificate holds. */
  names: string[]
  /** A key of the same kind that is not the certificate's. */
  otherKeyFile: string
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** A P-256 authority valid for two days and a server certificate for `names` from it, in `dir`. */
export function makeTestCa(dir: string, names: readonly string[]): TestCa {
  mkdirSync(dir, { recursive: true })
  const path = (file: string) => join(dir, file)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2']
  openssl(
    ['req', '-x509', ...ec, '-keyout', path('ca.key'), '-out', path('ca.pem'), '-subj', '/CN=Sluice test CA'].concat([
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]),
  )
  openssl(
    ['req', '-x509', '-CA', path('ca.pem'), '-CAkey', path('ca.key'), ...ec, '-keyout', path('server.key'), '-out', path('server.pem')].concat(
      ['-subj', `/CN=${names[0]}`, '-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`],
      ['-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature', '-addext', 'extendedKeyUsage=serverAuth'],
    ),
  )
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', path('other.key')])
  return { caFile: path('ca.pem'), certFile: path('server.pem'), keyFile: path('server.key'), names: [...names], otherKeyFile: path('other.key') }
}

/** The environment of a Node process that trusts the authority besides the usual roots. */
export function nodeTrust(ca: TestCa): NodeJS.ProcessEnv {
  return { ...process.env, NODE_EXTRA_CA_CERTS: ca.caFile }
}

/**
 * An NSS database in `db` that trusts the authority for TLS servers (Debian's certutil). Chromium on Linux reads the
 * one under $HOME/.pki/nssdb for roots a user added; Firefox has its own in its profile folder.
 */
export function trustInNss(caFile: string, db: string): void {
  mkdirSync(db, { recursive: true })
  execFileSync('certutil', ['-N', '-d', `sql:${db}`, '--empty-password'])
  execFileSync('certutil', ['-A', '-d', `sql:${db}`, '-n', 'Sluice test CA', '-t', 'C,,', '-i', caFile])
}

/**
 * The command that runs `command` with /etc/hosts replaced, for it alone, by a file mapping each name to its
 * address: unshare(1) gives it a mount namespace of its own (private: nothing leaks out, and it ends with the
 * process), in which the file is bound over /etc/hosts. Needs root (CAP_SYS_ADMIN), as .ci/run has.
 */
export function withHosts(dir: string, hosts: Record<string, string>, command: readonly string[]): string[] {
  const file = join(dir, 'hosts')
  writeFileSync(
    file,
    `127.0.0.1 localhost\n${Object.entries(hosts)
      .map(([name, address]) => `${address} ${name}\n`)
      .join('')}`,
  )
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', file, ...command]
}

/**
 * A port free now on 127.0.0.1, for a server whose address must be written before it starts (a relay's
 * --announce names the port it will listen on, or its proxy's).
 */
export function freePort(): Promise<number> {
  const server = createServer()
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
