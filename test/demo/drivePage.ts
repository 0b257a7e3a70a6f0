/**
 * The demo page driven as a person drives it, in each engine a dApp's users have (Chromium, Firefox, WebKit:
 * test/support/engines/, the driver's own clicks, typing and choices): start, fund, open a channel to a headless
 * peer (chosen by name, its address copied), deposit (first more than it holds: the error in TTT), pay directly, pay
 * the second peer through the first, see both in the history, the numbered event log and the route in the picture,
 * reload and find all of it again, set the reveal timeout, withdraw, ask the first peer to pay and see the
 * monitoring service hold its proof and the backup server a copy; open a channel to the second peer and close it;
 * stop the node, ask the first peer to close, close the tab, and while it is closed watch the monitoring service put
 * the page's proof on-chain late in the settle window; reopen the tab, start the node and find both channels settled
 * and the money on-chain. At a phone's width nothing sticks out of its panel. Each step leaves a screenshot in
 * test/e2e/screenshots/ named after the engine (not committed); a failing step says which it was.
 *
 * What is read of the page is read in it (`tab.evaluate` of an expression); what a person does goes through the
 * driver. Each engine's browser is a profile of its own, so its node is its own: the journeys of several engines
 * may run at once against one demo, each looking at its own node's things only.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DemoConfig } from '../../demo/src/config.ts'
import { type EngineName, launchEngine, type Tab } from '../support/engines/engine.ts'

export const screenshots = fileURLToPath(new URL('../e2e/screenshots/', import.meta.url))

export class StepError extends Error {
  override name = 'StepError'
}

/** What an element shows, its whitespace folded: containing a string, or matching a pattern. */
type Shown = string | RegExp

const js = JSON.stringify
const passes = (shown: Shown | undefined) =>
  shown === undefined
    ? '() => true'
    : typeof shown === 'string'
      ? `(t) => t.includes(${js(shown)})`
      : `(t) => new RegExp(${js(shown.source)}, ${js(shown.flags)}).test(t)`
/** In the page: the elements that match `selector`, are rendered (not hidden, not in a closed box) and show `shown`. */
const visible = (selector: string, shown?: Shown) =>
  `[...document.querySelectorAll(${js(selector)})].filter((e) => e.checkVisibility() && (${passes(shown)})(e.textContent.replace(/\\s+/g, ' ').trim()))`
/** In the page: the text of every element that matches `selector`, as `textContent` or as rendered (`innerText`). */
const textsOf = (selector: string, as: 'textContent' | 'innerText' = 'textContent') => `[...document.querySelectorAll(${js(selector)})].map((e) => e.${as})`
/**
 * What Firefox logs when the page's event stream is cut at a reload or a stop: WebDriver BiDi passes Firefox's
 * console reports of it on as errors of the page. Nothing was thrown in the page and a person sees nothing; its
 * EventSource connects again. (A node that stops mid-stream now ends the stream rather than failing it,
 * worker/apiChannel.ts; Firefox still reports the service worker's answer as failed when the reload ends the page
 * that read it: decision 0059.)
 */
const FIREFOX_STREAM_CUT = [
  /^Failed to load ‘’\. A ServiceWorker intercepted the request and encountered an unexpected error\.$/,
  /^The connection to \S+\/api\/v1\/events was interrupted while the page was loading\.$/,
]
/**
 * In the page: keeps the last 20 lines it logged as warnings or errors (the host's notes, such as the watchdog
 * starting a new worker), for a failed step's report. Set after each load: WebDriver classic hears no console.
 */
const KEEP_CONSOLE = `(() => { if (window.__consoleTail) return; const tail = (window.__consoleTail = []); for (const level of ['warn', 'error']) { const original = console[level].bind(console); console[level] = (...args) => { tail.push(new Date().toISOString().slice(11, 23) + ' ' + args.map(String).join(' ').slice(0, 300)); if (tail.length > 20) tail.shift(); original(...args) } } })()`
const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)

