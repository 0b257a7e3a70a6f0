/**
 * What the node needs of a browser, checked before anything starts (docs/decisions/0057): in the page before
 * startNode registers or starts anything, and in the node's worker as its start begins. A browser that lacks one
 * gets BROWSER_UNSUPPORTED at once, naming each thing missing, rather than a hang or a TypeError from deep inside.
 */
import { SluiceError } from '../src/errors.ts'

/**
 * What a browser may lack, as `BrowserUnsupportedError.missing` lists it: stable names a dApp may switch on. The
 * message lists them as they are (names for people would cost the page's module 0.15 kB gzipped); the table of
 * docs/embedding.md says what each is.
 */
export type BrowserFeature =
  | 'serviceWorker'
  | 'webLocks'
  | 'broadcastChannel'
  | 'moduleWorker'
  | 'indexedDB'
  | 'getRandomValues'
  | 'subtleCrypto'
  | 'webSocket'
  | 'promiseWithResolvers'
  | 'storageManager'

/** The browser lacks something the node needs: `missing` says what, in the page or in the node's worker. */
export class BrowserUnsupportedError extends SluiceError {
  override name = 'BrowserUnsupportedError' as const
  override readonly code = 'BROWSER_UNSUPPORTED' as const
  readonly missing: readonly BrowserFeature[]
  constructor(missing: readonly BrowserFeature[], message?: string) {
    super(
      message ??
        `this browser lacks what the Sluice node needs: ${missing.join(', ')}${
          globalThis.isSecureContext === false ? ' (this page is not a secure context: serve it over https, or from localhost)' : ''
        }`,
    )
    this.missing = missing
  }
}

/** What the page lacks to start the node; `serviceWorker` only when startNode uses one. */
export function missingInPage({ serviceWorker }: { serviceWorker: boolean }): BrowserFeature[] {
  const nav = globalThis.navigator as Partial<Navigator> | undefined
  const missing: BrowserFeature[] = []
  if (serviceWorker && !nav?.serviceWorker) missing.push('serviceWorker')
  if (typeof nav?.locks?.request !== 'function') missing.push('webLocks')
  if (typeof globalThis.BroadcastChannel !== 'function') missing.push('broadcastChannel')
  if (!moduleWorkers()) missing.push('moduleWorker')
  if (!globalThis.indexedDB) missing.push('indexedDB')
  return missing
}

/** What the node's worker lacks to run the node: WebSocket and Promise.withResolvers only with relays (libp2p). */
export function missingInWorker({ relays, subtleCrypto }: { relays: boolean; subtleCrypto: boolean }): BrowserFeature[] {
  const missing: BrowserFeature[] = []
  if (!globalThis.indexedDB) missing.push('indexedDB')
  if (typeof globalThis.BroadcastChannel !== 'function') missing.push('broadcastChannel')
  if (typeof globalThis.crypto?.getRandomValues !== 'function') missing.push('getRandomValues')
  if (subtleCrypto && !globalThis.crypto?.subtle) missing.push('subtleCrypto')
  if (relays && typeof globalThis.WebSocket !== 'function') missing.push('webSocket')
  if (relays && typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') missing.push('promiseWithResolvers')
  return missing
}

/**
 * Whether `new Worker(url, { type: 'module' })` starts a module worker. A browser that does not know `type` never
 * reads it and starts a classic worker, which fails on the first `import`; one that knows it reads the option (the
 * arguments are converted first) before it parses the URL, and this URL does not parse (a SyntaxError), so no
 * worker starts and nothing is fetched.
 */
function moduleWorkers(): boolean {
  if (typeof globalThis.Worker !== 'function') return false
  let read = false
  try {
    new Worker('http://[', {
      get type() {
        read = true
        return 'module' as const
      },
    }).terminate()
  } catch {
    // Thrown by the URL, as meant (a browser that made a worker anyway has ended it).
  }
  return read
}
