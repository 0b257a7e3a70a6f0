import { ensureControlled as ensure } from '../../../worker/controlled.ts'

/** The service worker as Vite serves it in tests: worker/sw.ts as a module (the shipped sluice-sw.js is one classic script). */
export const SERVICE_WORKER_URL = new URL('../../../worker/sw.ts', import.meta.url)

/** Registers the service worker and makes sure this page is controlled, as startNode() does. */
export function ensureControlled(): Promise<ServiceWorkerRegistration> {
  return ensure(SERVICE_WORKER_URL, 'module')
}
