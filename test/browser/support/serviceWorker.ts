/**
 * Registers the service worker (as a module: Vite serves the TypeScript; the shipped sluice-sw.js is the same code
 * as one classic script) and makes sure this page is controlled. A page loaded before the worker was active is not
 * controlled until the worker claims it: the page asks, as startNode() will on a hard reload.
 */
export async function ensureControlled(): Promise<ServiceWorkerRegistration> {
  const registration = await navigator.serviceWorker.register(new URL('../../../worker/sw.ts', import.meta.url), { type: 'module', scope: '/' })
  await navigator.serviceWorker.ready
  if (!navigator.serviceWorker.controller) {
    const controlled = new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }))
    registration.active?.postMessage({ type: 'sluice:claim' })
    await controlled
  }
  return registration
}
