import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, describe, expect, test } from 'vitest'
import { backupKey, backupServerStatus, fetchBackup, open, pushBackup, seal } from '../../src/backup/index.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { startBackupServerProcess } from './backupServerProcess.ts'
import { logged, logMessages, runSluice } from './sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

const tempDir = tempDirs('sluice-backup-cli-')

const startBackupServer = (args: string[]) => startBackupServerProcess(args, tempDir())

describe('sluice backup-server', () => {
  test('serves the backup API from its data directory until SIGTERM; a copy pushed before a restart is there after it', async () => {
    const dataDir = tempDir()
    const first = await startBackupServer(['--data-dir', dataDir, '--api', '127.0.0.1:0'])
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/backup\/v1$/)
    expect(first.sluice.stdout()).toMatch(logged('Data: .*/copies \\(0 copies, 0 bytes\\)$'))
    expect(first.sluice.stdout()).toMatch(
      logged('Limits: a copy up to 1048576 bytes, 1073741824 bytes in all; 60 pushes a minute per address, 600 requests a minute per client$'),
    )
    const key = await backupKey(jsSecp256k1, generatePrivateKey())
    await pushBackup(first.url, await seal(key, { version: 1n, payload: new TextEncoder().encode('kept') }))
    first.sluice.child.kill('SIGTERM')
    expect(await first.sluice.exited).toEqual({ code: 0, signal: null })
    expect(logMessages(first.sluice.stdout()).at(-1)).toBe('SIGTERM: stopping')
    expect(first.sluice.stderr()).toBe('')

    const second = await startBackupServer(['--data-dir', dataDir, '--api=127.0.0.1:0', '--max-copy-bytes', '4096', '--pushes-per-minute', '5'])
    try {
      expect(second.sluice.stdout()).toMatch(/\(1 copies, \d+ bytes\)/)
      expect(await backupServerStatus(second.url)).toMatchObject({ copies: 1, limits: { maxCopyBytes: 4096, pushesPerMinute: 5, requestsPerMinute: 600 } })
      expect(await open(key, (await fetchBackup(second.url, key))!)).toMatchObject({ version: 1n })
      // A second server on the same directory: one line, exit 2.
      const { code, stderr } = await runSluice(['backup-server', '--data-dir', dataDir, '--api', '127.0.0.1:0'], tempDir())
      expect(code).toBe(2)
      expect(stderr).toMatch(/^sluice backup-server: --data-dir .*: .*copies is open in another backup server\n$/)
    } finally {
      second.sluice.child.kill('SIGINT')
      expect((await second.sluice.exited).code).toBe(0)
    }
  })

  test('--metrics serves Prometheus metrics: a copy stored moves the copies and bytes gauges; a replaced copy keeps one', async () => {
    const { sluice, url } = await startBackupServer(['--data-dir', tempDir(), '--api', '127.0.0.1:0', '--metrics', '127.0.0.1:0'])
    try {
      const metricsUrl = metricsUrlOf(sluice.stdout())
      expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      const before = await scrape(metricsUrl)
      expect(sampleValue(before, 'sluice_backup_copies')).toBe(0)
      expect(sampleValue(before, 'sluice_backup_bytes')).toBe(0)
      expect(sampleValue(before, 'sluice_info', { command: 'backup-server' })).toBe(1)
      // prom-client's process metrics, under their standard names.
      expect(sampleValue(before, 'process_resident_memory_bytes')).toBeGreaterThan(0)
      expect(before.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge')

      const key = await backupKey(jsSecp256k1, generatePrivateKey())
      await pushBackup(url, await seal(key, { version: 1n, payload: new TextEncoder().encode('one') }))
      const one = await scrape(metricsUrl)
      expect(sampleValue(one, 'sluice_backup_copies')).toBe(1)
      const bytes = sampleValue(one, 'sluice_backup_bytes')!
      expect(bytes).toBe((await backupServerStatus(url)).bytes)
      expect(bytes).toBeGreaterThan(0)
      await pushBackup(url, await seal(key, { version: 2n, payload: new TextEncoder().encode('two, longer') }))
      const two = await scrape(metricsUrl)
      expect(sampleValue(two, 'sluice_backup_copies')).toBe(1)
      expect(sampleValue(two, 'sluice_backup_bytes')).toBeGreaterThan(bytes)
      // Only /metrics, only GET (and HEAD).
      expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404)
      expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(405)
    } finally {
      sluice.child.kill('SIGTERM')
      expect((await sluice.exited).code).toBe(0)
    }
  })

  test('--help lists every flag with its default', async () => {
    const { code, stdout } = await runSluice(['backup-server', '--help'], tmpdir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/^Usage: sluice backup-server \(--data-dir DIR \| --database URL\)/)
    for (const flag of [
      '--data-dir <DIR>',
      '--api <HOST:PORT>',
      '--max-copy-bytes <BYTES>',
      '--max-total-bytes <BYTES>',
      '--pushes-per-minute <N>',
      '--requests-per-minute <N>',
      '--metrics <HOST:PORT>',
    ])
      expect(stdout).toContain(flag)
    expect(stdout).toContain('(default: 127.0.0.1:5300)')
    expect((await runSluice(['--help'], tmpdir())).stdout).toMatch(/^ {2}backup-server +keep nodes' sealed backup copies/m)
  })

  describe('bad options exit 2 with one line on stderr', () => {
    let server: Server
    afterAll(() => server?.close())

    test.concurrent.each([
      [[], /--data-dir is required/],
      [['--data-dir', '/tmp/x', '--api', 'nowhere'], /--api must be HOST:PORT/],
      [['--data-dir', '/tmp/x', '--max-copy-bytes', '10'], /--max-copy-bytes must be an integer from 1024 to 268435456, got "10"/],
      [['--data-dir', '/tmp/x', '--pushes-per-minute', '0'], /--pushes-per-minute must be an integer from 1 to 1000000/],
      [['--data-dir', '/tmp/x', '--frobnicate'], /unknown flag --frobnicate/],
      [['--data-dir', '/tmp/x', '--metrics', '9100'], /--metrics must be HOST:PORT \(port 0 picks a free one\), got "9100"/],
    ])('%j', async (args, message) => {
      const { code, stdout, stderr } = await runSluice(['backup-server', ...args], tempDir())
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toMatch(/^sluice backup-server: /)
      expect(stderr).toMatch(message)
      expect(stderr.split('\n')).toHaveLength(2)
    })

    test('a port in use', async () => {
      server = createServer()
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      const port = (server.address() as { port: number }).port
      const { code, stderr } = await runSluice(['backup-server', '--data-dir', tempDir(), '--api', `127.0.0.1:${port}`], tempDir())
      expect(code).toBe(2)
      expect(stderr).toBe(`sluice backup-server: 127.0.0.1:${port} is already in use (choose another address or port)\n`)
      const metrics = await runSluice(['backup-server', '--data-dir', tempDir(), '--api', '127.0.0.1:0', '--metrics', `127.0.0.1:${port}`], tempDir())
      expect(metrics.code).toBe(2)
      expect(metrics.stderr).toBe(`sluice backup-server: --metrics 127.0.0.1:${port}: 127.0.0.1:${port} is already in use (choose another address or port)\n`)
    })
  })
})
