import { logged, startSluice, type SluiceProcess } from './sluiceProcess.ts'

/** Starts `sluice backup-server <args>` and resolves once it prints its URL and is ready. */
export async function startBackupServerProcess(args: readonly string[], cwd: string): Promise<{ sluice: SluiceProcess; url: string }> {
  const sluice = startSluice(['backup-server', ...args], cwd)
  const [, url] = await sluice.waitForOutput(logged('Backup server: ([^\\s"]+)[\\s\\S]*Press Ctrl-C to stop\\.'))
  return { sluice, url: url! }
}
