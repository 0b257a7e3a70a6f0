/** Resolves with the first of `signals` to arrive; until then they no longer end the process. */
export function nextSignal(signals: readonly NodeJS.Signals[]): { received: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal: (signal: NodeJS.Signals) => void = () => {}
  const received = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = resolve
  })
  for (const s of signals) process.on(s, onSignal)
  return {
    received,
    dispose: () => {
      for (const s of signals) process.off(s, onSignal)
    },
  }
}
