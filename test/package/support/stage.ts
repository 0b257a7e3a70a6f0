import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('../../..', import.meta.url))

/** Both packages as `npm pack` takes them (package.json, README.md, bin/ and a fresh dist/), in `<dir>/packages/`. */
export type Stage = { dir: string; sluice: string; node: string }

/**
 * `<dir>/node_modules` as an install of both packages lays it out: `sluice` and `@sluice/node` are the staged
 * packages, every other entry links to the repository's node_modules (their dependencies). Removing the folder
 * removes the links, never what they point at.
 */
export function linkInstall(dir: string): void {
  const modules = join(dir, 'node_modules')
  mkdirSync(join(modules, '@sluice'), { recursive: true })
  for (const name of readdirSync(join(repo, 'node_modules')))
    if (!['sluice', '@sluice', '.bin', '.package-lock.json'].includes(name)) symlinkSync(join(repo, 'node_modules', name), join(modules, name))
  symlinkSync(join(dir, 'packages/sluice'), join(modules, 'sluice'), 'dir')
  symlinkSync(join(dir, 'packages/node'), join(modules, '@sluice/node'), 'dir')
}

/**
 * Both packages built into a folder of their own, so that a test never reads or disturbs the repository's
 * packages/*\/dist/. Their bins run dist/, as installed packages do (there is no src/ above them). With `install`,
 * `<dir>/node_modules` lays them out as installed (linkInstall); without it, nothing resolves from them: the sluice
 * package alone, as a dApp has it, runs its light bin.
 */
export async function stagePackages(options: { declarations?: boolean; install?: boolean } = {}): Promise<Stage> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stage-'))
  const args = [join(repo, 'node_modules/tsx/dist/cli.mjs'), join(repo, 'scripts/build.ts'), '--packages-dir', join(dir, 'packages')]
  if (options.declarations === false) args.push('--no-declarations')
  await new Promise<void>((resolve, reject) => {
    let output = ''
    const build = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
    build.stdout.on('data', (c: Buffer) => (output += c))
    build.stderr.on('data', (c: Buffer) => (output += c))
    build.once('error', reject)
    build.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`the build failed (exit ${code}):\n${output}`))))
  })
  if (options.install) linkInstall(dir)
  return { dir, sluice: join(dir, 'packages/sluice'), node: join(dir, 'packages/node') }
}
