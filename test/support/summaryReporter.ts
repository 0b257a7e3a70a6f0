import { writeFileSync } from 'node:fs'
import type { Reporter, TestModule } from 'vitest/node'

/**
 * Counts the run's tests and writes them to `.vitest-summary.json` for scripts/test.mjs, which prints the
 * closing `N passed, N failed` line CI reads (vitest's own summary is not in a form CI reads).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
      // A file that failed to load has no tests but is a failure all the same.
      if (m.state() === 'failed' && ![...m.children.allTests()].some((t) => t.result().state === 'failed')) failed++
    }
    failed += errors.length
    writeFileSync('.vitest-summary.json', JSON.stringify({ passed, failed, skipped }))
  }
}
