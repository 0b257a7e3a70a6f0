/**
 * Takes `key` away from `owner` as a browser without it would have it (undefined), until the returned function puts
 * it back: an own property (the window's IndexedDB, BroadcastChannel) is kept aside and restored as it was, one that
 * the owner's prototype gives (navigator.locks, navigator.serviceWorker) is shadowed and the shadow removed.
 */
export function takeAway(owner: object, key: string): () => void {
  const own = Object.getOwnPropertyDescriptor(owner, key)
  Object.defineProperty(owner, key, { value: undefined, configurable: true, writable: true })
  return () => {
    if (own) Object.defineProperty(owner, key, own)
    else delete (owner as Record<string, unknown>)[key]
  }
}

/** Every Worker the page makes from now until the returned `restore`, counted once it is made. */
export function countWorkers(): { made: Worker[]; restore(): void } {
  const Original = globalThis.Worker
  const made: Worker[] = []
  globalThis.Worker = class extends Original {
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options)
      made.push(this)
    }
  }
  return {
    made,
    restore() {
      globalThis.Worker = Original
    },
  }
}
