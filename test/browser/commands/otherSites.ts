/**
 * Browser commands (they run in Node, next to Playwright) for what another website can do to a node: a page of
 * another origin, served by a Node HTTP server on loopback and opened in a tab of the test's browser context (the
 * same profile, so its navigations reach the test origin's service worker as a user's would), and an address typed
 * into a new tab. Each gives back what the browser got from `/api/v1` (status, body, and whether the service
 * worker or the network answered), read through Playwright, which sees the answers the attacker's page cannot.
 *
 * The test page is served at http://localhost:<port> or http://127.0.0.1:<port>; the attacker's server listens on
 * both loopback addresses at a port of its own, so the other loopback name is another site ('cross-site') and the
 * same name at its port is another origin of the same site ('same-site').
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrowserContext, Page, Response } from 'playwright'
import type { BrowserCommand } from 'vitest/node'

export type Site = 'cross-site' | 'same-site'
export type ApiAnswer = { url: string; method: string; status: number; body: string; servedBy: 'service worker' | 'network' }

const pages = new Map<string, string>()
const tabs: Page[] = []
const servers: Server[] = []
let port: number | undefined
let next = 0

async function listen(): Promise<number> {
  if (port !== undefined) return port
  const serve = (request: IncomingMessage, response: ServerResponse) => {
    const html = pages.get(new URL(request.url ?? '/', 'http://x').pathname)
    response.writeHead(html === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(html ?? 'not found')
  }
  const first = createServer(serve)
  await new Promise<void>((resolve) => first.listen(0, '127.0.0.1', resolve))
  port = (first.address() as AddressInfo).port
  servers.push(first)
  // localhost may resolve to ::1 first; a machine without IPv6 loopback is served on 127.0.0.1 alone.
  const second = createServer(serve)
  await new Promise<void>((resolve) => second.once('error', () => resolve()).listen(port, '::1', resolve))
  if (second.listening) servers.push(second)
  return port
}

/** The origin of a page of `site` relative to `of` (an origin served on localhost or 127.0.0.1). */
function otherOrigin(of: string, site: Site, at: number): string {
  const host = new URL(of).hostname
  const loopback = host === 'localhost' ? 'localhost' : '127.0.0.1'
  const name = site === 'same-site' ? loopback : loopback === 'localhost' ? '127.0.0.1' : 'localhost'
  return `http://${name}:${at}`
}

/**
 * Collects every answer to an /api/v1 request of the tabs opened from now on (popups included; not the test page's
 * own requests), and keeps those tabs to close.
 */
function recordApiAnswers(context: BrowserContext, testPage: Page): { answers: ApiAnswer[]; stop(): void } {
  const answers: ApiAnswer[] = []
  const onPage = (page: Page) => void tabs.push(page)
  const onResponse = (response: Response) => {
    const url = new URL(response.url())
    if (!url.pathname.startsWith('/api/v1') || pageOf(response) === testPage) return
    void response
      .text()
      .catch(() => '') // a download (the state dump's Content-Disposition) has no body to read here
      .then((body) => {
        answers.push({
          url: url.href,
          method: response.request().method(),
          status: response.status(),
          body,
          servedBy: response.fromServiceWorker() ? 'service worker' : 'network',
        })
      })
  }
  context.on('page', onPage)
  context.on('response', onResponse)
  return {
    answers,
    stop: () => {
      context.off('page', onPage)
      context.off('response', onResponse)
    },
  }
}

/** The tab a response came to; Playwright has no frame for a navigation that began before its frame existed. */
function pageOf(response: Response): Page | undefined {
  try {
    return response.frame().page()
  } catch {
    return undefined
  }
}

async function waitForAnswers(record: { answers: ApiAnswer[] }, count: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (record.answers.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
}

/** The origin a page of `site` has, relative to the test page (for the test to build its HTML). */
export const otherSiteOrigin: BrowserCommand<[site: Site]> = async (ctx, site) => otherOrigin(ctx.page.url(), site, await listen())

/**
 * Opens `html` as a page of `site` (relative to the test page) in a new tab and waits until the browser has had
 * `answers` answers to /api/v1 requests (the page's own or its popups'), or `ms`; resolves with them.
 */
export const openOtherSite: BrowserCommand<[site: Site, html: string, answers?: number, ms?: number]> = async (ctx, site, html, answers = 1, ms = 10_000) => {
  const origin = otherOrigin(ctx.page.url(), site, await listen())
  const path = `/attacker${++next}.html`
  pages.set(path, html)
  const record = recordApiAnswers(ctx.context, ctx.page)
  try {
    const page = await ctx.context.newPage()
    await page.goto(origin + path)
    await waitForAnswers(record, answers, ms)
    return record.answers.slice()
  } finally {
    record.stop()
  }
}

/** Types `url` into a new tab's address bar (CDP Page.navigate, transition `typed`) and resolves with the browser's answer. */
export const typeAddress: BrowserCommand<[url: string]> = async (ctx, url) => {
  const record = recordApiAnswers(ctx.context, ctx.page)
  try {
    const page = await ctx.context.newPage()
    const cdp = await ctx.context.newCDPSession(page)
    await cdp.send('Page.navigate', { url, transitionType: 'typed' })
    await cdp.detach()
    await waitForAnswers(record, 1, 10_000)
    return record.answers[0]
  } finally {
    record.stop()
  }
}

/** Closes every tab these commands opened (popups included) and stops the attacker's server. */
export const closeOtherSites: BrowserCommand<[]> = async () => {
  for (const page of tabs.splice(0)) await page.close({ runBeforeUnload: false }).catch(() => {})
  pages.clear()
  for (const server of servers.splice(0)) server.close()
  port = undefined
}

export const otherSiteCommands = { otherSiteOrigin, openOtherSite, typeAddress, closeOtherSites }

declare module 'vitest/browser' {
  interface BrowserCommands {
    otherSiteOrigin(site: Site): Promise<string>
    openOtherSite(site: Site, html: string, answers?: number, ms?: number): Promise<ApiAnswer[]>
    typeAddress(url: string): Promise<ApiAnswer | undefined>
    closeOtherSites(): Promise<void>
  }
}