/** Runs the steps on `url` in `engine` at a desktop's width (1440×900); some at a phone's (390×844) too. */
export async function drivePage(engine: EngineName, url: string, config: DemoConfig, log: (line: string) => void = () => {}): Promise<void> {
  // This engine's pictures of the last run go: a stale -FAILED.png would mislead.
  mkdirSync(screenshots, { recursive: true })
  for (const file of readdirSync(screenshots)) if (file.startsWith(`${engine}-`)) rmSync(join(screenshots, file))
  // The copied address is read back from the clipboard, as a person pastes it.
  const browser = await launchEngine(engine, { width: 1440, height: 900, clipboard: true })
  log(`${engine} ${browser.version}`)
  let n = 0
  const problems: string[] = []
  try {
    // The tab a person looks at; closed and opened again near the end.
    let tab: Tab = await browser.newTab()
    const picture = (name: string) => join(screenshots, `${engine}-${String(n).padStart(2, '0')}-${name}.png`)

    /** Waits until an element that matches `selector` is shown with `shown`; else says what the page shows there. */
    const shows = async (selector: string, shown?: Shown, timeoutMs = 30_000) => {
      try {
        await tab.waitFor(`${visible(selector, shown)}.length > 0`, timeoutMs)
      } catch (e) {
        const there = await tab.evaluate<string[]>(textsOf(selector), 5_000).catch(() => [])
        throw new Error(
          `${selector}${shown === undefined ? '' : ` showing ${String(shown)}`}: not within ${timeoutMs} ms (${there.length ? `it shows ${js(there.map((t) => t.replace(/\s+/g, ' ').trim()))}` : 'none there'}; ${(e as Error).message.slice(0, 200)})`,
        )
      }
    }
    const gone = (selector: string, timeoutMs = 30_000) => tab.waitFor(`document.querySelector(${js(selector)}) === null`, timeoutMs)
    const textsIn = (selector: string) => tab.evaluate<string[]>(textsOf(selector))
    /** A person's click on the button that matches `selector`, once it shows `label` and can be pressed. */
    const press = async (selector: string, label: string) => {
      await tab.waitFor(`${visible(selector, exactly(label))}.some((e) => !e.disabled)`, 30_000)
      await tab.click(selector)
    }

    /** `stopsNode`: the page's node stops in this step (Firefox reports the event stream it cut). */
    const step = async (name: string, work: () => Promise<void>, { stopsNode = false } = {}) => {
      n++
      const file = picture(name.replaceAll(/[^a-z0-9]+/gi, '-').toLowerCase())
      const started = Date.now()
      try {
        await work()
      } catch (e) {
        if (!tab.closed) await tab.screenshot(file.replace(/\.png$/, '-FAILED.png')).catch(() => {})
        const failures = tab.closed ? [] : await textsIn('.failure').catch(() => [])
        const logged = tab.closed ? [] : await tab.evaluate<string[]>('window.__consoleTail || []', 5_000).catch(() => [])
        throw new StepError(
          `${engine}: step ${n} "${name}" failed: ${(e as Error).message.split('\n')[0]}${failures.length ? `; the page says: ${failures.join(' | ')}` : ''}${logged.length ? `; the page logged: ${logged.join(' | ')}` : ''}`,
        )
      }
      if (!tab.closed) await tab.screenshot(file)
      log(`${engine}: step ${n} ${name}: ${Date.now() - started} ms`)
      // What the engine reported thrown in the page, by the step it came in.
      for (const error of browser.pageErrors.splice(0)) {
        const message = error.replace(/^\S+: /, '')
        if (engine === 'firefox' && stopsNode && FIREFOX_STREAM_CUT.some((cut) => cut.test(message))) continue
        problems.push(`${engine}: step ${n}: page error: ${error}`)
      }
    }
    /** A picture more within the current step (named after it by its number). */
    const shot = (name: string) => tab.screenshot(picture(name))
    const [peer1, peer2] = config.peers as [DemoConfig['peers'][number], DemoConfig['peers'][number]]
    const channel = (partner: string) => `[data-testid="channel-${partner}"]`
    const option = (peer: DemoConfig['peers'][number]) => `${peer.name} · ${peer.address.slice(0, 6)}…${peer.address.slice(-4)}`
    const noFailure = async () => {
      const failures = await textsIn('.failure')
      if (failures.length) throw new Error(`the page shows: ${failures.join(' | ')}`)
    }
    const same = (what: string, got: unknown, want: unknown) => {
      if (js(got) !== js(want)) throw new Error(`${what}: ${js(got)}, not ${js(want)}`)
    }
    // The event log: each entry's number (its place in the node's record, newest first), and what it says.
    const eventLog = '[data-testid=event-log]'
    const eventNumbers = async () => (await textsIn(`${eventLog} [data-testid=event-number]`)).map(Number)
    const loggedEvents = async () =>
      (await tab.evaluate<string[]>(textsOf(`${eventLog} [data-testid=event]`, 'innerText'))).map((t) => t.replace(/\s+/g, ' ').trim())
    /** Waits for the log to hold `count` events, numbered count down to 1 (nothing else in the list counted). */
    const eventsNumbered = async (count: number) => {
      await tab.waitFor(`document.querySelectorAll(${js(`${eventLog} [data-testid=event]`)}).length >= ${count}`, 20_000)
      same(
        'the event log numbers',
        await eventNumbers(),
        Array.from({ length: count }, (_, i) => count - i),
      )
    }
    /** Nothing wider than its panel (a clipped column, a row off the screen), nor the page wider than the screen. */
    const nothingSticksOut = async (width: number) => {
      same('the width of the page', await tab.evaluate('innerWidth'), width)
      const out = await tab.evaluate<string[]>(`(() => {
        const found = []
        if (document.documentElement.scrollWidth > window.innerWidth) found.push('the page is ' + document.documentElement.scrollWidth + ' px wide')
        for (const panel of document.querySelectorAll('.panel')) {
          const style = getComputedStyle(panel)
          // Its content box: what sticks into its padding is clipped by a scrolling box inside it, or looks so.
          const edge = panel.getBoundingClientRect().right - Number.parseFloat(style.paddingRight) - Number.parseFloat(style.borderRightWidth)
          for (const el of panel.querySelectorAll('*')) {
            const box = el.getBoundingClientRect()
            if (box.width > 0 && box.right > edge + 0.5) found.push(el.tagName.toLowerCase() + '.' + el.getAttribute('class') + ' in #' + panel.id + ' (' + Math.round(box.right - edge) + ' px)')
          }
        }
        return found
      })()`)
      if (out.length) throw new Error(`at ${width} px: ${out.slice(0, 5).join('; ')}`)
    }
    const keepConsole = () => tab.evaluate(KEEP_CONSOLE)
    const scrollTo = (selector: string) => tab.evaluate(`document.querySelector(${js(selector)}).scrollIntoView({ block: 'nearest' })`)

    await step('start the node', async () => {
      await tab.goto(url)
      await keepConsole()
      await press('[data-testid=start]', 'Start my node')
      await shows('[data-testid=our-address]', undefined, 60_000)
      await shows('[data-testid=node-status]', 'ready', 60_000)
    })
    const address = (await textsIn('[data-testid=our-address]'))[0]!.trim()

    await step('fund it', async () => {
      await press('[data-testid=fund]', 'Fund my node')
      await shows('[data-testid=fund]', 'Fund my node', 60_000)
      await noFailure()
      await shows('[data-testid=balance-TTT]', /^1000$/, 20_000)
    })

    await step('open a channel to peer 1, chosen by name', async () => {
      const partner = 'select[name=open-partner]'
      await tab.select(partner, option(peer1))
      same('the chosen partner', await tab.evaluate(`document.querySelector(${js(partner)}).value`), peer1.address)
      // Its full address, copied: what the clipboard then holds.
      await press(`#channels .peer button[aria-label="copy ${peer1.address}"]`, 'copy')
      await shows(`#channels .peer button[aria-label="copy ${peer1.address}"]`, 'copied', 5_000)
      same('the copied address', await tab.evaluate('navigator.clipboard.readText()'), peer1.address)
      await tab.fill('input[name=open-deposit]', '20')
      await press('[data-testid=open-channel]', 'Open channel')
      await shows(`${channel(peer1.address)} [data-testid=channel-state]`, 'opened', 60_000)
      await shows(`${channel(peer1.address)} .who b`, exactly('Peer 1'))
      await noFailure()
      // channel_opened and our deposit, numbered 2 and 1.
      await eventsNumbered(2)
    })

    await step('deposit more: beyond what it holds, the error in TTT; then 5', async () => {
      const deposit = `${channel(peer1.address)} input[name=deposit-amount]`
      const button = `${channel(peer1.address)} [data-testid=deposit-amount-submit]`
      await tab.fill(deposit, '5000')
      await press(button, 'Deposit')
      const failure = `${channel(peer1.address)} .failure`
      await shows(failure, undefined, 20_000)
      // In TTT; the API's own message (in base units) under it.
      same('the error', (await textsIn(`${failure} .failure-text`))[0], 'Not enough balance to deposit. Available=980 TTT Needed=5000 TTT')
      same(
        "the API's own message",
        (await textsIn(`${failure} .api-message`))[0],
        'the API said 402 INSUFFICIENT_BALANCE: Not enough balance to deposit. Available=980000000000000000000 Needed=5000000000000000000000',
      )
      await tab.fill(deposit, '5')
      await press(button, 'Deposit')
      await shows(`${channel(peer1.address)} [data-testid=our-balance]`, /^25$/, 60_000)
      await noFailure()
    })

    const pay = async (to: DemoConfig['peers'][number], amount: string, identifier: string) => {
      await tab.select('select[name=pay-target]', option(to))
      await tab.fill('input[name=pay-amount]', amount)
      await tab.fill('input[name=pay-identifier]', identifier)
      await press('[data-testid=pay]', 'Pay')
    }
    await step('pay peer 1 directly', async () => {
      await pay(peer1, '2', '101')
      await shows('[data-testid=payment-result]', 'Paid 2 TTT to Peer 1', 60_000)
      await shows(`${channel(peer1.address)} [data-testid=our-balance]`, /^23$/, 20_000)
    })

    await step('pay peer 2 through peer 1', async () => {
      await pay(peer2, '3', '102')
      await shows('[data-testid=payment-result]', /Paid 3 TTT to Peer 2.*You → Peer 1 → Peer 2.*fee 0 TTT/, 60_000)
      // The route the devnet's pathfinding service chose, and what it estimated the route costs (docs/decisions/0073).
      await shows('[data-testid=payment-routing]', /Route chosen by the pathfinding service .*You → Peer 1 → Peer 2, estimated fee 0 TTT \(taken\)/, 20_000)
      // The same at a phone's width: the route and its fee fit the payments panel.
      await tab.setSize(390, 844)
      await nothingSticksOut(390)
      await scrollTo('[data-testid=payment-routing]')
      await shot('the-route-at-a-phone-s-width')
      await tab.setSize(1440, 900)
    })

    const checkHistoryAndRoute = async () => {
      await shows('[data-testid=history-row]', /101.*Peer 1|Peer 1.*101/, 20_000)
      await shows('[data-testid=history-row]', /102.*Peer 2|Peer 2.*102/, 20_000)
    }
    const routeDrawn = async () => {
      // The two channels of the route are drawn as the route: ours to peer 1, and peer 1's to peer 2.
      await tab.waitFor(`${visible('[data-testid=network-graph] g[data-route=yes]')}.length >= 2`, 20_000)
      await shows('[data-testid=last-route]', 'Last payment in TTT: You → Peer 1 → Peer 2', 20_000)
    }
    let before: string[] = []
    await step('both in the history, the route in the picture, the event log numbered', async () => {
      await checkHistoryAndRoute()
      await routeDrawn()
      // Opened, our deposit of 20, of 25, two payments sent.
      await eventsNumbered(5)
      before = await loggedEvents()
      if (!/^5 .*payment_sent_success 3 TTT to Peer 2 via Peer 1/.test(before[0]!)) throw new Error(`the newest event: ${before[0]}`)
    })

    await step(
      'reload: nothing lost',
      async () => {
        await tab.reload()
        await keepConsole()
        await shows('[data-testid=our-address]', address, 60_000)
        await checkHistoryAndRoute()
        await shows(`${channel(peer1.address)} [data-testid=our-balance]`, /^20$/, 20_000)
        // The same events under the same numbers, and the last route, read back from the node.
        await eventsNumbered(5)
        same('the event log after the reload', await loggedEvents(), before)
        await routeDrawn()
      },
      { stopsNode: true },
    )

    await step('set the reveal timeout', async () => {
      await tab.fill(`${channel(peer1.address)} input[name=reveal-timeout]`, '12')
      await press(`${channel(peer1.address)} [data-testid=reveal-timeout-submit]`, 'Set')
      await shows(`${channel(peer1.address)} .hint`, 'reveal timeout 12', 20_000)
      await noFailure()
    })

    await step('withdraw', async () => {
      await tab.fill(`${channel(peer1.address)} input[name=withdraw-amount]`, '4')
      await press(`${channel(peer1.address)} [data-testid=withdraw-amount-submit]`, 'Withdraw')
      await shows(`${channel(peer1.address)} [data-testid=our-balance]`, /^16$/, 60_000)
      await shows(`${channel(peer1.address)} .hint`, 'withdrawn 4 TTT', 20_000)
      await noFailure()
    })

    await step('peer 1 pays you, asked from the page: the monitoring service holds its proof, the backup server a copy', async () => {
      const side = `${channel(peer1.address)} [data-testid=peer-side]`
      await shows(`${side} [data-testid=peer-view]`, 'Peer 1 sees it opened: it could pay you 5 TTT.', 20_000)
      await tab.fill(`${side} input[name=peer-pays]`, '1')
      await press(`${side} [data-testid=peer-pays-submit]`, 'Ask Peer 1')
      await shows(`${channel(peer1.address)} [data-testid=our-balance]`, /^17$/, 20_000)
      await shows(`${side} [data-testid=peer-view]`, 'it could pay you 4 TTT.', 20_000)
      // Its newest proof is held by the devnet's service, which said so: nonce 3 (its confirmation of our withdraw took
      // nonce 1, the payment's LockedTransfer and Unlock 2 and 3); the service's own record says the same.
      await shows('#protection [data-testid=monitoring-state]', 'on 1 SVT offered per request')
      await shows('#protection [data-testid=monitoring-service]', "the devnet's monitoring service")
      await shows('#protection [data-testid=guarded-channel]', "Peer 1 (TTT): newest proof (nonce 3) held by the devnet's monitoring service since", 30_000)
      await shows(
        '#protection [data-testid=service-channel]',
        /^TTT channel #\d+ with Peer 1: holds your newest proof of Peer 1’s payments \(nonce 3\) since/,
        20_000,
      )
      // The backup server holds a copy, up to date, and the panel says what it can and cannot do here.
      await shows('#protection [data-testid=backup-state]', /copy held change \d+, [\d.]+ kB, acknowledged at .* · up to date/, 20_000)
      await shows('#protection [data-testid=backup-words]', 'nobody can open the copy')
      await noFailure()
    })

    /** The panel of what guards the node sits right under "Your node", on a wide screen and on a phone. */
    const protectionUnderNode = async () => {
      type Box = { x: number; y: number; width: number; height: number }
      const [node, protection] = await tab.evaluate<[Box | null, Box | null]>(
        `['#node', '#protection'].map((s) => { const e = document.querySelector(s); if (!e) return null; const b = e.getBoundingClientRect(); return { x: b.x, y: b.y, width: b.width, height: b.height } })`,
      )
      if (!node || !protection || Math.abs(protection.x - node.x) > 1 || protection.y < node.y + node.height || protection.y > node.y + node.height + 40)
        throw new Error(`"While you are away" is not right under "Your node": ${js({ node, protection })}`)
    }

    await step('what guards the node, at a phone’s width', async () => {
      await protectionUnderNode()
      await tab.setSize(390, 844)
      await protectionUnderNode()
      await nothingSticksOut(390)
      await scrollTo('#protection')
    })

    // Its settle window runs beside peer 1's below: both end within seconds of each other.
    await step('open a channel to peer 2 and close it yourself', async () => {
      await tab.setSize(1440, 900)
      await nothingSticksOut(1440)
      await tab.select('select[name=open-partner]', option(peer2))
      await tab.fill('input[name=open-deposit]', '5')
      await press('[data-testid=open-channel]', 'Open channel')
      await shows(`${channel(peer2.address)} [data-testid=channel-state]`, 'opened', 60_000)
      await press(`${channel(peer2.address)} [data-testid=close-channel]`, 'Close channel')
      await shows(`${channel(peer2.address)} [data-testid=channel-state]`, 'closed', 60_000)
      await shows(`${channel(peer2.address)} [data-testid=settle-countdown]`, /settles in \d+ blocks/, 20_000)
      await noFailure()
    })

    // The others' view of each channel while the node is stopped, by its head: "Peer 1 · TTT channel #12".
    const awayChannel = (peer: DemoConfig['peers'][number]) => `#away [data-testid=away-channel][data-peer="${peer.address}"]`
    const serviceOnPeer1 = '[data-testid=service-channel]'

    await step(
      'stop your node: what the others see while it is away',
      async () => {
        await press('[data-testid=stop-node]', 'Stop the node')
        await shows('[data-testid=start]', undefined, 20_000)
        await shows(awayChannel(peer1), /^Peer 1 · TTT channel #\d+: Peer 1 sees it opened, and could pay you 4 TTT/, 20_000)
        await shows(awayChannel(peer2), /^Peer 2 · TTT channel #\d+: Peer 2 sees it closed; closed in block \d+; its settle window ends at block \d+/)
        await shows(serviceOnPeer1, /^TTT channel #\d+ with Peer 1: holds your newest proof of Peer 1’s payments \(nonce 3\)/)
        await noFailure()
      },
      { stopsNode: true },
    )

    await step('peer 1 closes the channel while your node is stopped', async () => {
      // Its close carries our payments to it (our proof it holds), nothing of its payment to us.
      await press(`${awayChannel(peer1)} [data-testid=ask-peer-to-close]`, 'Ask Peer 1 to close this channel')
      await shows(awayChannel(peer1), /Peer 1 sees it closed; closed in block \d+; its settle window ends at block \d+/, 60_000)
      // The service has its duty, and waits for the block the contract allows it.
      await shows(
        '#away [data-monitor=due]',
        /Peer 1 closed it in block \d+; it puts your proof on-chain once the contract lets it: waiting for block \d+/,
        20_000,
      )
      await noFailure()
      // The same at a phone's width.
      await tab.setSize(390, 844)
      await nothingSticksOut(390)
      await shot('what-the-others-see-at-a-phone-s-width')
      await tab.setSize(1440, 900)
    })

    await step('close the tab: the monitoring service puts your proof on-chain late in the window', async () => {
      const closedAt = Date.now()
      await tab.close()
      // Watched as the page watches it: the service's own API, through the demo's server.
      const called = async () => {
        const answer = await fetch(new URL(`${config.monitor.via}/monitor_calls`, url))
        const calls = (await answer.json()) as { non_closing_participant: string; status: string; nonce?: string; block_number?: string }[]
        return calls.find((c) => c.non_closing_participant.toLowerCase() === address.toLowerCase())
      }
      for (;;) {
        const call = await called()
        if (call?.status === 'done') {
          same('the proof the service put on-chain', call.nonce, '3')
          log(`${engine}:   the service's monitor call was mined in block ${call.block_number}, ${Date.now() - closedAt} ms after the tab closed`)
          break
        }
        if (Date.now() - closedAt > 90_000) throw new Error(`the service has not acted: ${js(call)}`)
        await new Promise((r) => setTimeout(r, 500))
      }
    })

    await step('reopen the tab: what the service did, then your node settles and the money is on-chain', async () => {
      tab = await browser.newTab()
      await tab.goto(url)
      await keepConsole()
      await shows('#away [data-monitor=done]', /it put your proof \(nonce 3\) on-chain in block \d+/, 20_000)
      await shot('what-the-service-did-before-the-node-starts')
      await press('[data-testid=start]', 'Start my node')
      await shows('[data-testid=node-status]', 'ready', 60_000)
      // Both windows end: peer 2 settles the channel we closed, our node the one peer 1 closed; both leave the list.
      await shows(`${eventLog} [data-testid=event]`, /channel_settled TTT channel #\d+ with Peer 1/, 60_000)
      await shows(`${eventLog} [data-testid=event]`, /channel_settled TTT channel #\d+ with Peer 2/, 60_000)
      await gone(channel(peer1.address))
      await gone(channel(peer2.address))
      // 1000 minted, 25 and 5 deposited, 4 withdrawn; back: 5 from peer 2's channel and 17 from peer 1's, the 1 TTT
      // peer 1 paid us included (without the service: 16).
      await shows('[data-testid=balance-TTT]', /^996$/, 20_000)
      await shows(serviceOnPeer1, /^TTT channel #\d+ with Peer 1: .*Peer 1 closed it in block \d+; it put your proof \(nonce 3\) on-chain in block \d+/, 20_000)
      await noFailure()
      // Nothing went wrong in the background as the node caught up (the events panel lists what did).
      const background = await textsIn('#events .problems li')
      if (background.length) throw new Error(`errors in the background: ${background.join(' | ')}`)
    })

    await step('at a phone’s width', async () => {
      await tab.setSize(390, 844)
      await scrollTo('[data-testid=history-row]')
      await nothingSticksOut(390)
    })
    await tab.close()
    for (const error of browser.pageErrors.splice(0)) problems.push(`${engine}: at the end: page error: ${error}`)
    if (problems.length) throw new StepError(problems.join('\n'))
  } finally {
    await browser.close()
  }
}
