/**
 * What a real dApp does (issue 29): a page served over HTTPS under a name starts its node, which reaches a relay
 * over WebSockets Secure by name and pays a headless peer through it. The site and the relay have a certificate
 * from an authority the test makes (test/support/testCa.ts); Chromium trusts it through an NSS database in a HOME
 * of the test's own and finds the names with --host-resolver-rules; the peer trusts it by NODE_EXTRA_CA_CERTS and
 * finds the relay in an /etc/hosts of its own. No certificate check is switched off: without the authority,
 * Chromium refuses the page.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { logged } from '../cli/sluiceProcess.ts'
import { chosenEngines, launchEngine, type Tab } from '../support/engines/engine.ts'
import { openSite, type Site } from '../support/engines/site.ts'
import { SITE_PAGE } from '../support/engines/sitePage.ts'
import { freePort, makeTestCa, nodeTrust, type TestCa, withHosts } from '../support/testCa.ts'

const RELAY = 'relay.sluice.test'
const APP = 'app.sluice.test'
// WebKitGTK's WebDriver has no way in to a profile's roots or names here: Chromium and Firefox.
const engines = chosenEngines().filter((e) => e !== 'webkit') as ('chromium' | 'firefox')[]
const pageKeys = { chromium: anvilKeys[7] as Hex, firefox: anvilKeys[6] as Hex }
const peerKey = anvilKeys[8] as Hex
const names = { [APP]: '127.0.0.1', [RELAY]: '127.0.0.1' }
const peerAddress = privateKeyToAddress(peerKey)

let dir: string
let ca: TestCa
let site: Site
let peerApi: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-wss-page-'))
  ca = makeTestCa(join(dir, 'ca'), [APP, RELAY])
  const port = await freePort()
  site = await openSite({
    page: SITE_PAGE,
    funded: engines.map((e) => pageKeys[e]),
    https: { name: APP, certFile: ca.certFile, keyFile: ca.keyFile },
    relayArgs: [
      '--listen',
      `/ip4/127.0.0.1/tcp/${port}/wss`,
      '--tls-cert',
      ca.certFile,
      '--tls-key',
      ca.keyFile,
      '--announce',
      `/dns4/${RELAY}/tcp/${port}/wss`,
    ],
  })
  const peer = site.start(site.serveArgs(peerKey, join(site.dir, 'peer')), {
    env: nodeTrust(ca),
    wrap: (command) => withHosts(dir, { [RELAY]: '127.0.0.1' }, command),
  })
  ;[, peerApi] = (await peer.waitForOutput(/REST API: (\S+)\n/, 60_000)) as unknown as [string, string]
  await peer.waitForOutput(logged('Ready: '), 60_000)
}, 120_000)

afterAll(async () => {
  await site?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

async function peerSees(path: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${peerApi}${path}`)).json()) as Record<string, unknown>
}

const inTab = <T>(tab: Tab, method: string, ...args: unknown[]) => tab.evaluate<T>(`window.site.${method}(...${JSON.stringify(args)})`)

test('the site and the relay print the names a dApp uses', () => {
  expect(site.url).toMatch(new RegExp(`^https://${APP.replace(/\./g, '\\.')}:\\d+/$`))
  expect(site.relayAddress).toMatch(new RegExp(`^/dns4/${RELAY.replace(/\./g, '\\.')}/tcp/\\d+/wss/p2p/\\w+$`))
})

describe.each(engines)('a page over https, its node on a wss relay by name: %s', (engine) => {
  const pageKey = pageKeys[engine]

  test('without the authority, the browser refuses the page: nothing is switched off', async () => {
    const browser = await launchEngine(engine, { hosts: names })
    try {
      const tab = await browser.newTab()
      await expect(tab.goto(site.url)).rejects.toThrow(engine === 'chromium' ? /ERR_CERT_AUTHORITY_INVALID/ : /SEC_ERROR_UNKNOWN_ISSUER/)
    } finally {
      await browser.close()
    }
  })

  test('trusting the authority: the node starts in the https page, reaches the relay by name and pays the headless peer', async () => {
    const browser = await launchEngine(engine, { trustCa: ca.caFile, hosts: names })
    try {
      const tab = await browser.newTab()
      await tab.goto(site.url)
      expect(await tab.evaluate('[location.protocol, isSecureContext]')).toEqual(['https:', true])
      await tab.waitFor('window.site !== undefined')
      const options = {
        rpc: site.net.anvil.rpcUrl,
        deployment: site.deploymentPath,
        key: pageKey,
        relay: [site.relayAddress],
        confirmations: 0,
        environment: 'development',
      }
      expect((await inTab<{ address: string }>(tab, 'start', options)).address).toBe(privateKeyToAddress(pageKey))
      const token = site.net.token
      const opened = await inTab<{ status: number }>(tab, 'call', 'PUT', '/api/v1/channels', {
        partner_address: peerAddress,
        token_address: token,
        total_deposit: '1000',
      })
      expect(opened).toMatchObject({ status: 201 })
      const paid = await inTab<{ failures: number; firstFailures: string[] }>(tab, 'paySequential', token, peerAddress, 3, 'sw')
      expect([paid.failures, paid.firstFailures]).toEqual([0, []])
      // The peer holds what the page paid over the wss relay, as its own API says.
      await expect.poll(async () => (await peerSees(`/channels/${token}/${privateKeyToAddress(pageKey)}`)).balance, { timeout: 20_000 }).toBe('3')
      await inTab(tab, 'stop')
      expect(browser.pageErrors).toEqual([])
    } finally {
      await browser.close()
    }
  }, 120_000)
})
