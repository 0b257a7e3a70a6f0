/**
 * The three browser engines a dApp's users have, driven alike from Node (docs/decisions/0058): Chromium and Firefox
 * over puppeteer-core (CDP and WebDriver BiDi), WebKitGTK over WebDriver with selenium-webdriver under Xvfb, each
 * from Debian's packages. A test or a bench opens tabs and evaluates expressions in them, never a library's own
 * page type, so one test runs in every engine.
 */
import { existsSync } from 'node:fs'
import { withTimeout } from '../../../src/waits.ts'

export const ENGINES = ['chromium', 'firefox', 'webkit'] as const
export type EngineName = (typeof ENGINES)[number]

/** A page in a browser; every call ends with an answer or an error within its bound. */
export interface Tab {
  goto(url: string): Promise<void>
  reload(): Promise<void>
  /**
   * The value of `expression` in the page (awaited when it is a promise), through JSON: a thrown error comes back
   * as an InPageError with its message, name and `code`. A string, not a function: nothing of tsx's output runs
   * in a browser.
   */
  evaluate<T = unknown>(expression: string, timeoutMs?: number): Promise<T>
  /** A real click (the driver's input events) on the first element that matches `selector`, once it is visible. */
  click(selector: string, timeoutMs?: number): Promise<void>
  /** Types `text` into the input that matches `selector`, after clearing it. */
  fill(selector: string, text: string, timeoutMs?: number): Promise<void>
  /**
   * Picks the option whose text is `label` in the `<select>` that matches `selector`, once it is visible: the page
   * hears the input and change events a person's choice makes.
   */
  select(selector: string, label: string, timeoutMs?: number): Promise<void>
  /** Waits until `expression` is truthy in the page. */
  waitFor(expression: string, timeoutMs?: number): Promise<void>
  /** The viewport's size in CSS pixels (innerWidth, innerHeight), as a phone's or a desktop's. */
  setSize(width: number, height: number): Promise<void>
  /** A PNG of the page (the whole page where the engine can, else the viewport). */
  screenshot(path: string): Promise<void>
  close(): Promise<void>
  readonly closed: boolean
}

export interface EngineBrowser {
  readonly engine: EngineName
  /** The engine's version as it reports it (Firefox 153.8.0esr, WebKitGTK 2.50.6, Chromium 156...). */
  readonly version: string
  /** A new tab of the same profile (same origin storage, same service workers). */
  newTab(): Promise<Tab>
  /** Errors the engine reported from its pages (uncaught exceptions), with the tab's URL. */
  readonly pageErrors: string[]
  close(): Promise<void>
}

/** An error thrown in a page, carried back with its code (SluiceError's `code`, a DOMException's name). */
export class InPageError extends Error {
  override name = 'InPageError'
  constructor(
    message: string,
    readonly errorName: string | undefined,
    readonly code: string | undefined,
  ) {
    super(message)
  }
}

export class EngineTimeoutError extends Error {
  override name = 'EngineTimeoutError'
}

/**
 * Debian's Chromium as the tests and benches start it: no calls to Google's hosts on this machine's closed network
 * (vitest's browser project, the harness, the in-page bench).
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
]

const binaries: Record<EngineName, string> = {
  chromium: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  firefox: process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr',
  webkit: process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver',
}

/** The binary the engine needs, and whether it is installed (.ci/run installs all three). */
export function engineBinary(engine: EngineName): { path: string; installed: boolean } {
  const path = binaries[engine]
  return { path, installed: existsSync(path) && (engine !== 'webkit' || existsSync('/usr/bin/Xvfb')) }
}

/** The engines a run covers: all three, or those SLUICE_ENGINES names (comma-separated). */
export function chosenEngines(): EngineName[] {
  const named = process.env.SLUICE_ENGINES?.split(',').map((s) => s.trim())
  if (!named) return [...ENGINES]
  for (const name of named) if (!ENGINES.includes(name as EngineName)) throw new Error(`SLUICE_ENGINES names ${name}; the engines are ${ENGINES.join(', ')}`)
  return named as EngineName[]
}

