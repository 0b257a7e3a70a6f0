import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * A PostgreSQL server of the tests' own (Debian's `postgresql` package, which .ci/run installs): a new cluster made
 * by `initdb` in a temporary directory, started by `pg_ctl` on a free loopback port, removed by `stop`. A test that
 * needs one and cannot start it fails with the reason: nothing here passes silently.
 */
export type TestPostgres = {
  /** The server's URL for `database` (the default database `postgres` when none is given). */
  url(database?: string): string
  /** Creates an empty database and answers its URL. */
  createDatabase(name: string): Promise<string>
  /** Runs SQL as the superuser (through psql), answering its output: for tests that poke at the server. */
  psql(sql: string, database?: string): Promise<string>
  port: number
  /** Stops the server (fast shutdown) and removes its directory. */
  stop(): Promise<void>
}

const USER = 'sluice'

/** Where Debian puts the server's programs (they are not on PATH): the newest version there, else PATH. */
export function postgresBin(program: string): string {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', program)))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return join(root, versions[0], 'bin', program)
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir && existsSync(join(dir, program))) return join(dir, program)
  throw new Error(`PostgreSQL's ${program} was not found (install Debian's postgresql package: .ci/run does)`)
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

// initdb and the server refuse to run as root: as root, they run as Debian's `postgres` user.
const asServerUser = (program: string, args: string[]): [string, string[]] =>
  process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args]

async function runServer(program: string, args: string[], what: string): Promise<string> {
  const [file, argv] = asServerUser(postgresBin(program), args)
  try {
    const { stdout } = await run(file, argv, { timeout: 60_000 })
    return stdout
  } catch (e) {
    const { stderr, stdout, message } = e as { stderr?: string; stdout?: string; message: string }
    throw new Error(`PostgreSQL: ${what} failed: ${(stderr || stdout || message).trim()}`)
  }
}

/**
 * Starts a server. fsync stays on (the default): the tests that kill processes rely on what a real deployment does.
 * A port taken between the choice and the start (another run on the machine) is tried again with another port.
 */
export async function startPostgres(options: { settings?: Record<string, string> } = {}): Promise<TestPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-pg-'))
  const data = join(dir, 'data')
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']).catch(() => {
      throw new Error("PostgreSQL: Debian's `postgres` user is missing (install the postgresql package: .ci/run does)")
    })
    const uid = Number(stdout.trim())
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
    await chown(dir, uid, gid)
  }
  await runServer('initdb', ['-D', data, '-U', USER, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], 'initdb')
  const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: dir, max_connections: '200', ...options.settings }
  const log = join(dir, 'server.log')
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const opts = Object.entries({ ...settings, port: String(port) })
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(' ')
    try {
      await runServer('pg_ctl', ['-D', data, '-l', log, '-o', opts, '-w', '-t', '60', 'start'], 'pg_ctl start')
    } catch (e) {
      const text = await readFile(log, 'utf8').catch(() => '')
      if (attempt < 3 && /could not bind|Address already in use/.test(text)) continue
      await rm(dir, { recursive: true, force: true })
      throw new Error(`${(e as Error).message}\n${text.split('\n').slice(-10).join('\n')}`)
    }
    const url = (database = 'postgres') => `postgres://${USER}@127.0.0.1:${port}/${database}`
    const psql = async (sql: string, database = 'postgres') => {
      try {
        const { stdout } = await run(postgresBin('psql'), ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-d', url(database), '-c', sql], {
          timeout: 30_000,
        })
        return stdout.trim()
      } catch (e) {
        throw new Error(`psql: ${((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`)
      }
    }
    return {
      port,
      url,
      psql,
      createDatabase: async (name) => {
        await psql(`CREATE DATABASE "${name}"`)
        return url(name)
      },
      stop: async () => {
        await runServer('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop').catch(() => {})
        await rm(dir, { recursive: true, force: true })
      },
    }
  }
}
