/**
 * Browser commands (they run in Node, next to Playwright) that open real tabs of the test origin: a second tab's
 * startNode, a tab closed or reloaded (softly or bypassing the service worker) are what the page under test must
 * survive, and only the browser context can make them. Each tab loads test/browser/fixtures/tab.html.
 */
import type { Page } from 'playwright'
import type { BrowserCommand } from 'vitest/node'

const tabs = new Map<string, Page>()
let next = 0

function tab(id: string): Page {
  const page = tabs.get(id)
  if (!page) throw new Error(`no tab ${id}`)
  return page
}

/** Opens test/browser/fixtures/tab.html in a new tab of the same browser context; resolves with its id once loaded. */
export const openTab: BrowserCommand<[]> = async (ctx) => {
  const page = await ctx.context.newPage()
  const id = `tab${++next}`
  tabs.set(id, page)
  await page.goto(new URL('/test/browser/fixtures/tab.html', ctx.page.url()).href)
  await page.waitForFunction(() => 'sluiceTab' in window)
  return id
}

/** Calls `window.sluiceTab[method](...args)` in the tab and gives its (structured-cloneable) result. */
export const inTab: BrowserCommand<[id: string, method: string, args: unknown[]]> = async (_ctx, id, method, args) => {
  return tab(id).evaluate(
    ([m, a]) => (window as unknown as { sluiceTab: Record<string, (...x: unknown[]) => unknown> }).sluiceTab[m as string]!(...(a as unknown[])),
    [method, args] as const,
  )
}

/** Closes the tab as a user does (no beforeunload): its worker dies with it and the browser releases its locks. */
export const closeTab: BrowserCommand<[id: string]> = async (_ctx, id) => {
  await tab(id).close({ runBeforeUnload: false })
  tabs.delete(id)
}

/** Reloads the tab; `hard` bypasses the service worker and the cache, as Shift+Reload does. */
export const reloadTab: BrowserCommand<[id: string, hard: boolean]> = async (_ctx, id, hard) => {
  const page = tab(id)
  if (hard) {
    const cdp = await page.context().newCDPSession(page)
    const loaded = page.waitForEvent('load')
    await cdp.send('Page.reload', { ignoreCache: true })
    await loaded
    await cdp.detach()
  } else {
    await page.reload()
  }
  await page.waitForFunction(() => 'sluiceTab' in window)
}

/** Closes every tab a test opened. */
export const closeAllTabs: BrowserCommand<[]> = async () => {
  for (const page of tabs.values()) await page.close({ runBeforeUnload: false }).catch(() => {})
  tabs.clear()
}

export const tabCommands = { openTab, inTab, closeTab, reloadTab, closeAllTabs }

declare module 'vitest/browser' {
  interface BrowserCommands {
    openTab(): Promise<string>
    inTab<T = unknown>(id: string, method: string, args: unknown[]): Promise<T>
    closeTab(id: string): Promise<void>
    reloadTab(id: string, hard: boolean): Promise<void>
    closeAllTabs(): Promise<void>
  }
}
