import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { stagePackage } from '../package/support/stage.ts'

/** `sluice init <dir>` as a dApp runs it: the package's compiled bin (a fresh build, not the sources). */

let stage: string
const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-init-'))
  dirs.push(dir)
  return dir
}

function init(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(stage, 'bin/sluice.mjs'), 'init', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c))
    child.stderr.on('data', (c: Buffer) => (stderr += c))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** What the build made for the origin: the service worker, the page module and every file of the node's worker. */
function builtFiles(): Map<string, string> {
  const dist = join(stage, 'dist')
  return new Map([
    ['sluice-sw.js', join(dist, 'sluice-sw.js')],
    ['sluice/browser.js', join(dist, 'browser/index.js')],
    ...readdirSync(join(dist, 'sluice')).map((name): [string, string] => [`sluice/${name}`, join(dist, 'sluice', name)]),
  ])
}

beforeAll(async () => {
  stage = await stagePackage({ declarations: false })
})

afterAll(() => {
  for (const dir of [...dirs, stage]) if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('sluice init', () => {
  test('copies the service worker, the node worker with its chunks and WASM, and the page module, and lists each file it wrote', async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, 'index.html'), '<!doctype html>')
    mkdirSync(join(cwd, 'public'))
    const { code, stdout, stderr } = await init(['public/'], cwd)
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const built = builtFiles()
    expect(built.has('sluice/node.worker.js') && built.has('sluice/secp256k1.wasm')).toBe(true)
    for (const [file, from] of built) {
      // Buffer.equals: toEqual compares a megabyte of WASM byte by byte, for seconds.
      expect(readFileSync(join(cwd, 'public', file)).equals(readFileSync(from)), file).toBe(true)
      expect(stdout).toContain(join('public/', file))
    }
    expect(stdout.split('\n')[0]).toBe(`Wrote ${built.size} files to public/:`)
    expect(JSON.parse(readFileSync(join(cwd, 'public/sluice/init.json'), 'utf8'))).toEqual({ files: [...built.keys()] })
    // Nothing else is touched: the dApp's own files stay.
    expect(readFileSync(join(cwd, 'index.html'), 'utf8')).toBe('<!doctype html>')
  })

  test('a second run replaces the files and removes those an earlier version wrote, and nothing else', async () => {
    const dir = tempDir()
    expect((await init([dir], dir)).code).toBe(0)
    // What an earlier version leaves: a chunk this build does not have, listed in its init.json, and a changed file.
    const manifest = join(dir, 'sluice/init.json')
    const { files } = JSON.parse(readFileSync(manifest, 'utf8')) as { files: string[] }
    writeFileSync(manifest, JSON.stringify({ files: [...files, 'sluice/old-chunk-1a2b3c.js'] }))
    writeFileSync(join(dir, 'sluice/old-chunk-1a2b3c.js'), 'old')
    writeFileSync(join(dir, 'sluice-sw.js'), 'old service worker')
    // And files of the dApp's own, in the same folders.
    writeFileSync(join(dir, 'sluice/mine.js'), 'mine')
    writeFileSync(join(dir, 'app.js'), 'app')

    const { code, stdout } = await init([dir], dir)
    expect(code).toBe(0)
    expect(stdout).toContain(`Removed 1 files an earlier version wrote:\n  ${join(dir, 'sluice/old-chunk-1a2b3c.js')}\n`)
    expect(existsSync(join(dir, 'sluice/old-chunk-1a2b3c.js'))).toBe(false)
    expect(readFileSync(join(dir, 'sluice-sw.js'), 'utf8')).toBe(readFileSync(builtFiles().get('sluice-sw.js')!, 'utf8'))
    expect(readFileSync(join(dir, 'sluice/mine.js'), 'utf8')).toBe('mine')
    expect(readFileSync(join(dir, 'app.js'), 'utf8')).toBe('app')
    expect(JSON.parse(readFileSync(manifest, 'utf8'))).toEqual({ files: [...builtFiles().keys()] })
  })

  test('a missing folder, a file, no folder or an unknown flag: one line on stderr and exit code 2, nothing written', async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, 'file.txt'), 'x')
    const missing = await init(['public/'], cwd)
    expect(missing).toMatchObject({ code: 2, stdout: '' })
    expect(missing.stderr).toBe('sluice init: public/ does not exist: give the folder your dApp serves at / (create it first)\n')
    const file = await init(['file.txt'], cwd)
    expect(file).toMatchObject({ code: 2, stderr: 'sluice init: file.txt is not a folder: give the folder your dApp serves at /\n' })
    const none = await init([], cwd)
    expect(none.code).toBe(2)
    expect(none.stderr).toMatch(/^sluice init: give the folder your dApp serves at \/ \(for example: sluice init public\/\) \(see sluice init --help\)\n$/)
    const flag = await init(['--force', cwd], cwd)
    expect(flag).toMatchObject({ code: 2, stderr: 'sluice init: unknown flag --force (see sluice init --help)\n' })
    expect(readdirSync(cwd)).toEqual(['file.txt'])
  })

  test('--help says what it copies and exits 0', async () => {
    const { code, stdout } = await init(['--help'], tmpdir())
    expect(code).toBe(0)
    expect(stdout).toMatch(/^Usage: sluice init <dir>/)
    expect(stdout).toContain('sluice-sw.js')
  })
})
