/**
 * WebKitGTK (Safari's engine as Linux has it) over WebDriver: Debian's WebKitWebDriver starts MiniBrowser, which
 * needs a display, so each launch has its own Xvfb (it picks a free display and says which on a file descriptor).
 * WebKitWebDriver speaks classic WebDriver only (no BiDi: a session asking for webSocketUrl is refused), through
 * selenium-webdriver. One session is one profile; its tabs are windows of the session.
 *
 * Classic WebDriver runs one command at a time per session, and a script holds the session until it answers: the
 * commands of this browser's tabs go through one queue, so a long evaluate in one tab delays the others' commands.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Builder, By, Key, until, type WebDriver, type WebElement } from 'selenium-webdriver'
import { bounded, DEFAULT_TIMEOUT_MS, type EngineBrowser, pollUntil, type Tab, unwrapOutcome, wrapExpression } from './engine.ts'

const MINIBROWSER = process.env.WEBKIT_MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser'

/**
 * MiniBrowser's bar of buttons above the page keeps its window at least 447 px wide: a phone's 390 px viewport
 * could not be had. GTK reads this style sheet (under XDG_CONFIG_HOME) and lets the buttons shrink.
 */
const NARROW_WINDOW_CSS = 'button { min-width: 0; padding-left: 0; padding-right: 0; }\n'

/**
 * The X screen: WebKitGTK paints a window where it lies on the screen (what lies beyond it comes out black), and a
 * whole-page screenshot makes the window as tall as the page. Xvfb's memory for it is only touched where painted.
 */
const SCREEN = { width: 1920, height: 8192 }

