import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPENAPI_TYPES } from '../../scripts/openapi.ts'

/**
 * The clients take their types from the generated file, never by hand (docs/decisions/0046): a copy of the sources
 * with one answer field renamed in src/api/openapi.gen.ts (as a route's change and `npm run gen:api` would) must
 * fail to build exactly where that field is used, in the page's proxy, sluice/client and the demo; the copy as it
 * is builds clean. TypeScript 7 has no JS API: tsc runs as a process.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url))
const tsc = join(repo, 'node_modules/typescript/bin/tsc')
let dir: string

/** Uses of Channel's balance through each client, beside the demo's own. */
const USES = [
  "import type { Channel } from './worker/browser.ts'",
  "import { httpClient } from './worker/client.ts'",
  '',
  'export const fromProxy = (channel: Channel): string => channel.balance',
  "export const overHttp = async (): Promise<string> => (await httpClient('http://127.0.0.1:5001').channel('0x1', '0x2')).balance",
  '',
].join('\n')

function runTsc(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c: Buffer) => (output += c))
    child.stderr.on('data', (c: Buffer) => (output += c))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-client-types-'))
  // src/version.ts reads the version from the sluice package's manifest.
  for (const path of ['src', 'worker', 'demo/src', 'packages/sluice/package.json']) cpSync(join(repo, path), join(dir, path), { recursive: true })
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'))
  writeFileSync(join(dir, 'uses.ts'), USES)
  // The repository's compiler options (tsconfig.json, its comment lines left out), over the clients and their uses
  // only; its `paths` are relative to it, so they name the copies here.
  const repoConfig = readFileSync(join(repo, 'tsconfig.json'), 'utf8')
  const { compilerOptions } = JSON.parse(repoConfig.replaceAll(/^\s*\/\/.*$/gm, '')) as { compilerOptions: Record<string, unknown> }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['worker', 'demo/src', 'uses.ts'] }))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the clients typed from openapi.gen.ts', () => {
  it('build clean from the generated types as they are', async () => {
    const { code, output } = await runTsc()
    expect(output).toBe('')
    expect(code).toBe(0)
  }, 120_000)

  it("fail to build where Channel's balance is used once the generated types call it balanc", async () => {
    const types = join(dir, OPENAPI_TYPES)
    const renamed = readFileSync(types, 'utf8').replaceAll(/^(\s+)balance: string;$/gm, '$1balanc: string;')
    expect(renamed).not.toBe(readFileSync(types, 'utf8'))
    writeFileSync(types, renamed)
    const { code, output } = await runTsc()
    expect(code).not.toBe(0)
    const errors = output.split('\n').filter((line) => /error TS\d+/.test(line))
    // Every error is about that field, at its uses: the proxy's and sluice/client's (uses.ts) and the demo's.
    for (const error of errors) expect(error).toMatch(/'balance'/)
    const files = [...new Set(errors.map((e) => e.slice(0, e.indexOf('('))))].sort()
    expect(files).toEqual(['demo/src/parts/awayPanel.tsx', 'demo/src/parts/channelsPanel.tsx', 'demo/src/parts/peerSide.tsx', 'uses.ts'])
    expect(errors.filter((e) => e.startsWith('uses.ts'))).toHaveLength(2)
  }, 120_000)
})
