import { useCallback, useEffect, useState } from 'preact/hooks'

/** Data loaded by `load`, again whenever a dependency changes; `error` is the last failure (shown by Failure). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown }>({ data: undefined, error: undefined })
  useEffect(() => {
    let current = true
    load().then(
      (data) => current && setState({ data, error: undefined }),
      (e: unknown) => current && setState((s) => ({ data: s.data, error: e })),
    )
    return () => {
      current = false
    }
  }, deps)
  return state
}

/** An action a person starts with a button: busy while it runs, its failure kept for showing beside it. */
export function useAction(): { busy: boolean; error: unknown; run(work: () => Promise<unknown>): Promise<void> } {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>()
  const run = useCallback(async (work: () => Promise<unknown>) => {
    setBusy(true)
    setError(undefined)
    try {
      await work()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }, [])
  return { busy, error, run }
}
