import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('../../..', import.meta.url))

/**
 * The package as `npm pack` takes it from the repository (package.json, README.md, bin/ and a fresh dist/), built
 * into a folder of its own so that a test never reads or disturbs the repository's dist/. Its bin runs dist/cli/,
 * as an installed package does (there is no src/ beside it).
 */
export async function stagePackage(options: { declarations?: boolean } = {}): Promise<string> {
  const stage = mkdtempSync(join(tmpdir(), 'sluice-stage-'))
  for (const file of ['package.json', 'README.md', 'bin']) cpSync(join(repo, file), join(stage, file), { recursive: true })
  const args = [join(repo, 'node_modules/tsx/dist/cli.mjs'), join(repo, 'scripts/build.ts'), '--out-dir', join(stage, 'dist')]
  if (options.declarations === false) args.push('--no-declarations')
  await new Promise<void>((resolve, reject) => {
    let output = ''
    const build = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
    build.stdout.on('data', (c: Buffer) => (output += c))
    build.stderr.on('data', (c: Buffer) => (output += c))
    build.once('error', reject)
    build.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`the build failed (exit ${code}):\n${output}`))))
  })
  return stage
}
