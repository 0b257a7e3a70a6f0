import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { certificateNames, readTlsFiles } from '../../../src/cli/tlsFiles.ts'
import { makeTestCa } from '../../support/testCa.ts'

const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-files-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const ca = makeTestCa(dir, ['relay.sluice.test', '*.relays.sluice.test'])

describe('readTlsFiles', () => {
  test("certbot's fullchain.pem (the certificate, then its issuer's) and privkey.pem: read, with the certificate's names", async () => {
    const fullchain = join(dir, 'fullchain.pem')
    writeFileSync(fullchain, readFileSync(ca.certFile, 'utf8') + readFileSync(ca.caFile, 'utf8'))
    const tls = await readTlsFiles(fullchain, ca.keyFile)
    expect(tls.cert).toBe(readFileSync(fullchain, 'utf8'))
    expect(certificateNames(tls.certificate)).toEqual(['relay.sluice.test', '*.relays.sluice.test'])
    // What --announce is checked with: a wildcard holds one label, not two.
    expect(tls.certificate.checkHost('eu.relays.sluice.test')).toBe('*.relays.sluice.test')
    expect(tls.certificate.checkHost('a.eu.relays.sluice.test')).toBeUndefined()
  })

  test('a certificate out of its dates is refused: expired, or not valid yet', async () => {
    const { certificate } = await readTlsFiles(ca.certFile, ca.keyFile)
    const after = new Date(Date.parse(certificate.validTo) + 1000)
    const before = new Date(Date.parse(certificate.validFrom) - 1000)
    await expect(readTlsFiles(ca.certFile, ca.keyFile, after)).rejects.toMatchObject({
      code: 'TLS_FILES',
      exitCode: 2,
      message: `the certificate --tls-cert ${ca.certFile} expired on ${certificate.validTo}`,
    })
    await expect(readTlsFiles(ca.certFile, ca.keyFile, before)).rejects.toMatchObject({
      message: `the certificate --tls-cert ${ca.certFile} is not valid before ${certificate.validFrom}`,
    })
  })

  test('a key with a passphrase is refused: the relay starts unattended', async () => {
    const encrypted = join(dir, 'encrypted.key')
    execFileSync('openssl', ['pkey', '-in', ca.keyFile, '-aes256', '-passout', 'pass:secret', '-out', encrypted])
    await expect(readTlsFiles(ca.certFile, encrypted)).rejects.toMatchObject({
      code: 'TLS_FILES',
      message: `--tls-key ${encrypted} is not an unencrypted private key in PEM (-----BEGIN PRIVATE KEY-----, as certbot writes it)`,
    })
  })
})
