/**
 * The demo page driven as a person drives it (Playwright, Debian's Chromium, headless): start, fund, open a channel
 * to a headless peer (chosen by name, its address copied), deposit (first more than it holds: the error in TTT),
 * pay directly, pay the second peer through the first, see both in the history, the numbered event log and the
 * route in the picture, reload and find all of it again, set the reveal timeout, withdraw, ask the first peer to pay
 * and see the monitoring service hold its proof and the backup server a copy; open a channel to the second peer and
 * close it; stop the node, ask the first peer to close, close the tab, and while it is closed watch the monitoring
 * service put the page's proof on-chain late in the settle window; reopen the tab, start the node and find both
 * channels settled and the money on-chain. At a phone's width nothing sticks out of its panel. Each step leaves a
 * screenshot in test/e2e/screenshots/ (not committed); a failing step says which it was.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import type { DemoConfig } from '../../demo/src/config.ts'

export const screenshots = fileURLToPath(new URL('../e2e/screenshots/', import.meta.url))

export class StepError extends Error {
  override name = 'StepError'
}

/** Runs the steps on `url` at a desktop's width (1440×900); the last ones at a phone's (390×844) too. */
export async function drivePage(url: string, config: DemoConfig, log: (line: string) => void = () => {}): Promise<void> {
  // Last run's pictures go: a stale -FAILED.png would mislead.
  rmSync(screenshots, { recursive: true, force: true })
  mkdirSync(screenshots, { recursive: true })
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] })
  let n = 0
  const problems: string[] = []
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] })
    const openTab = async () => {
      const tab = await context.newPage()
      tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
      return tab
    }
    // The tab a person looks at; closed and opened again near the end.
    let page = await openTab()
    const step = async (name: string, work: () => Promise<void>) => {
      const file = join(screenshots, `${String(++n).padStart(2, '0')}-${name.replaceAll(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`)
      const started = Date.now()
      try {
        await work()
      } catch (e) {
        if (!page.isClosed()) await page.screenshot({ path: file.replace(/\.png$/, '-FAILED.png'), fullPage: true }).catch(() => {})
        const failures = await page
          .locator('.failure')
          .allTextContents()
          .catch(() => [])
        throw new StepError(
          `step ${n} "${name}" failed: ${(e as Error).message.split('\n')[0]}${failures.length ? `; the page says: ${failures.join(' | ')}` : ''}`,
        )
      }
      if (!page.isClosed()) await page.screenshot({ path: file, fullPage: true })
      log(`step ${n} ${name}: ${Date.now() - started} ms`)
    }
    /** A picture more within the current step (named after it by its number). */
    const shot = (name: string) => page.screenshot({ path: join(screenshots, `${String(n).padStart(2, '0')}-${name}.png`), fullPage: true })
    const [peer1, peer2] = config.peers as [DemoConfig['peers'][number], DemoConfig['peers'][number]]
    const channel = (partner: string) => page.locator(`[data-testid="channel-${partner}"]`)
    const noFailure = async () => {
      const failures = await page.locator('.failure').allTextContents()
      if (failures.length) throw new Error(`the page shows: ${failures.join(' | ')}`)
    }
    const same = (what: string, got: unknown, want: unknown) => {
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${what}: ${JSON.stringify(got)}, not ${JSON.stringify(want)}`)
    }
    // The event log: each entry's number (its place in the node's record, newest first), and what it says.
    const eventLog = () => page.getByTestId('event-log')
    const eventNumbers = async () => (await eventLog().getByTestId('event-number').allTextContents()).map(Number)
    const loggedEvents = async () => (await eventLog().getByTestId('event').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim())
    /** Waits for the log to hold `count` events, numbered count down to 1 (nothing else in the list counted). */
    const eventsNumbered = async (count: number) => {
      await eventLog()
        .getByTestId('event')
        .nth(count - 1)
        .waitFor({ timeout: 20_000 })
      same(
        'the event log numbers',
        await eventNumbers(),
        Array.from({ length: count }, (_, i) => count - i),
      )
    }
    /** Nothing wider than its panel (a clipped column, a row off the screen), nor the page wider than the screen. */
    const nothingSticksOut = async (width: number) => {
      const out = await page.evaluate(() => {
        const found: string[] = []
        if (document.documentElement.scrollWidth > window.innerWidth) found.push(`the page is ${document.documentElement.scrollWidth} px wide`)
        for (const panel of document.querySelectorAll('.panel')) {
          const style = getComputedStyle(panel)
          // Its content box: what sticks into its padding is clipped by a scrolling box inside it, or looks so.
          const edge = panel.getBoundingClientRect().right - Number.parseFloat(style.paddingRight) - Number.parseFloat(style.borderRightWidth)
          for (const el of panel.querySelectorAll('*')) {
            const box = el.getBoundingClientRect()
            if (box.width > 0 && box.right > edge + 0.5) found.push(`${el.tagName.toLowerCase()}.${el.className} in #${panel.id}`)
          }
        }
        return found
      })
      if (out.length) throw new Error(`at ${width} px: ${out.slice(0, 5).join('; ')}`)
    }

    await step('start the node', async () => {
      await page.goto(url)
      await page.getByTestId('start').click()
      await page.getByTestId('our-address').waitFor({ timeout: 60_000 })
      await page.getByTestId('node-status').filter({ hasText: 'ready' }).waitFor({ timeout: 60_000 })
    })
    const address = (await page.getByTestId('our-address').textContent())!.trim()

    await step('fund it', async () => {
      await page.getByTestId('fund').click()
      await page.getByTestId('fund').filter({ hasText: 'Fund my node' }).waitFor({ timeout: 60_000 })
      await noFailure()
      await page
        .getByTestId('balance-TTT')
        .filter({ hasText: /^1000$/ })
        .waitFor({ timeout: 20_000 })
    })

    await step('open a channel to peer 1, chosen by name', async () => {
      const partner = page.locator('select[name=open-partner]')
      await partner.selectOption({ label: `Peer 1 · ${peer1.address.slice(0, 6)}…${peer1.address.slice(-4)}` })
      same('the chosen partner', await partner.inputValue(), peer1.address)
      // Its full address, copied.
      await page
        .locator('#channels .peer')
        .getByRole('button', { name: `copy ${peer1.address}` })
        .click()
      same('the copied address', await page.evaluate(() => navigator.clipboard.readText()), peer1.address)
      await page.locator('input[name=open-deposit]').fill('20')
      await page.getByRole('button', { name: 'Open channel' }).click()
      await channel(peer1.address).getByTestId('channel-state').filter({ hasText: 'opened' }).waitFor({ timeout: 60_000 })
      await channel(peer1.address).getByText('Peer 1', { exact: true }).waitFor()
      await noFailure()
      // channel_opened and our deposit, numbered 2 and 1.
      await eventsNumbered(2)
    })

    await step('deposit more: beyond what it holds, the error in TTT; then 5', async () => {
      const deposit = channel(peer1.address).getByLabel('Deposit more', { exact: true })
      await deposit.fill('5000')
      await channel(peer1.address).getByRole('button', { name: 'Deposit', exact: true }).click()
      const failure = channel(peer1.address).locator('.failure')
      await failure.waitFor({ timeout: 20_000 })
      // In TTT; the API's own message (in base units) under it.
      same('the error', await failure.locator('.failure-text').textContent(), 'Not enough balance to deposit. Available=980 TTT Needed=5000 TTT')
      same(
        "the API's own message",
        await failure.locator('.api-message').textContent(),
        'the API said 402 INSUFFICIENT_BALANCE: Not enough balance to deposit. Available=980000000000000000000 Needed=5000000000000000000000',
      )
      await deposit.fill('5')
      await channel(peer1.address).getByRole('button', { name: 'Deposit', exact: true }).click()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^25$/ }).waitFor({ timeout: 60_000 })
      await noFailure()
    })

    await step('pay peer 1 directly', async () => {
      await page.locator('select[name=pay-target]').selectOption(peer1.address)
      await page.locator('input[name=pay-amount]').fill('2')
      await page.locator('input[name=pay-identifier]').fill('101')
      await page.getByRole('button', { name: 'Pay', exact: true }).click()
      await page.getByTestId('payment-result').filter({ hasText: 'Paid 2 TTT to Peer 1' }).waitFor({ timeout: 60_000 })
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^23$/ }).waitFor({ timeout: 20_000 })
    })

    await step('pay peer 2 through peer 1', async () => {
      await page.locator('select[name=pay-target]').selectOption(peer2.address)
      await page.locator('input[name=pay-amount]').fill('3')
      await page.locator('input[name=pay-identifier]').fill('102')
      await page.getByRole('button', { name: 'Pay', exact: true }).click()
      await page
        .getByTestId('payment-result')
        .filter({ hasText: 'Paid 3 TTT to Peer 2' })
        .filter({ hasText: 'You → Peer 1 → Peer 2' })
        .waitFor({ timeout: 60_000 })
    })

    const checkHistoryAndRoute = async () => {
      const rows = page.getByTestId('history-row')
      await rows.filter({ hasText: '101' }).filter({ hasText: 'Peer 1' }).waitFor({ timeout: 20_000 })
      await rows.filter({ hasText: '102' }).filter({ hasText: 'Peer 2' }).waitFor({ timeout: 20_000 })
    }
    const routeDrawn = async () => {
      // The two channels of the route are drawn as the route: ours to peer 1, and peer 1's to peer 2.
      await page.locator('[data-testid=network-graph] g[data-route=yes]').nth(1).waitFor({ timeout: 20_000 })
      await page.getByTestId('last-route').filter({ hasText: 'Last payment in TTT: You → Peer 1 → Peer 2' }).waitFor({ timeout: 20_000 })
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

    await step('reload: nothing lost', async () => {
      await page.reload()
      await page.getByTestId('our-address').filter({ hasText: address }).waitFor({ timeout: 60_000 })
      await checkHistoryAndRoute()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^20$/ }).waitFor({ timeout: 20_000 })
      // The same events under the same numbers, and the last route, read back from the node.
      await eventsNumbered(5)
      same('the event log after the reload', await loggedEvents(), before)
      await routeDrawn()
    })

    await step('set the reveal timeout', async () => {
      await channel(peer1.address).getByLabel('Reveal timeout', { exact: true }).fill('12')
      await channel(peer1.address).getByRole('button', { name: 'Set', exact: true }).click()
      await channel(peer1.address).getByText('reveal timeout 12').waitFor({ timeout: 20_000 })
      await noFailure()
    })

    await step('withdraw', async () => {
      await channel(peer1.address).getByLabel('Withdraw', { exact: true }).fill('4')
      await channel(peer1.address).getByRole('button', { name: 'Withdraw', exact: true }).click()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^16$/ }).waitFor({ timeout: 60_000 })
      await channel(peer1.address).getByText('withdrawn 4 TTT').waitFor({ timeout: 20_000 })
      await noFailure()
    })

    await step('peer 1 pays you, asked from the page: the monitoring service holds its proof, the backup server a copy', async () => {
      const side = channel(peer1.address).getByTestId('peer-side')
      await side.getByTestId('peer-view').filter({ hasText: 'Peer 1 sees it opened: it could pay you 5 TTT.' }).waitFor({ timeout: 20_000 })
      await side.getByLabel('Peer 1 pays you').fill('1')
      await side.getByRole('button', { name: 'Ask Peer 1', exact: true }).click()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^17$/ }).waitFor({ timeout: 20_000 })
      await side.getByTestId('peer-view').filter({ hasText: 'it could pay you 4 TTT.' }).waitFor({ timeout: 20_000 })
      // Its newest proof is held by the devnet's service, which said so: nonce 3 (its confirmation of our withdraw took
      // nonce 1, the payment's LockedTransfer and Unlock 2 and 3); the service's own record says the same.
      const protection = page.locator('#protection')
      await protection.getByTestId('monitoring-state').filter({ hasText: 'on 1 SVT offered per request' }).waitFor()
      await protection.getByTestId('monitoring-service').filter({ hasText: "the devnet's monitoring service" }).waitFor()
      await protection
        .getByTestId('guarded-channel')
        .filter({ hasText: "Peer 1 (TTT): newest proof (nonce 3) held by the devnet's monitoring service since" })
        .waitFor({ timeout: 30_000 })
      await protection
        .getByTestId('service-channel')
        .filter({ hasText: /^TTT channel #\d+ with Peer 1: holds your newest proof of Peer 1’s payments \(nonce 3\) since/ })
        .waitFor({ timeout: 20_000 })
      // The backup server holds a copy, up to date, and the panel says what it can and cannot do here.
      await protection
        .getByTestId('backup-state')
        .filter({ hasText: /copy held change \d+, [\d.]+ kB, acknowledged at .* · up to date/ })
        .waitFor({ timeout: 20_000 })
      await protection.getByTestId('backup-words').filter({ hasText: 'nobody can open the copy' }).waitFor()
      await noFailure()
    })

    /** The panel of what guards the node sits right under "Your node", on a wide screen and on a phone. */
    const protectionUnderNode = async () => {
      const [node, protection] = await Promise.all([page.locator('#node').boundingBox(), page.locator('#protection').boundingBox()])
      if (!node || !protection || Math.abs(protection.x - node.x) > 1 || protection.y < node.y + node.height || protection.y > node.y + node.height + 40)
        throw new Error(`"While you are away" is not right under "Your node": ${JSON.stringify({ node, protection })}`)
    }

    await step('what guards the node, at a phone’s width', async () => {
      await protectionUnderNode()
      await page.setViewportSize({ width: 390, height: 844 })
      await protectionUnderNode()
      await nothingSticksOut(390)
      await page.locator('#protection').scrollIntoViewIfNeeded()
    })

    // Its settle window runs beside peer 1's below: both end within seconds of each other.
    await step('open a channel to peer 2 and close it yourself', async () => {
      await page.setViewportSize({ width: 1440, height: 900 })
      await nothingSticksOut(1440)
      await page.locator('select[name=open-partner]').selectOption(peer2.address)
      await page.locator('input[name=open-deposit]').fill('5')
      await page.getByRole('button', { name: 'Open channel' }).click()
      await channel(peer2.address).getByTestId('channel-state').filter({ hasText: 'opened' }).waitFor({ timeout: 60_000 })
      await channel(peer2.address).getByRole('button', { name: 'Close channel' }).click()
      await channel(peer2.address).getByTestId('channel-state').filter({ hasText: 'closed' }).waitFor({ timeout: 60_000 })
      await channel(peer2.address)
        .getByTestId('settle-countdown')
        .filter({ hasText: /settles in \d+ blocks/ })
        .waitFor({ timeout: 20_000 })
      await noFailure()
    })

    const away = () => page.locator('#away')
    const awayChannel = (name: string) =>
      away()
        .getByTestId('away-channel')
        .filter({ hasText: `${name} · TTT channel` })
    const serviceOnPeer1 = () => page.getByTestId('service-channel').filter({ hasText: /^TTT channel #\d+ with Peer 1/ })

    await step('stop your node: what the others see while it is away', async () => {
      await page.getByRole('button', { name: 'Stop the node' }).click()
      await page.getByTestId('start').waitFor({ timeout: 20_000 })
      await awayChannel('Peer 1').filter({ hasText: 'Peer 1 sees it opened, and could pay you 4 TTT' }).waitFor({ timeout: 20_000 })
      await awayChannel('Peer 2')
        .filter({ hasText: /Peer 2 sees it closed; closed in block \d+; its settle window ends at block \d+/ })
        .waitFor()
      await serviceOnPeer1().filter({ hasText: 'holds your newest proof of Peer 1’s payments (nonce 3)' }).waitFor()
      await noFailure()
    })

    await step('peer 1 closes the channel while your node is stopped', async () => {
      // Its close carries our payments to it (our proof it holds), nothing of its payment to us.
      await awayChannel('Peer 1').getByRole('button', { name: 'Ask Peer 1 to close this channel' }).click()
      await awayChannel('Peer 1')
        .filter({ hasText: /Peer 1 sees it closed; closed in block \d+; its settle window ends at block \d+/ })
        .waitFor({ timeout: 60_000 })
      // The service has its duty, and waits for the block the contract allows it.
      await page
        .locator('#away [data-monitor=due]')
        .filter({ hasText: /Peer 1 closed it in block \d+; it puts your proof on-chain once the contract lets it: waiting for block \d+/ })
        .waitFor({ timeout: 20_000 })
      await noFailure()
      // The same at a phone's width.
      await page.setViewportSize({ width: 390, height: 844 })
      await nothingSticksOut(390)
      await shot('what-the-others-see-at-a-phone-s-width')
      await page.setViewportSize({ width: 1440, height: 900 })
    })

    await step('close the tab: the monitoring service puts your proof on-chain late in the window', async () => {
      const closedAt = Date.now()
      await page.close()
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
          log(`  the service's monitor call was mined in block ${call.block_number}, ${Date.now() - closedAt} ms after the tab closed`)
          break
        }
        if (Date.now() - closedAt > 90_000) throw new Error(`the service has not acted: ${JSON.stringify(call)}`)
        await new Promise((r) => setTimeout(r, 500))
      }
    })

    await step('reopen the tab: what the service did, then your node settles and the money is on-chain', async () => {
      page = await openTab()
      await page.goto(url)
      await page
        .locator('#away [data-monitor=done]')
        .filter({ hasText: /it put your proof \(nonce 3\) on-chain in block \d+/ })
        .waitFor({ timeout: 20_000 })
      await shot('what-the-service-did-before-the-node-starts')
      await page.getByTestId('start').click()
      await page.getByTestId('node-status').filter({ hasText: 'ready' }).waitFor({ timeout: 60_000 })
      // Both windows end: peer 2 settles the channel we closed, our node the one peer 1 closed; both leave the list.
      await eventLog()
        .getByTestId('event')
        .filter({ hasText: /channel_settled TTT channel #\d+ with Peer 1/ })
        .waitFor({ timeout: 60_000 })
      await eventLog()
        .getByTestId('event')
        .filter({ hasText: /channel_settled TTT channel #\d+ with Peer 2/ })
        .waitFor({ timeout: 60_000 })
      await channel(peer1.address).waitFor({ state: 'detached', timeout: 30_000 })
      await channel(peer2.address).waitFor({ state: 'detached', timeout: 30_000 })
      // 1000 minted, 25 and 5 deposited, 4 withdrawn; back: 5 from peer 2's channel and 17 from peer 1's, the 1 TTT
      // peer 1 paid us included (without the service: 16).
      await page.getByTestId('balance-TTT').filter({ hasText: /^996$/ }).waitFor({ timeout: 20_000 })
      await serviceOnPeer1()
        .filter({ hasText: /Peer 1 closed it in block \d+; it put your proof \(nonce 3\) on-chain in block \d+/ })
        .waitFor({ timeout: 20_000 })
      await noFailure()
      // Nothing went wrong in the background as the node caught up (the events panel lists what did).
      const background = await page.locator('#events .problems li').allTextContents()
      if (background.length) throw new Error(`errors in the background: ${background.join(' | ')}`)
    })

    await step('at a phone’s width', async () => {
      await page.setViewportSize({ width: 390, height: 844 })
      await page.getByTestId('history-row').first().scrollIntoViewIfNeeded()
      await nothingSticksOut(390)
    })
    if (problems.length) throw new StepError(problems.join('\n'))
  } finally {
    await browser.close()
  }
}