/** An Xvfb of its own; resolves with its display (":N") once it accepts clients. */
async function startXvfb(size: { width: number; height: number }): Promise<{ display: string; process: ChildProcess }> {
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', `${size.width}x${size.height}x24`, '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  })
  let errors = ''
  xvfb.stderr!.on('data', (c: Buffer) => (errors += c.toString()))
  const display = await bounded(
    new Promise<string>((resolve, reject) => {
      let said = ''
      const displayFd = xvfb.stdio[3] as NodeJS.ReadableStream
      displayFd.on('data', (c: Buffer) => {
        said += c.toString()
        if (said.includes('\n')) resolve(`:${said.trim()}`)
      })
      xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it had a display: ${errors}`)))
    }),
    20_000,
    'starting Xvfb',
  ).catch((e: unknown) => {
    xvfb.kill('SIGKILL')
    throw e
  })
  return { display, process: xvfb }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** WebKitWebDriver on a free port; resolves with its URL once /status answers. */
async function startDriver(path: string, display: string, configHome: string): Promise<{ url: string; process: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const driver = spawn(path, [`--port=${port}`, '--host=127.0.0.1'], {
      env: { ...process.env, DISPLAY: display, XDG_CONFIG_HOME: configHome },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let errors = ''
    driver.stderr!.on('data', (c: Buffer) => (errors += c.toString()))
    const url = `http://127.0.0.1:${port}`
    try {
      await pollUntil(
        async () => {
          if (driver.exitCode !== null) throw new Error(`WebKitWebDriver exited (${driver.exitCode}): ${errors}`)
          return (await fetch(`${url}/status`)).ok
        },
        20_000,
        'WebKitWebDriver answering /status',
      )
      return { url, process: driver }
    } catch (e) {
      driver.kill('SIGKILL')
      // Another process took the port between our look and its listen: try another.
      if (attempt >= 3) throw e
    }
  }
}

/**
 * Sizes the window so that its page has `width`×`height` CSS pixels (the window has MiniBrowser's bar above the
 * page), and waits until the page has that size: WebKit resizes the page a moment after the window.
 */
async function fitViewport(session: WebDriver, width: number, height: number): Promise<void> {
  const measure = () => session.executeScript('return [innerWidth, innerHeight, outerWidth, outerHeight]') as Promise<[number, number, number, number]>
  const [innerWidth, innerHeight, outerWidth, outerHeight] = await measure()
  await session
    .manage()
    .window()
    .setRect({ width: width + outerWidth - innerWidth, height: height + outerHeight - innerHeight })
  await pollUntil(
    async () => {
      const [w, h] = await measure()
      return w === width && h === height
    },
    5_000,
    `webkit: a page of ${width}×${height}`,
  )
}

export async function launchWebKit(driverPath: string, size: { width: number; height: number }, { clipboard }: { clipboard: boolean }): Promise<EngineBrowser> {
  const screen = { width: Math.max(SCREEN.width, size.width), height: SCREEN.height }
  const xvfb = await startXvfb(screen)
  const configHome = mkdtempSync(join(tmpdir(), 'sluice-webkit-gtk-'))
  mkdirSync(join(configHome, 'gtk-3.0'))
  writeFileSync(join(configHome, 'gtk-3.0', 'gtk.css'), NARROW_WINDOW_CSS)
  let driverProcess: ChildProcess | undefined
  let driver: WebDriver | undefined
  const stop = () => {
    driverProcess?.kill('SIGKILL')
    xvfb.process.kill('SIGKILL')
    rmSync(configHome, { recursive: true, force: true })
  }
  try {
    const started = await startDriver(driverPath, xvfb.display, configHome)
    driverProcess = started.process
    // A page may read the clipboard without the paste menu WebKit shows a person (WebKitSettings' own name).
    const args = ['--automation', ...(clipboard ? ['--javascript-can-access-clipboard=true'] : [])]
    driver = await bounded(
      new Builder()
        .usingServer(started.url)
        .withCapabilities({ browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: MINIBROWSER, args } })
        .build(),
      DEFAULT_TIMEOUT_MS,
      'a WebKit session',
    )
    await driver.manage().setTimeouts({ script: 10 * DEFAULT_TIMEOUT_MS, pageLoad: DEFAULT_TIMEOUT_MS })
    await fitViewport(driver, size.width, size.height)
  } catch (e) {
    await driver?.quit().catch(() => {})
    stop()
    throw e
  }
  const session = driver
  const capabilities = await session.getCapabilities()
  const version = String(capabilities.get('browserVersion'))
  const pageErrors: string[] = []

  // One command at a time, each on its own window.
  let queue: Promise<unknown> = Promise.resolve()
  let current = await session.getWindowHandle()
  /**
   * A window no tab holds, which the next new tab takes: the one the session opens with, and the last one a tab
   * closed (its page gone to about:blank). A tab WebKitGTK opens beside it stays behind it, hidden.
   */
  let spare: string | undefined = current
  const run = <T>(handle: string, work: () => Promise<T>): Promise<T> => {
    const next = queue.then(async () => {
      if (current !== handle) {
        await session.switchTo().window(handle)
        current = handle
      }
      return work()
    })
    queue = next.catch(() => {})
    return next
  }

  const tab = (handle: string): Tab => {
    let closed = false
    const what = (verb: string) => `webkit: ${verb}`
    // Uncaught errors, collected in the page once it has loaded (WebDriver classic has no event for them).
    const watchErrors = () =>
      session.executeScript(
        `if (!window.__engineErrors) { window.__engineErrors = []; addEventListener('error', (e) => __engineErrors.push(String(e.message))); addEventListener('unhandledrejection', (e) => __engineErrors.push(String(e.reason && e.reason.message || e.reason))) }`,
      )
    const collectErrors = async () => {
      const seen = (await session.executeScript('const e = window.__engineErrors || []; window.__engineErrors = []; return e').catch(() => [])) as string[]
      const url = await session.getCurrentUrl().catch(() => '?')
      for (const message of seen) pageErrors.push(`${url}: ${message}`)
    }
    const self: Tab = {
      get closed() {
        return closed
      },
      goto: (url) =>
        bounded(
          run(handle, async () => {
            await collectErrors()
            await session.get(url)
            await watchErrors()
          }),
          DEFAULT_TIMEOUT_MS,
          what(`loading ${url}`),
        ),
      reload: () =>
        bounded(
          run(handle, async () => {
            await collectErrors()
            await session.navigate().refresh()
            await watchErrors()
          }),
          DEFAULT_TIMEOUT_MS,
          what('reloading'),
        ),
      async evaluate<T>(expression: string, timeoutMs = DEFAULT_TIMEOUT_MS) {
        const script = `const done = arguments[arguments.length - 1]; ${wrapExpression(expression)}.then(done)`
        const text = await bounded(
          run(handle, () => session.executeAsyncScript(script)),
          timeoutMs,
          what(`evaluating ${expression.slice(0, 80)}`),
        )
        return unwrapOutcome<T>(text, expression)
      },
      click: (selector, timeoutMs = 20_000) =>
        bounded(
          run(handle, async () => {
            const element = await session.wait(until.elementLocated(By.css(selector)), timeoutMs)
            await session.wait(until.elementIsVisible(element), timeoutMs)
            await session.wait(until.elementIsEnabled(element), timeoutMs)
            await element.click()
          }),
          timeoutMs + 5_000,
          what(`clicking ${selector}`),
        ),
      fill: (selector, text, timeoutMs = 20_000) =>
        bounded(
          run(handle, async () => {
            const element = await session.wait(until.elementLocated(By.css(selector)), timeoutMs)
            await session.wait(until.elementIsVisible(element), timeoutMs)
            // Cleared as a person clears it (select all, delete), not with WebDriver's clear: that empties the
            // input without an input event, so a page that keeps the input's value in its state (Preact, React)
            // puts the old value back at its next render, and the text typed then lands after it.
            await element.sendKeys(Key.chord(Key.CONTROL, 'a'), Key.BACK_SPACE)
            if ((await element.getAttribute('value')) !== '') throw new Error(`${selector} kept its value after select all and delete`)
            await element.sendKeys(text)
          }),
          timeoutMs + 5_000,
          what(`filling ${selector}`),
        ),
      select: (selector, label, timeoutMs = 20_000) =>
        bounded(
          run(handle, async () => {
            const element = await session.wait(until.elementLocated(By.css(selector)), timeoutMs)
            await session.wait(until.elementIsVisible(element), timeoutMs)
            const option = (await session.executeScript(
              'return [...arguments[0].options].find((o) => o.text.trim() === arguments[1]) || null',
              element,
              label,
            )) as WebElement | null
            if (!option) throw new Error(`${selector} has no option ${label}`)
            // WebDriver's click on an option chooses it, with the input and change events, without the popup.
            await option.click()
          }),
          timeoutMs + 5_000,
          what(`choosing ${label} in ${selector}`),
        ),
      waitFor: (expression, timeoutMs = 20_000) =>
        pollUntil(() => self.evaluate(expression, timeoutMs), timeoutMs, what(`waiting for ${expression.slice(0, 80)}`)),
      setSize: (width, height) =>
        bounded(
          run(handle, () => fitViewport(session, width, height)),
          DEFAULT_TIMEOUT_MS,
          what(`a page of ${width}×${height}`),
        ),
      screenshot: (path) =>
        bounded(
          run(handle, async () => {
            // A tab behind another is not painted, and WebKit's screenshot of it never answers, holding the session.
            if ((await session.executeScript('return document.visibilityState')) === 'hidden')
              throw new Error('WebKitGTK paints only the tab in front: no screenshot of a tab behind another')
            // The whole page, as puppeteer's fullPage has it in Chromium: WebKit's screenshot (the root element's too)
            // takes the viewport only, so the page is made as tall as its content for it (as far as the screen
            // goes), then given its size back.
            const [width, height, contentHeight, bar] = (await session.executeScript(
              'return [innerWidth, innerHeight, document.documentElement.scrollHeight, outerHeight - innerHeight]',
            )) as [number, number, number, number]
            const tall = Math.min(contentHeight, screen.height - bar)
            if (tall > height) {
              await fitViewport(session, width, tall)
              // The page has its new size: the window's new part is painted a frame or two later (black until then).
              await session.executeAsyncScript('const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done()))')
            }
            const png = await session.takeScreenshot().finally(() => (tall > height ? fitViewport(session, width, height) : undefined))
            writeFileSync(path, Buffer.from(png, 'base64'))
          }),
          DEFAULT_TIMEOUT_MS,
          what('a screenshot'),
        ),
      close: async () => {
        if (closed) return
        closed = true
        await bounded(
          run(handle, async () => {
            await collectErrors()
            const others = (await session.getAllWindowHandles()).filter((h) => h !== handle)
            // The last window's close ends WebDriver's session: the browser's close() ends it instead, and the next
            // new tab takes this window, in front, rather than one behind it.
            if (others.length === 0) {
              await session.get('about:blank')
              spare = handle
              return
            }
            await session.close()
            // The session's current window is gone: another one becomes current, as WebDriver requires.
            await session.switchTo().window(others[0]!)
            current = others[0]!
          }),
          DEFAULT_TIMEOUT_MS,
          what('closing a tab'),
        )
      },
    }
    return self
  }

  return {
    engine: 'webkit',
    version,
    pageErrors,
    async newTab() {
      if (spare !== undefined) {
        const handle = spare
        spare = undefined
        return tab(handle)
      }
      const handle = await bounded(
        run(current, async () => {
          await session.switchTo().newWindow('tab')
          current = await session.getWindowHandle()
          return current
        }),
        DEFAULT_TIMEOUT_MS,
        'webkit: a new tab',
      )
      return tab(handle)
    },
    async close() {
      await bounded(session.quit(), 20_000, 'webkit: ending the session').catch(() => {})
      stop()
    },
  }
}
