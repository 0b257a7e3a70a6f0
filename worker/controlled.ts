/**
 * The page's half of the service worker: registered at scope `/`, and controlling this page before its first
 * `fetch('/api/v1/...')`. A page is not controlled on its first visit (it loaded before the worker existed) nor
 * after a hard reload (which bypasses the service worker); it asks the active worker to claim it then, instead of
 * making the user reload (lessons of Raiden's light client #3024: never let such a request reach the static host).
 */
import { SluiceError } from '../src/errors.ts'

export class ServiceWorkerError extends SluiceError {
  override name = 'ServiceWorkerError' as const
  override readonly code = 'SERVICE_WORKER' as const
}

/** What a page without a service worker can do instead: said by every ServiceWorkerError. */
const WITHOUT =
  "; startNode({ ..., serviceWorker: false }) runs the node without one: its methods (node.status(), node.pay(), ...) work, fetch('/api/v1/...') does not reach it"

/** The error of a browser that gives the page no service worker. */
export function noServiceWorker(): ServiceWorkerError {
  return new ServiceWorkerError(
    `this browser gives the page no service worker (a private window of Firefox, some embedded webviews, or not a secure context)${WITHOUT}`,
  )
}

/**
 * Resolves once `navigator.serviceWorker.controller` is Sluice's worker at `url`. `stage` hears each wait as it
 * begins (registering, activating, claiming), so that a timeout can say which one the browser did not end.
 */
export async function ensureControlled(
  url: string | URL,
  type: WorkerType = 'classic',
  stage: (what: string) => void = () => {},
): Promise<ServiceWorkerRegistration> {
  if (!navigator.serviceWorker) throw noServiceWorker()
  // Controlled by it already (a reload): no register(). Its job would queue behind the update check the browser runs
  // after each navigation, and Chromium held it 1.9 to 3.1 s in about one start in six; the lookup takes a ms or two.
  // The browser's own update checks still bring a new version of the script.
  const scriptUrl = new URL(url, location.href).href
  if (navigator.serviceWorker.controller?.scriptURL === scriptUrl) {
    stage('looking up its registration')
    const current = await navigator.serviceWorker.getRegistration('/')
    if (current?.active?.scriptURL === scriptUrl) return current
  }
  let registration: ServiceWorkerRegistration
  stage('registering it')
  try {
    registration = await navigator.serviceWorker.register(url, { type, scope: '/' })
  } catch (e) {
    throw new ServiceWorkerError(`the service worker ${String(url)} could not be registered: ${(e as Error).message}${WITHOUT}`, { cause: e })
  }
  stage('waiting for it to activate')
  await navigator.serviceWorker.ready
  if (!navigator.serviceWorker.controller) {
    stage('waiting for it to claim this page')
    const controlled = new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }))
    registration.active?.postMessage({ type: 'sluice:claim' })
    await controlled
  }
  return registration
}
