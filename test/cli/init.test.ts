import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { linkInstall, stagePackages, type Stage } from '../package/support/stage.ts'
import { tempDirs } from '../support/tempDirs.ts'

/**
 * `sluice init <dir>` as a dApp runs it: the sluice package's compiled bin (a fresh build, not the sources), alone
 * as a dApp installs it; then both packages' bins with @sluice/node installed beside it.
 */

let stage: Stage
const tempDir = tempDirs('sluice-init-')

type Ran = { code: number | null; stdout: string; stderr: string }

function init(args: string[], cwd: string): Promise<Ran> {
  return sluice(stage.sluice, ['init', ...args], cwd)
}

/** A package's bin (`packageDir`/bin/sluice.mjs) with `args`, to completion. */
function sluice(packageDir: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(packageDir, 'bin/sluice.mjs'), ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
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
  const dist = join(stage.sluice, 'dist')
  return new Map([
    ['sluice-sw.js', join(dist, 'sluice-sw.js')],
    ['sluice/browser.js', join(dist, 'browser/index.js')],
    ...readdirSync(join(dist, 'sluice')).map((name): [string, string] => [`sluice/${name}`, join(dist, 'sluice', name)]),
  ])
}

beforeAll(async () => {
  stage = await stagePackages({ declarations: false })
})

afterAll(() => {
  if (stage) rmSync(stage.dir, { recursive: true, force: true })
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

  test('a missing folder is created, as msw init does', async () => {
    const cwd = tempDir()
    const { code, stdout, stderr } = await init(['site/public/'], cwd)
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    expect(stdout).toMatch(/^Created site\/public\/\nWrote \d+ files to site\/public\/:\n/)
    expect(readFileSync(join(cwd, 'site/public/sluice-sw.js'), 'utf8')).toBe(readFileSync(builtFiles().get('sluice-sw.js')!, 'utf8'))
    // Run again: nothing to create.
    expect((await init(['site/public/'], cwd)).stdout).toMatch(/^Wrote /)
  })

  test('a file, no folder or an unknown flag: one line on stderr and exit code 2, nothing written', async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, 'file.txt'), 'x')
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

describe('the sluice package alone, as a dApp installs it', () => {
  test("its bin has init, the usage and the version; the node's commands exit 2 saying to install @sluice/node", async () => {
    const help = await sluice(stage.sluice, ['--help'], tmpdir())
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}init {2,}copy the service worker/m)
    expect(help.stdout).not.toMatch(/^ {2}serve /m)
    expect(help.stdout).toContain('npm install @sluice/node')
    const version = await sluice(stage.sluice, ['--version'], tmpdir())
    expect(version).toEqual({ code: 0, stdout: `${JSON.parse(readFileSync(join(stage.sluice, 'package.json'), 'utf8')).version}\n`, stderr: '' })
    for (const command of ['serve', 'devnet', 'relay', 'chain', 'deploy', 'monitor', 'pathfinding', 'backup-server']) {
      const ran = await sluice(stage.sluice, [command, '--help'], tmpdir())
      expect(ran, command).toEqual({
        code: 2,
        stdout: '',
        stderr: `sluice ${command}: this command runs the headless node, which the sluice package does not include: npm install @sluice/node\n`,
      })
    }
    const unknown = await sluice(stage.sluice, ['nope'], tmpdir())
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(/^sluice: unknown command "nope"\nUsage: sluice <command>/)
  })
})

describe('with @sluice/node installed beside it', () => {
  beforeAll(() => linkInstall(stage.dir))

  test('both bins run the whole command line, so it does not matter which one npm linked as node_modules/.bin/sluice', async () => {
    for (const args of [['--help'], ['--version'], ['nope'], ['serve', '--help'], ['relay', '--nope']]) {
      const [light, node] = await Promise.all([sluice(stage.sluice, args, tmpdir()), sluice(stage.node, args, tmpdir())])
      expect(light, args.join(' ')).toEqual(node)
    }
    const help = await sluice(stage.sluice, ['--help'], tmpdir())
    expect(help.stdout).toMatch(/^ {2}serve {2,}run one node/m)
  })

  test("@sluice/node's init copies the sluice package's files, as the light bin does", async () => {
    const [fromLight, fromNode] = [tempDir(), tempDir()]
    const light = await sluice(stage.sluice, ['init', '.'], fromLight)
    const node = await sluice(stage.node, ['init', '.'], fromNode)
    expect(node).toEqual(light)
    expect(node.code).toBe(0)
    for (const [file, from] of builtFiles()) expect(readFileSync(join(fromNode, file)).equals(readFileSync(from)), file).toBe(true)
  })
})