export type LaunchOptions = {
  /** The viewport's size at the start (1280×800). */
  width?: number
  height?: number
  /**
   * Pages may read the clipboard (`navigator.clipboard.readText()`) without a prompt, so a test reads what a person
   * copied: granted in Chromium, a setting in WebKit; Firefox reads text its own origin wrote without one.
   */
  clipboard?: boolean
  /** Preferences of the profile (Firefox only), e.g. `dom.serviceWorkers.enabled: false` as Firefox has it in a private window. */
  firefoxPrefs?: Record<string, unknown>
  /**
   * A certificate authority (PEM file) the browser trusts besides its own roots, for real: in an NSS database of
   * the launch's own (Chromium and Firefox: test/support/testCa.ts `trustInNss`), no check switched off.
   */
  trustCa?: string
  /**
   * Names the browser resolves to these addresses: Chromium maps each (--host-resolver-rules); Firefox maps them to
   * its loopback (network.dns.localDomains), so every address must be 127.0.0.1 there.
   */
  hosts?: Record<string, string>
  /**
   * WebRTC may offer the machine's own addresses as ICE candidates (Chromium: WebRtcHideLocalIpsWithMdns off; Firefox:
   * media.peerconnection.ice.obfuscate_host_addresses off), as a page with camera access may: two browsers on this
   * machine then connect without a STUN server or mDNS, which the closed network has neither of.
   */
  webrtcHostCandidates?: boolean
}

/** A browser of the engine with a new profile. */
export async function launchEngine(engine: EngineName, options: LaunchOptions = {}): Promise<EngineBrowser> {
  const { path, installed } = engineBinary(engine)
  if (!installed)
    throw new Error(
      `${engine} is not installed (${path}${engine === 'webkit' ? ' and /usr/bin/Xvfb' : ''}): apt-get install ${
        { chromium: 'chromium', firefox: 'firefox-esr', webkit: 'webkit2gtk-driver xvfb' }[engine]
      }`,
    )
  const size = { width: options.width ?? 1280, height: options.height ?? 800 }
  if (options.firefoxPrefs && engine !== 'firefox') throw new Error(`firefoxPrefs are for Firefox, not ${engine}`)
  if ((options.trustCa || options.hosts || options.webrtcHostCandidates) && engine === 'webkit')
    throw new Error('trustCa, hosts and webrtcHostCandidates are for Chromium and Firefox, not webkit')
  const clipboard = options.clipboard ?? false
  if (engine === 'webkit') return (await import('./webkit.ts')).launchWebKit(path, size, { clipboard })
  return (await import('./puppeteer.ts')).launchPuppeteer(engine, path, size, {
    clipboard,
    firefoxPrefs: options.firefoxPrefs ?? {},
    ...(options.trustCa ? { trustCa: options.trustCa } : {}),
    hosts: options.hosts ?? {},
    webrtcHostCandidates: options.webrtcHostCandidates ?? false,
  })
}

/**
 * The expression run in a page, and its outcome as JSON text: `{ ok }` or `{ error }`. Every engine runs this same
 * wrapper, so values and errors come back alike whatever the driver's own serialisation does.
 */
export function wrapExpression(expression: string): string {
  return `(async () => {
  try {
    const value = await (${expression})
    return JSON.stringify({ ok: value === undefined ? null : value })
  } catch (e) {
    return JSON.stringify({ error: { message: String(e && e.message !== undefined ? e.message : e), name: e && e.name, code: e && e.code } })
  }
})()`
}

export function unwrapOutcome<T>(text: unknown, expression: string): T {
  if (typeof text !== 'string') throw new Error(`the page answered ${String(text)} to ${expression.slice(0, 80)}`)
  const outcome = JSON.parse(text) as { ok?: T; error?: { message: string; name?: string; code?: string } }
  if (outcome.error) throw new InPageError(outcome.error.message, outcome.error.name ?? undefined, outcome.error.code ?? undefined)
  return outcome.ok as T
}

/** `work`, or an EngineTimeoutError naming `what` after `ms`. */
export function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return withTimeout(work, ms, () => new EngineTimeoutError(`${what}: no answer within ${ms} ms`))
}

/** Polls `check` until it resolves truthy, or fails after `timeoutMs` with the last error seen. */
export async function pollUntil(check: () => Promise<unknown>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      if (await check()) return
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline)
      throw new EngineTimeoutError(`${what}: not within ${timeoutMs} ms${last ? ` (last: ${(last as Error).message ?? String(last)})` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export const DEFAULT_TIMEOUT_MS = 60_000
