/** Retries `check` until it stops throwing, or rethrows its last failure after `ms`. */
export async function eventually<T>(check: () => T | Promise<T>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await check()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((r) => setTimeout(r, 25))
    }
  }
}
