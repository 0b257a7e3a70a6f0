import { inject } from 'vitest'
import type { StartNodeOptions } from '../../../worker/host.ts'
import { SERVICE_WORKER_URL } from './serviceWorker.ts'

/** The node's worker (worker/node.worker.ts) as tests start it: test/browser/fixtures/sluiceNodeWorker.ts. */
export const NODE_WORKER_URL = new URL('../fixtures/sluiceNodeWorker.ts', import.meta.url)

/** startNode's options for the run's anvil, with the service worker and the node worker as Vite serves them. */
export function nodeOptions(extra: Partial<StartNodeOptions> = {}): StartNodeOptions {
  return {
    rpc: inject('rpcUrl'),
    deployment: inject('deployment'),
    confirmations: 0,
    pollingInterval: 50,
    environment: 'development',
    serviceWorkerUrl: SERVICE_WORKER_URL,
    serviceWorkerType: 'module',
    workerUrl: NODE_WORKER_URL,
    ...extra,
  }
}
