/** The code of what `run` throws (or rejects with), or 'none': what a test of typed errors compares. */
export async function codeOf(run: () => unknown): Promise<string> {
  try {
    await run()
    return 'none'
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${String(e)}`
  }
}
