/// <reference lib="webworker" />
/**
 * Imports a worker's module with `import()` and holds the messages that come meanwhile: the port delivers them as
 * soon as the worker's script has run, before the imported module has registered its listener (a top-level `await`
 * does not hold them either). Once the module has run they are dispatched again, in order, to its listeners. A module
 * that does not load throws from a timer, as a failed static import would: the page gets the worker's `error` event.
 */
export function importHoldingMessages(load: () => Promise<unknown>): void {
  const scope = self as unknown as DedicatedWorkerGlobalScope
  const held: MessageEvent[] = []
  // The first listener of all: nothing after it sees a message until the module has run.
  const hold = (event: MessageEvent) => {
    event.stopImmediatePropagation()
    held.push(event)
  }
  scope.addEventListener('message', hold)
  load().then(
    () => {
      scope.removeEventListener('message', hold)
      for (const event of held) scope.dispatchEvent(new MessageEvent('message', { data: event.data, ports: [...event.ports] }))
    },
    (error: unknown) => {
      scope.removeEventListener('message', hold)
      setTimeout(() => {
        throw error
      })
    },
  )
}
