import { copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, normalize } from 'node:path'
import { answerAsked, parseFlags, UnexpectedArgumentError } from './args.ts'
import { CliError, UsageError } from './cliError.ts'
import type { Command } from './command.ts'

const usage = `Usage: sluice init <dir>

Copies into <dir>, the folder a dApp serves at the root of its origin (Vite's public/, for example), what the
browser must load from that origin:
  sluice-sw.js   the service worker that answers fetch('/api/v1/...'); startNode() registers it at scope /
  sluice/        the node's module worker (node.worker.js), its chunks and libsecp256k1's WASM, and
                 browser.js, the page's module for a page that has no bundler
Run it again after upgrading sluice: it replaces these files and removes the ones an earlier version wrote
(listed in sluice/init.json), and nothing else.`

/** What init wrote last time, so that the next run removes what a newer version no longer has. */
const MANIFEST = 'sluice/init.json'

export class InitError extends CliError {
  override name = 'InitError' as const
  override readonly code = 'INIT' as const
  constructor(message: string, exitCode = 2) {
    super(message, exitCode)
  }
}

/** A clone of the repository that was not built: the files init copies come from `npm run build`. */
export class NotBuiltError extends CliError {
  override name = 'NotBuiltError' as const
  override readonly code = 'NOT_BUILT' as const
  constructor(dist: string) {
    super(`${dist} has no browser build: run \`npm run build\` first`, 1)
  }
}

/**
 * The `sluice` package's dist/, which holds the files: resolved by name, so it is the package's own from its bin
 * (a self-reference), @sluice/node's dependency from that package, and packages/sluice/ (the workspace's link) in a
 * clone (docs/decisions/0042-two-packages-sluice-and-sluice-node.md).
 */
function builtFilesDir(): string {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('sluice/package.json')), 'dist')
  } catch {
    throw new InitError('the sluice package, which holds the files to copy, is not installed: npm install sluice', 1)
  }
}

/** The files to copy, as paths relative to the target folder, each with where it comes from in dist/. */
async function filesToCopy(dist: string): Promise<Map<string, string>> {
  const files = new Map<string, string>([
    ['sluice-sw.js', join(dist, 'sluice-sw.js')],
    ['sluice/browser.js', join(dist, 'browser', 'index.js')],
  ])
  let worker: string[]
  try {
    worker = await readdir(join(dist, 'sluice'))
  } catch {
    throw new NotBuiltError(dist)
  }
  for (const name of worker.sort()) files.set(`sluice/${name}`, join(dist, 'sluice', name))
  for (const from of files.values()) if (!existsSync(from)) throw new NotBuiltError(dist)
  return files
}

/** The files an earlier run wrote, or none if it left no readable list (then nothing is removed). */
async function previouslyWritten(target: string): Promise<string[]> {
  try {
    const { files } = JSON.parse(await readFile(join(target, MANIFEST), 'utf8')) as { files?: unknown }
    if (!Array.isArray(files)) return []
    // Only our own names: a list edited by hand must not make init delete anything outside what it writes.
    return files.filter((f): f is string => typeof f === 'string' && (f === 'sluice-sw.js' || /^sluice\/[\w.-]+$/.test(f)))
  } catch {
    return []
  }
}

/** Whether `target` had to be created: a folder that is missing is made (as `msw init` does); a file is refused. */
async function prepareTarget(target: string, shown: string): Promise<boolean> {
  let info: Awaited<ReturnType<typeof stat>>
  try {
    info = await stat(target)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code !== 'ENOENT') throw new InitError(`cannot use ${shown}: ${code ?? (e as Error).message}`)
    try {
      await mkdir(target, { recursive: true })
    } catch (e) {
      throw new InitError(`cannot create ${shown}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
    }
    return true
  }
  if (!info.isDirectory()) throw new InitError(`${shown} is not a folder: give the folder your dApp serves at /`)
  return false
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`
}

async function run(argv: readonly string[]): Promise<number> {
  const positional = argv.filter((a) => !a.startsWith('-'))
  const parsed = parseFlags(
    argv.filter((a) => a.startsWith('-')),
    {},
  )
  if (parsed.asked) return answerAsked(parsed.asked, usage)
  if (positional.length === 0) throw new UsageError('give the folder your dApp serves at / (for example: sluice init public/)')
  if (positional.length > 1) throw new UnexpectedArgumentError(positional[1]!)
  const shown = positional[0]!
  const target = normalize(shown)
  const created = await prepareTarget(target, shown)

  const files = await filesToCopy(builtFilesDir())
  const stale = (await previouslyWritten(target)).filter((f) => !files.has(f))
  const show = (file: string) => join(shown, ...file.split('/'))
  const width = Math.max(...[...files.keys(), MANIFEST].map((f) => show(f).length))
  const lines: string[] = []
  try {
    await mkdir(join(target, 'sluice'), { recursive: true })
    for (const [file, from] of files) {
      const to = join(target, ...file.split('/'))
      await copyFile(from, to)
      lines.push(`  ${show(file).padEnd(width)}  ${kilobytes((await stat(to)).size)}`)
    }
    await writeFile(join(target, MANIFEST), `${JSON.stringify({ files: [...files.keys()] }, null, 2)}\n`)
    for (const file of stale) await rm(join(target, ...file.split('/')), { force: true })
  } catch (e) {
    throw new InitError(`cannot write to ${shown}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 1)
  }
  if (created) console.log(`Created ${shown}`)
  console.log([`Wrote ${files.size} files to ${shown}:`, ...lines, `  ${show(MANIFEST).padEnd(width)}  (what init wrote, for the next run)`].join('\n'))
  if (stale.length > 0) console.log([`Removed ${stale.length} files an earlier version wrote:`, ...stale.map((f) => `  ${show(f)}`)].join('\n'))
  console.log(`startNode() registers /sluice-sw.js at scope / and starts /sluice/node.worker.js: serve ${shown} at the root of your origin.`)
  return 0
}

export const initCommand: Command = { name: 'init', usage, run }
