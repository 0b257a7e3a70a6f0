/**
 * The demo page driven as a person drives it (Playwright, Debian's Chromium, headless): start, fund, open a channel
 * to a headless peer, deposit, pay directly, pay the second peer through the first, see both in the history and the
 * route in the picture, reload and find everything, withdraw, close and watch it settle. Each step leaves a
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

/** Runs the steps on `url` at a desktop's width; the last screenshots are taken at a phone's too. */
export async function drivePage(url: string, config: DemoConfig, log: (line: string) => void = () => {}): Promise<void> {
  // Last run's pictures go: a stale -FAILED.png would mislead.
  rmSync(screenshots, { recursive: true, force: true })
  mkdirSync(screenshots, { recursive: true })
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] })
  let n = 0
  const problems: string[] = []
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    const step = async (name: string, work: () => Promise<void>) => {
      const file = join(screenshots, `${String(++n).padStart(2, '0')}-${name.replaceAll(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`)
      const started = Date.now()
      try {
        await work()
      } catch (e) {
        await page.screenshot({ path: file.replace(/\.png$/, '-FAILED.png'), fullPage: true }).catch(() => {})
        const failures = await page
          .locator('.failure')
          .allTextContents()
          .catch(() => [])
        throw new StepError(
          `step ${n} "${name}" failed: ${(e as Error).message.split('\n')[0]}${failures.length ? `; the page says: ${failures.join(' | ')}` : ''}`,
        )
      }
      await page.screenshot({ path: file, fullPage: true })
      log(`step ${n} ${name}: ${Date.now() - started} ms`)
    }
    const [peer1, peer2] = config.peers as [DemoConfig['peers'][number], DemoConfig['peers'][number]]
    const channel = (partner: string) => page.locator(`[data-testid="channel-${partner}"]`)
    const noFailure = async () => {
      const failures = await page.locator('.failure').allTextContents()
      if (failures.length) throw new Error(`the page shows: ${failures.join(' | ')}`)
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

    await step('open a channel to peer 1', async () => {
      await page.locator('input[name=open-partner]').fill(peer1.address)
      await page.locator('input[name=open-deposit]').fill('20')
      await page.getByRole('button', { name: 'Open channel' }).click()
      await channel(peer1.address).getByTestId('channel-state').filter({ hasText: 'opened' }).waitFor({ timeout: 60_000 })
      await noFailure()
    })

    await step('deposit more', async () => {
      await channel(peer1.address).locator('input[name=channel-amount]').fill('5')
      await channel(peer1.address).getByRole('button', { name: 'Deposit' }).click()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^25$/ }).waitFor({ timeout: 60_000 })
    })

    await step('pay peer 1 directly', async () => {
      await page.locator('input[name=pay-target]').fill(peer1.address)
      await page.locator('input[name=pay-amount]').fill('2')
      await page.locator('input[name=pay-identifier]').fill('101')
      await page.getByRole('button', { name: 'Pay', exact: true }).click()
      await page.getByTestId('payment-result').filter({ hasText: 'Paid 2 TTT to Peer 1' }).waitFor({ timeout: 60_000 })
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^23$/ }).waitFor({ timeout: 20_000 })
    })

    await step('pay peer 2 through peer 1', async () => {
      await page.locator('input[name=pay-target]').fill(peer2.address)
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
    await step('both in the history, the route in the picture', async () => {
      await checkHistoryAndRoute()
      // The two channels of the route are drawn as the route: ours to peer 1, and peer 1's to peer 2.
      await page.locator('[data-testid=network-graph] g[data-route=yes]').nth(1).waitFor({ timeout: 20_000 })
    })

    await step('reload: nothing lost', async () => {
      await page.reload()
      await page.getByTestId('our-address').filter({ hasText: address }).waitFor({ timeout: 60_000 })
      await checkHistoryAndRoute()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^20$/ }).waitFor({ timeout: 20_000 })
    })

    await step('withdraw', async () => {
      await channel(peer1.address).locator('input[name=channel-amount]').fill('4')
      await channel(peer1.address).getByRole('button', { name: 'Withdraw' }).click()
      await channel(peer1.address).getByTestId('our-balance').filter({ hasText: /^16$/ }).waitFor({ timeout: 60_000 })
      await channel(peer1.address).getByText('withdrawn 4').waitFor({ timeout: 20_000 })
      await noFailure()
    })

    await step('close and watch it settle', async () => {
      await channel(peer1.address).getByRole('button', { name: 'Close' }).click()
      await channel(peer1.address).getByTestId('channel-state').filter({ hasText: 'closed' }).waitFor({ timeout: 60_000 })
      await channel(peer1.address)
        .getByTestId('settle-countdown')
        .filter({ hasText: /settles in \d+ blocks/ })
        .waitFor({ timeout: 20_000 })
      // The devnet mines a block a second: the settle window passes, the node settles, the channel leaves the list.
      await page.getByTestId('event-log').getByText('channel_settled').waitFor({ timeout: 120_000 })
      await channel(peer1.address).waitFor({ state: 'detached', timeout: 30_000 })
    })

    await step('at a phone’s width', async () => {
      await page.setViewportSize({ width: 390, height: 844 })
      await page.getByTestId('event-log').scrollIntoViewIfNeeded()
    })
    if (problems.length) throw new StepError(problems.join('\n'))
  } finally {
    await browser.close()
  }
}
