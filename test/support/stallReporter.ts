import { execFileSync } from 'node:child_process'
import type { Reporter, TestCase, TestModule } from 'vitest/node'

/**
 * Ends a run that has stalled, saying where. Vitest's timeouts end a test that waits, but not one whose worker is
 * stuck outside them (a hook that never settles, a blocked worker, a browser that never answers): CI then only sees
 * its own limit pass, with nothing printed. When no test has ended anywhere for `SLUICE_TEST_STALL_MINUTES`
 * (10 by default: the longest test, the demo's journey, takes under 5), this prints the files still running, the
 * tests started in them and not ended, and the processes under this one, then exits 1. It is not a timeout of any
 * test: a run that goes on, however slowly, is never cut.
 */
export default class StallReporter implements Reporter {
  private readonly running = new Map<string, Set<string>>()
  private last = Date.now()
  private timer: NodeJS.Timeout | undefined
  private readonly limitMs = Number(process.env.SLUICE_TEST_STALL_MINUTES ?? 10) * 60_000

  onTestRunStart() {
    this.last = Date.now()
    this.timer = setInterval(() => this.check(), Math.min(30_000, this.limitMs / 4))
    this.timer.unref()
  }

  onTestModuleStart(module: TestModule) {
    this.running.set(module.moduleId, new Set())
    this.last = Date.now()
  }

  onTestModuleEnd(module: TestModule) {
    this.running.delete(module.moduleId)
    this.last = Date.now()
  }

  onTestCaseReady(test: TestCase) {
    this.running.get(test.module.moduleId)?.add(test.fullName)
  }

  onTestCaseResult(test: TestCase) {
    this.running.get(test.module.moduleId)?.delete(test.fullName)
    this.last = Date.now()
  }

  onTestRunEnd() {
    clearInterval(this.timer)
  }

  private check() {
    const idle = Date.now() - this.last
    if (idle < this.limitMs) return
    const lines = [`\nThe run stalled: no test ended for ${(idle / 60_000).toFixed(1)} minutes. Still running:`]
    for (const [file, tests] of this.running) {
      lines.push(`  ${file.replace(`${process.cwd()}/`, '')}`)
      for (const name of tests) lines.push(`    started, not ended: ${name}`)
    }
    try {
      const ps = execFileSync('ps', ['-eo', 'pid,ppid,etime,time,args', '--forest'], { encoding: 'utf8', timeout: 5_000 })
      lines.push(
        `The machine's processes (this run is ${process.pid}):`,
        ...ps
          .split('\n')
          // Not the kernel's threads (kthreadd, pid 2, and its children).
          .filter((l) => !/^\s*(2\s+0|\d+\s+2)\s/.test(l))
          .map((l) => l.slice(0, 240)),
      )
    } catch {}
    console.error(lines.join('\n'))
    process.exit(1)
  }
}
