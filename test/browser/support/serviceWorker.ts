import { ensureControlled as ensure } from '../../../worker/controlled.ts'

/**
 * The service worker as Vite serves it in tests: worker/sw.ts as a module (the shipped sluice-sw.js is one classic
 * script). It ends event streams after 3 s instead of 4 minutes, so that tests see EventSource resume.
 */
export const TEST_EVENT_STREAM_SECONDS = 3
export const SERVICE_WORKER_URL = new URL('../../../worker/sw.ts', import.meta.url)
// Set apart: Vite rewrites `new URL(...)` of a template literal as a glob.
SERVICE_WORKER_URL.searchParams.set('event_stream_seconds', String(TEST_EVENT_STREAM_SECONDS))

/** Registers the service worker and makes sure this page is controlled, as startNode() does. */
export function ensureControlled(): Promise<ServiceWorkerRegistration> {
  return ensure(SERVICE_WORKER_URL, 'module')
}
