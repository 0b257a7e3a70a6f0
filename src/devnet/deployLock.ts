import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { SluiceError } from '../errors.ts'

/** Another process deploys to the same file: two would send the same steps with the same key. */
export class DeployLockedError extends SluiceError {
  override name = 'DeployLockedError' as const
  override readonly code = 'DEPLOY_LOCKED' as const
  constructor(
    readonly path: string,
    readonly pid: number,
  ) {
    super(`another sluice deploy (process ${pid}) is deploying to this file (${path}); wait for it, or stop it first`)
  }
}

/**
 * Takes the lock file `path` (the process id inside) for one deployment at a time. A lock left by a process that is
 * gone (killed, crashed) is taken over.
 */
export async function lock(path: string): Promise<{ release(): Promise<void> }> {
  await mkdir(dirname(path), { recursive: true })
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(path, `${process.pid}\n`, { flag: 'wx' })
      return { release: () => rm(path, { force: true }) }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e
    }
    const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim())
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new DeployLockedError(path, pid)
    await rm(path, { force: true })
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}
