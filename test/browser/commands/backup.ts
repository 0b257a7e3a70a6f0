/**
 * Browser commands (they run in Node) for the backup client in the page: a real `sluice backup-server` process, and
 * addresses where something misbehaves (a server that takes the connection and never answers, a port nothing
 * listens on). The page calls them as a node calls its backup server: cross-origin, with CORS.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserCommand } from 'vitest/node'
import { startBackupServerProcess } from '../../cli/backupServerProcess.ts'
import type { SluiceProcess } from '../../cli/sluiceProcess.ts'

const running: { processes: SluiceProcess[]; dirs: string[]; servers: Server[]; sockets: Socket[] } = { processes: [], dirs: [], servers: [], sockets: [] }

/** `sluice backup-server` on a free port of 127.0.0.1 with a new data directory and `args`; resolves with its API's URL. */
export const startBackupServer: BrowserCommand<[args?: string[]]> = async (_ctx, args = []) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-backup-browser-'))
  running.dirs.push(dir)
  const { sluice, url } = await startBackupServerProcess(['--data-dir', dir, '--api', '127.0.0.1:0', ...args], dir)
  running.processes.push(sluice)
  return url
}

/** A backup URL whose server accepts the connection and never answers. */
export const silentBackupServer: BrowserCommand<[]> = async () => {
  const server = createServer((socket) => void running.sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  running.servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/backup/v1`
}

/** A backup URL on a port nothing listens on. */
export const goneBackupServer: BrowserCommand<[]> = async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return `http://127.0.0.1:${port}/backup/v1`
}

export const stopBackupServers: BrowserCommand<[]> = async () => {
  const processes = running.processes.splice(0)
  for (const p of processes) p.child.kill('SIGTERM')
  await Promise.all(processes.map((p) => p.exited))
  for (const s of running.sockets.splice(0)) s.destroy()
  await Promise.all(running.servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
  for (const dir of running.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

export const backupCommands = { startBackupServer, silentBackupServer, goneBackupServer, stopBackupServers }

declare module 'vitest/browser' {
  interface BrowserCommands {
    startBackupServer(args?: string[]): Promise<string>
    silentBackupServer(): Promise<string>
    goneBackupServer(): Promise<string>
    stopBackupServers(): Promise<void>
  }
}
