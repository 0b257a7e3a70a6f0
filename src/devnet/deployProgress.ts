import type { Address, Hex } from 'viem'
import { SluiceError } from '../errors.ts'
import { readJsonFile, removeFile, serialized, writeJsonFile } from './jsonFile.ts'

/**
 * What a deployment under way has sent: for each step, the nonce and hash of its transaction and, for a creation,
 * the address that nonce gives. Written as each transaction is broadcast and as it is mined, so that a deployment
 * run again after a crash knows what it sent; the chain says whether each step is done (deployRunner.ts).
 */

export type StepRecord = {
  nonce: number
  /** Absent for a creation found on the chain at a nonce no record named (sent just before a crash). */
  hash?: Hex
  /** For a creation: the address its nonce gives. */
  address?: Address
  /** The chain's head when it was sent (or, found on the chain, when the deployment began): a lower bound of its block. */
  sentAtBlock: number
  /** The block it was mined in, once its receipt was seen. */
  blockNumber?: number
}

export type DeployProgress = {
  version: 1
  chainId: number
  deployer: Address
  /** The deployment's parameters as given (decimal strings): a run with others must not continue this one. */
  parameters: Record<string, unknown>
  /** The deployer's nonce when the deployment began: a creation at a nonce from here may be one of ours. */
  startNonce: number
  startBlock: number
  steps: Record<string, StepRecord>
}

/** Where the progress is kept: a file next to the deployment file, or memory (the devnet, the tests). */
export type ProgressStore = {
  load(): Promise<DeployProgress | undefined>
  save(progress: DeployProgress): Promise<void>
  /** The deployment is done and written: no progress to keep. */
  remove(): Promise<void>
}

export class ProgressFileError extends SluiceError {
  override name = 'ProgressFileError' as const
  override readonly code = 'DEPLOY_PROGRESS_FILE' as const
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`)
  }
}

export function memoryProgress(): ProgressStore {
  let kept: DeployProgress | undefined
  return {
    load: async () => (kept ? structuredClone(kept) : undefined),
    save: async (progress) => {
      kept = structuredClone(progress)
    },
    remove: async () => {
      kept = undefined
    },
  }
}

export function fileProgress(path: string): ProgressStore & { readonly path: string } {
  const write = serialized()
  return {
    path,
    async load() {
      let value: unknown
      try {
        value = await readJsonFile(path)
      } catch (e) {
        throw new ProgressFileError(path, `not valid JSON (${(e as Error).message}); remove it to start the deployment again`)
      }
      if (value === undefined) return undefined
      const progress = value as Partial<DeployProgress>
      if (progress.version !== 1 || typeof progress.steps !== 'object' || typeof progress.startNonce !== 'number')
        throw new ProgressFileError(path, 'not the progress of a deployment this version of sluice writes')
      return progress as DeployProgress
    },
    save: (progress) => write(() => writeJsonFile(path, progress)),
    remove: () => write(() => removeFile(path)),
  }
}
