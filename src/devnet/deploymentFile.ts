import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SluiceError } from '../errors.ts'
import { type InvalidDeploymentError, parseDeployment, type Deployment } from '../chain/deployment.ts'
import { writeJsonFile } from './jsonFile.ts'

/** Where `sluice chain` keeps the deployment of a chain: `<dir>/<chainId>.json`. */
export function deploymentPath(dir: string, chainId: number): string {
  return join(dir, `${chainId}.json`)
}

export class DeploymentNotFoundError extends SluiceError {
  override name = 'DeploymentNotFoundError' as const
  override readonly code = 'DEPLOYMENT_NOT_FOUND' as const
  constructor(readonly path: string) {
    super(`no deployment file at ${path}`)
  }
}

export class DeploymentSyntaxError extends SluiceError {
  override name = 'DeploymentSyntaxError' as const
  override readonly code = 'DEPLOYMENT_SYNTAX' as const
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`deployment file ${path} is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}

export type ReadDeploymentErrorType = DeploymentNotFoundError | DeploymentSyntaxError | InvalidDeploymentError

/** Reads and validates a deployment file; throws one of {@link ReadDeploymentErrorType}. */
export async function readDeployment(path: string): Promise<Deployment> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new DeploymentNotFoundError(path)
    throw e
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw new DeploymentSyntaxError(path, e)
  }
  return parseDeployment(json, path)
}

/**
 * Writes the deployment as indented JSON, creating the directory, to a temporary file renamed over it (jsonFile.ts):
 * a reader polling for the file never sees half of it.
 */
export async function writeDeployment(path: string, deployment: Deployment): Promise<void> {
  await writeJsonFile(path, deployment)
}
