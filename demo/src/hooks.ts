import { useCallback, useEffect, useState } from 'preact/hooks'

/** Data loaded by `load`, again whenever a dependency changes; `error` is the failure's message. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string | undefined } {
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined }>({ data: undefined, error: undefined })
  useEffect(() => {
    let current = true
    load().then(
      (data) => current && setState({ data, error: undefined }),
      (e: unknown) => current && setState((s) => ({ data: s.data, error: e instanceof Error ? e.message : String(e) })),
    )
    return () => {
      current = false
    }
  }, deps)
  return state
}

/** An action a person starts with a button: busy while it runs, its error's message kept for showing beside it. */
export function useAction(): { busy: boolean; error: string | undefined; run(work: () => Promise<unknown>): Promise<void> } {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const run = useCallback(async (work: () => Promise<unknown>) => {
    setBusy(true)
    setError(undefined)
    try {
      await work()
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    } finally {
      setBusy(false)
    }
  }, [])
  return { busy, error, run }
}
