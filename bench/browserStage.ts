// The stage the Chromium in-page benches share (bench/browser.ts, and the page's curves in bench/curves.ts): the
// site of test/support/engines/site.ts (the package as built, `sluice init`, anvil, a relay, peers on demand) with
// the bench's page (a plain page with an import map), and Chromium headless through playwright-core, whose
// DevTools access the benches use (traces, workers' heaps).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import type { Hex } from 'viem'
import { CHROMIUM_ARGS } from '../test/support/engines/engine.ts'
import { SITE_PAGE } from '../test/support/engines/sitePage.ts'
import { openSite, type Site } from '../test/support/engines/site.ts'

/** One Chromium process: what it is (its --type, or "browser"), its CPU seconds (user + system) and resident bytes. */
export type ChromiumProcess = { pid: number; type: string; cpuSeconds: number; rssBytes: number }

/**
 * This process's Chromium descendants, from /proc (Linux): the browser, its renderers (a page, its service worker
 * and its workers live in one) and its helpers, not the sluice processes or anvil beside them.
 */
export function chromiumProcesses(): ChromiumProcess[] {
  const ticksPerSecond = 100
  const pageBytes = 4096
  const stats = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
        const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'))
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
        return [
          {
            pid: Number(pid),
            comm,
            ppid: Number(fields[1]),
            cpu: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
            rss: Number(fields[21]) * pageBytes,
          },
        ]
      } catch {
        return []
      }
    })
  const byPid = new Map(stats.map((s) => [s.pid, s]))
  const descends = (s: { ppid: number }): boolean => {
    for (let p = s.ppid, hops = 0; p > 1 && hops < 64; p = byPid.get(p)?.ppid ?? 0, hops++) if (p === process.pid) return true
    return false
  }
  const typeOf = (pid: number) => {
    try {
      return /--type=(\S+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '))?.[1] ?? 'browser'
    } catch {
      return 'gone'
    }
  }
  return stats.filter((s) => /chrom/i.test(s.comm) && descends(s)).map((s) => ({ pid: s.pid, type: typeOf(s.pid), cpuSeconds: s.cpu, rssBytes: s.rss }))
}

/** The duration of the latest `performance.measure(name)` in `page`'s node worker (worker/node.worker.ts). */
export async function nodeWorkerMeasure(page: Page, name: string): Promise<number> {
  const worker = page
    .workers()
    .filter((w) => w.url().includes('node.worker'))
    .at(-1)
  if (!worker) throw new Error("the page has no node's worker")
  return (await worker.evaluate(`performance.getEntriesByName(${JSON.stringify(name)}).at(-1).duration`)) as number
}

/**
 * The JS heap in use, after a full GC, of `page`'s dedicated worker whose URL holds `urlPart` (the node's worker:
 * 'node.worker'), read over the DevTools protocol (a worker has no performance.memory).
 */
export async function workerHeapBytes(page: Page, urlPart: string): Promise<number> {
  const cdp = await page.context().newCDPSession(page)
  try {
    const attached = new Promise<string>((resolve) =>
      cdp.on('Target.attachedToTarget', (e) => {
        if (e.targetInfo.type === 'worker' && e.targetInfo.url.includes(urlPart)) resolve(e.sessionId)
      }),
    )
    const answers = new Map<number, (result: unknown) => void>()
    cdp.on('Target.receivedMessageFromTarget', (e) => {
      const message = JSON.parse(e.message) as { id?: number; result?: unknown; error?: unknown }
      if (message.id !== undefined) answers.get(message.id)?.(message.result ?? message.error)
    })
    // Not flattened: Playwright's CDPSession has no session id to send with, so messages go through the target.
    await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false })
    const sessionId = await Promise.race([attached, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no worker ${urlPart}`)), 5000))])
    let id = 0
    const send = (method: string) =>
      new Promise<unknown>((resolve) => {
        answers.set(++id, resolve)
        void cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method }) })
      })
    await send('HeapProfiler.collectGarbage')
    return ((await send('Runtime.getHeapUsage')) as { usedSize: number }).usedSize
  } finally {
    await cdp.detach().catch(() => {})
  }
}

/** CPU seconds of every Chromium process of this one. */
export function chromiumCpuSeconds(): number {
  return chromiumProcesses().reduce((sum, p) => sum + p.cpuSeconds, 0)
}

export type Call = { status: number; body: unknown }
export type Started = { address: string; startNode: number; answered: number; sinceNavigation: number }
export type Paid = { seconds: number; latencies: number[]; failures: number; firstFailures: string[] }

/** Calls `site.<method>(...args)` in the page (a string: nothing of tsx's output goes into the browser). */
export function inPage<T>(page: Page, method: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(`window.site.${method}(...${JSON.stringify(args)})`) as Promise<T>
}

/** A page of the site in `context`, and how to (re)load it until the bench's functions are there. */
export type BenchPage = { page: Page; open(): Promise<void> }

export type BrowserStage = Site & {
  browser: Browser
  /** With `persistent`: the context of a Chromium profile on disk, as a person's browser keeps its IndexedDB. */
  profile?: BrowserContext
  /** A fresh context, in memory as Playwright's contexts are (IndexedDB included). */
  newContext(): Promise<BrowserContext>
  /** Page errors seen so far in any page of newPage. */
  pageErrors: string[]
  newPage(context: BrowserContext): Promise<BenchPage>
  close(): Promise<void>
}

/**
 * The site (test/support/engines/site.ts) with the bench's page (and with `libs`: bench modules built for the
 * browser into it; with `sourceMaps`: the node worker's source maps beside it), and Chromium (with `persistent`, on a
 * profile on disk).
 */
export async function openBrowserStage(options: {
  funded: Hex[]
  libs?: Record<string, string>
  persistent?: boolean
  sourceMaps?: boolean
}): Promise<BrowserStage> {
  const site = await openSite({
    page: SITE_PAGE,
    funded: options.funded,
    libs: { 'pad.js': 'bench/idbPad.ts', ...options.libs },
    ...(options.sourceMaps ? { sourceMaps: true } : {}),
  })
  const pageErrors: string[] = []
  let browser: Browser | undefined
  let profile: BrowserContext | undefined
  const close = async () => {
    await profile?.close().catch(() => {})
    await browser?.close().catch(() => {})
    await site.close()
  }
  try {
    const launch = { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS }
    if (options.persistent) {
      profile = await chromium.launchPersistentContext(join(site.dir, 'profile'), launch)
      browser = profile.browser()!
    } else browser = await chromium.launch(launch)
    return {
      ...site,
      browser: browser!,
      pageErrors,
      ...(profile ? { profile } : {}),
      newContext: () => browser!.newContext(),
      async newPage(context) {
        const page = await context.newPage()
        page.on('pageerror', (e) => pageErrors.push(e.message))
        return {
          page,
          async open() {
            await page.goto(site.url)
            await page.waitForFunction('window.site !== undefined')
          },
        }
      },
      close,
    }
  } catch (e) {
    await close()
    throw e
  }
}
