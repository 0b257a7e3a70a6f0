/**
 * Chromium (CDP) and Firefox (WebDriver BiDi, Firefox's own remote agent: no geckodriver) through puppeteer-core,
 * with Debian's binaries. One profile per launch, in a temporary folder that goes at close.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import {
  bounded,
  CHROMIUM_ARGS,
  DEFAULT_TIMEOUT_MS,
  type EngineBrowser,
  type EngineName,
  pollUntil,
  type Tab,
  unwrapOutcome,
  wrapExpression,
} from './engine.ts'
import { trustInNss } from '../testCa.ts'

/**
 * Firefox's own calls out (updates, telemetry, safe browsing lists, captive portal checks) are off: this machine's
 * network is closed and each would wait on its timeout. Puppeteer sets most; these are the rest we saw tried.
 */
const FIREFOX_PREFS = {
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'browser.safebrowsing.update.enabled': false,
  'extensions.getAddons.cache.enabled': false,
}

export async function launchPuppeteer(
  engine: Exclude<EngineName, 'webkit'>,
  executablePath: string,
  size: { width: number; height: number },
  {
    clipboard,
    firefoxPrefs,
    trustCa,
    hosts,
    webrtcHostCandidates,
  }: { clipboard: boolean; firefoxPrefs: Record<string, unknown>; trustCa?: string; hosts: Record<string, string>; webrtcHostCandidates: boolean },
): Promise<EngineBrowser> {
  const profile = mkdtempSync(join(tmpdir(), `sluice-${engine}-`))
  // Chromium reads the roots a user added from $HOME/.pki/nssdb: a HOME of its own inside the profile. Firefox
  // keeps its NSS database in the profile itself.
  const home = join(profile, 'home')
  if (trustCa) trustInNss(trustCa, engine === 'chromium' ? join(home, '.pki/nssdb') : profile)
  const names = Object.entries(hosts)
  if (engine === 'firefox' && names.some(([, address]) => address !== '127.0.0.1')) throw new Error('Firefox maps names to its loopback only (127.0.0.1)')
  const chromiumArgs = names.length > 0 ? [`--host-resolver-rules=${names.map(([name, address]) => `MAP ${name} ${address}`).join(', ')}`] : []
  const firefoxNames = names.length > 0 ? { 'network.dns.localDomains': names.map(([name]) => name).join(',') } : {}
  if (webrtcHostCandidates) chromiumArgs.push('--disable-features=WebRtcHideLocalIpsWithMdns')
  const firefoxWebRtc = webrtcHostCandidates ? { 'media.peerconnection.ice.obfuscate_host_addresses': false } : {}
  const browser: Browser = await bounded(
    puppeteer.launch({
      browser: engine === 'firefox' ? 'firefox' : 'chrome',
      executablePath,
      headless: true,
      userDataDir: profile,
      defaultViewport: size,
      ...(engine === 'chromium'
        ? { args: [...CHROMIUM_ARGS, ...chromiumArgs], ...(trustCa ? { env: { ...process.env, HOME: home } } : {}) }
        : { extraPrefsFirefox: { ...FIREFOX_PREFS, ...firefoxNames, ...firefoxWebRtc, ...firefoxPrefs } }),
      // Above every bound of ours (evaluate's is the caller's): our timeouts say what was waited on, puppeteer's would not.
      protocolTimeout: 30 * 60_000,
      // No request and response events: nothing here reads them, and they share the one ordered channel with the
      // answers to our commands. A page running a node makes some 30 requests a second (chain polling, the relay's
      // frames), some 200 CDP events a second from the page and its workers. Under two CI runs on two cores Chromium
      // fell up to 19 s behind on them, and every answer waited its turn: a click (ten round trips) or a fill (twenty
      // and more) passed its bound while the page ran each command in a few ms. WebDriver BiDi carries them too.
      networkEnabled: false,
    }),
    DEFAULT_TIMEOUT_MS,
    `launching ${engine}`,
  )
  const version = (await browser.version()).replace(/^[^/]*\//, '')
  // Chromium asks before a page reads the clipboard: granted for every origin (CDP's grant without one), for as
  // long as the session that granted it stays attached (a detached one takes its grants back). Firefox lets a page
  // read, without its paste prompt, text its own origin wrote.
  if (clipboard && engine === 'chromium')
    await bounded(
      (async () => {
        const session = await browser.target().createCDPSession()
        await session.send('Browser.grantPermissions', { permissions: ['clipboardReadWrite', 'clipboardSanitizedWrite'] })
      })(),
      DEFAULT_TIMEOUT_MS,
      'chromium: the clipboard granted',
    )
  const pageErrors: string[] = []
  return {
    engine,
    version,
    pageErrors,
    async newTab() {
      const page = await bounded(browser.newPage(), DEFAULT_TIMEOUT_MS, `a new ${engine} tab`)
      page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${(e as Error).message ?? String(e)}`))
      return puppeteerTab(page, engine)
    },
    async close() {
      await bounded(browser.close(), 20_000, `closing ${engine}`).catch(() => browser.process()?.kill('SIGKILL'))
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/**
 * Input goes to the tab in front: a tab behind another runs no animation frames in headless Chromium, and a click,
 * which scrolls its element into view first, waited on one for ever.
 */
function puppeteerTab(page: Page, engine: EngineName): Tab {
  const what = (verb: string) => `${engine}: ${verb}`
  return {
    get closed() {
      return page.isClosed()
    },
    async goto(url) {
      await bounded(page.goto(url, { waitUntil: 'load' }), DEFAULT_TIMEOUT_MS, what(`loading ${url}`))
    },
    async reload() {
      await bounded(page.reload({ waitUntil: 'load' }), DEFAULT_TIMEOUT_MS, what('reloading'))
    },
    async evaluate<T>(expression: string, timeoutMs = DEFAULT_TIMEOUT_MS) {
      const text = await bounded(page.evaluate(wrapExpression(expression)), timeoutMs, what(`evaluating ${expression.slice(0, 80)}`))
      return unwrapOutcome<T>(text, expression)
    },
    async click(selector, timeoutMs = 20_000) {
      let stage = 'bringing the tab to the front'
      try {
        await bounded(
          (async () => {
            await page.bringToFront()
            stage = 'waiting for it to be visible'
            const element = await page.waitForSelector(selector, { visible: true, timeout: timeoutMs })
            stage = 'the click (scroll into view, move, press, release)'
            await element!.click()
          })(),
          timeoutMs + 5_000,
          what(`clicking ${selector}`),
        )
      } catch (e) {
        // Whether the page still answers tells a busy page from answers held up on the way (as they were behind
        // the network events when a double CI's load made a click take effect but go unanswered: networkEnabled).
        const t0 = performance.now()
        const answered = await bounded(page.evaluate('1'), 5_000, 'an evaluate')
          .then(() => `the page answered an evaluate in ${Math.round(performance.now() - t0)} ms`)
          .catch(() => 'the page did not answer an evaluate within 5 s either')
        throw Object.assign(e as Error, { message: `${(e as Error).message} (stuck at: ${stage}; ${answered})` })
      }
    },
    async fill(selector, text, timeoutMs = 20_000) {
      await bounded(
        (async () => {
          await page.bringToFront()
          const element = await page.waitForSelector(selector, { visible: true, timeout: timeoutMs })
          // Cleared as a person would (select all, then type over it): the page hears its input events.
          await element!.click({ count: 3 })
          await element!.evaluate((input) => (input as HTMLInputElement).select())
          await element!.type(text)
        })(),
        timeoutMs + 5_000,
        what(`filling ${selector}`),
      )
    },
    async select(selector, label, timeoutMs = 20_000) {
      await bounded(
        (async () => {
          await page.bringToFront()
          const element = await page.waitForSelector(selector, { visible: true, timeout: timeoutMs })
          const value = await page.evaluate(
            `(() => { const o = [...document.querySelector(${JSON.stringify(selector)}).options].find((o) => o.text.trim() === ${JSON.stringify(label)}); return o ? o.value : null })()`,
          )
          if (typeof value !== 'string') throw new Error(`${selector} has no option ${label}`)
          // Puppeteer's select sets it and sends the input and change events, as a person's choice does.
          await element!.select(value)
        })(),
        timeoutMs + 5_000,
        what(`choosing ${label} in ${selector}`),
      )
    },
    async waitFor(expression, timeoutMs = 20_000) {
      await pollUntil(() => this.evaluate(expression, timeoutMs), timeoutMs, what(`waiting for ${expression.slice(0, 80)}`))
    },
    async setSize(width, height) {
      await page.setViewport({ width, height })
    },
    async screenshot(path) {
      await bounded(page.screenshot({ path: path as `${string}.png`, fullPage: true }), DEFAULT_TIMEOUT_MS, what('a screenshot'))
    },
    async close() {
      if (!page.isClosed()) await bounded(page.close(), DEFAULT_TIMEOUT_MS, what('closing a tab'))
    },
  }
}
