import { tmpdir } from 'node:os'
import { describe, expect, test } from 'vitest'
import { version } from '../../src/version.ts'
import { runSluice } from './sluiceProcess.ts'

describe('sluice', () => {
  test('without a command prints the usage on stderr and exits 2', async () => {
    const { code, stdout, stderr } = await runSluice([], tmpdir())
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/^Usage: sluice <command>/)
    expect(stderr).toMatch(/^ {2}chain +start a local anvil chain/m)
  })

  test('with an unknown command names it, prints the usage and exits 2', async () => {
    const { code, stderr } = await runSluice(['frobnicate', '--port', '1'], tmpdir())
    expect(code).toBe(2)
    expect(stderr.split('\n')[0]).toBe('sluice: unknown command "frobnicate"')
    expect(stderr).toMatch(/^Usage: sluice <command>/m)
  })

  test('--help prints the usage on stdout and exits 0', async () => {
    const { code, stdout, stderr } = await runSluice(['--help'], tmpdir())
    expect(code).toBe(0)
    expect(stderr).toBe('')
    expect(stdout).toMatch(/^Usage: sluice <command>/)
  })

  test('--version, alone or after a command (whatever else is given), prints the version and exits 0', async () => {
    for (const args of [['--version'], ['serve', '--rpc', 'http://127.0.0.1:1', '--version'], ['monitor', '--nope', '--version']]) {
      const { code, stdout, stderr } = await runSluice(args, tmpdir())
      expect({ args, code, stdout, stderr }).toEqual({ args, code: 0, stdout: `${version}\n`, stderr: '' })
    }
  })

  test('chain --help lists every flag with its default and exits 0 without starting anything', async () => {
    const { code, stdout } = await runSluice(['chain', '--help'], tmpdir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/--port <PORT> .*\(default: 8545\)/)
    expect(stdout).toMatch(/--block-time <SECONDS> /)
    expect(stdout).toMatch(/--max-token-networks <N> .*\(default: 1000\)/)
    expect(stdout).toMatch(/--deployments-dir <DIR> .*\(default: deployments\)/)
  })
})
