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
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { Builder, By, until, type WebDriver } from 'selenium-webdriver'
import { bounded, DEFAULT_TIMEOUT_MS, type EngineBrowser, pollUntil, type Tab, unwrapOutcome, wrapExpression } from './engine.ts'

const MINIBROWSER = process.env.WEBKIT_MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser'

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
async function startDriver(path: string, display: string): Promise<{ url: string; process: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const driver = spawn(path, [`--port=${port}`, '--host=127.0.0.1'], { env: { ...process.env, DISPLAY: display }, stdio: ['ignore', 'ignore', 'pipe'] })
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

export async function launchWebKit(driverPath: string, size: { width: number; height: number }): Promise<EngineBrowser> {
  const xvfb = await startXvfb(size)
  let driverProcess: ChildProcess | undefined
  let driver: WebDriver | undefined
  const stop = () => {
    driverProcess?.kill('SIGKILL')
    xvfb.process.kill('SIGKILL')
  }
  try {
    const started = await startDriver(driverPath, xvfb.display)
    driverProcess = started.process
    driver = await bounded(
      new Builder()
        .usingServer(started.url)
        .withCapabilities({ browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] } })
        .build(),
      DEFAULT_TIMEOUT_MS,
      'a WebKit session',
    )
    await driver.manage().setTimeouts({ script: 10 * DEFAULT_TIMEOUT_MS, pageLoad: DEFAULT_TIMEOUT_MS })
    await driver.manage().window().setRect(size)
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
  let firstTabTaken = false
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
            await element.clear()
            await element.sendKeys(text)
          }),
          timeoutMs + 5_000,
          what(`filling ${selector}`),
        ),
      waitFor: (expression, timeoutMs = 20_000) =>
        pollUntil(() => self.evaluate(expression, timeoutMs), timeoutMs, what(`waiting for ${expression.slice(0, 80)}`)),
      setSize: async (width, height) => {
        await run(handle, () => session.manage().window().setRect({ width, height }))
      },
      screenshot: (path) =>
        bounded(
          run(handle, async () => {
            // The whole page: WebKit's element screenshot of the root takes what lies below the fold too.
            const png = await session.takeScreenshot()
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
            // The last window's close ends WebDriver's session: the browser's close() ends it instead.
            if (others.length === 0) {
              await session.get('about:blank')
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
      // The session opens with one window: the first tab is that one.
      if (!firstTabTaken) {
        firstTabTaken = true
        return tab(current)
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
