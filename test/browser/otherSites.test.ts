// No other website can drive a node: pages of other origins, opened in this browser's profile, try to pay, stop the
// node and read its state, against the node in this page (through the service worker, docs/decisions/0026) and
// against `sluice serve` (its Origin and Content-Type checks). Each try is refused, and the nodes show it: still
// ready, nothing paid.
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import type { ApiAnswer, Site } from './commands/otherSites.ts'
import type { Peer } from './commands/peers.ts'
import { api } from './support/api.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken } from './support/token.ts'
import { eventually } from '../integration/support/eventually.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const key = generatePrivateKey()
const address = privateKeyToAddress(key)
let hub: Peer
let far: Peer
let token: Address
let node: SluiceBrowserNode

/**
 * A text/plain form body that parses as JSON: `{"amount":"1","identifier":"9001","x":"="}`, a payment but for the
 * field that holds the `=` such a form puts between name and value (the node refuses unknown fields, so no form body
 * is a payment it would make: what shows this one never reached the node is the service worker's own 403).
 */
const JSON_FIELD = `<input name='{"amount":"1","identifier":"9001","x":"' value='"}'>`

/** A page that posts a form to `action` as soon as it loads (text/plain with a JSON-looking body, or urlencoded and empty). */
function postingPage(action: string, { textPlain = true, head = '' } = {}): string {
  const form = textPlain ? `<form method="POST" enctype="text/plain" action="${action}">${JSON_FIELD}</form>` : `<form method="POST" action="${action}"></form>`
  return `<!doctype html><head>${head}</head><body>${form}<script>document.forms[0].submit()</script></body>`
}

/** A page that runs `script` as soon as it loads. */
function scriptPage(script: string, head = ''): string {
  return `<!doctype html><head>${head}</head><body><script>${script}</script></body>`
}

/** Opens `html` as a page of `site` and gives the one answer to /api/v1 the browser got. */
async function fromOtherSite(site: Site, html: string): Promise<ApiAnswer> {
  const answers = await commands.openOtherSite(site, html)
  expect(answers, 'the browser got an answer from /api/v1').toHaveLength(1)
  return answers[0]!
}

function refusedByServiceWorker(answer: ApiAnswer) {
  expect(answer, JSON.stringify(answer)).toMatchObject({ status: 403, servedBy: 'service worker' })
  expect(JSON.parse(answer.body)).toMatchObject({ code: 'FORBIDDEN_ORIGIN', errors: expect.any(String) })
}

/** What the page's node shows of its money: the payments it made and the channel to the hub. */
async function pageNodeMoney() {
  const payments = (await api('GET', `/payments/${token}`)).body as { event: string; identifier: string }[]
  const channel = (await api('GET', `/channels/${token}/${hub.address}`)).body as { balance: string }
  return { sent: payments.filter((p) => p.event === 'EventPaymentSentSuccess').map((p) => p.identifier), balance: channel.balance }
}

/** What the hub (a `sluice serve` node) shows of its money: its payments to the far peer and that channel. */
async function hubMoney() {
  const payments = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}`)).body as { event: string; identifier: string }[]
  const channel = (await commands.peerRequest(hub.api, 'GET', `/channels/${token}/${far.address}`)).body as { balance: string }
  return { sent: payments.filter((p) => p.event === 'EventPaymentSentSuccess').map((p) => p.identifier), balance: channel.balance }
}

beforeAll(async () => {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  const [world, deployed] = await Promise.all([commands.startPeers(rpc, deployment, 2), deployTestToken(rpc, deployment, key, 1000n)])
  token = deployed.token
  ;[hub, far] = world.peers as [Peer, Peer]
  expect((await commands.peerRequest(hub.api, 'POST', `/_testing/tokens/${token}/mint`, { to: hub.address, value: '500' })).status).toBe(200)
  await eventually(async () => {
    const opened = await commands.peerRequest(hub.api, 'PUT', '/channels', { token_address: token, partner_address: far.address, total_deposit: '200' })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
  }, 20_000)
  node = await startNode(nodeOptions({ key, relay: [world.relay] }))
  const opened = await api('PUT', '/channels', { token_address: token, partner_address: hub.address, total_deposit: '100' })
  expect(opened.status, JSON.stringify(opened.body)).toBe(201)
  // Both nodes can pay: a refused request below is refused, not unable.
  const paid = await api('POST', `/payments/${token}/${hub.address}`, { amount: '1', identifier: '1' })
  expect(paid.status, JSON.stringify(paid.body)).toBe(200)
  const hubPaid = await commands.peerRequest(hub.api, 'POST', `/payments/${token}/${far.address}`, { amount: '1', identifier: '1' })
  expect(hubPaid.status, JSON.stringify(hubPaid.body)).toBe(200)
}, 120_000)

afterAll(async () => {
  await commands.closeOtherSites()
  await node?.stop()
  await commands.stopPeers()
})

describe("the page's node, through the service worker", () => {
  test('forms posted from another site or another origin of this site, and navigations from elsewhere, are 403 and reach nothing', async () => {
    const before = await pageNodeMoney()
    expect(before).toEqual({ sent: ['1'], balance: '99' })
    const here = location.origin

    // A cross-site form posts a payment as text/plain (its body parses as JSON), and one posts /shutdown.
    refusedByServiceWorker(await fromOtherSite('cross-site', postingPage(`${here}/api/v1/payments/${token}/${hub.address}`)))
    refusedByServiceWorker(await fromOtherSite('cross-site', postingPage(`${here}/api/v1/shutdown`, { textPlain: false })))
    // Another origin of the same site (a sibling subdomain) is another origin all the same.
    refusedByServiceWorker(await fromOtherSite('same-site', postingPage(`${here}/api/v1/payments/${token}/${hub.address}`)))
    // A page that hides its referrer, then a plain cross-site link, ask for the state dump: 403, not the dump.
    const exportUrl = JSON.stringify(`${here}/api/v1/_state/export`)
    refusedByServiceWorker(await fromOtherSite('cross-site', scriptPage(`location.href = ${exportUrl}`, '<meta name="referrer" content="no-referrer">')))
    refusedByServiceWorker(
      await fromOtherSite('cross-site', scriptPage(`const a = document.createElement('a'); a.href = ${exportUrl}; document.body.append(a); a.click()`)),
    )
    // A frame of a sibling origin (a cross-site one is another storage partition, with no node in it).
    refusedByServiceWorker(await fromOtherSite('same-site', `<!doctype html><iframe src="${here}/api/v1/address"></iframe>`))
    // A popup of a sandboxed frame has no referrer at all, as a typed address: its form POST is refused as a POST.
    const inner = postingPage(`${here}/api/v1/payments/${token}/${hub.address}`).replace('<form ', '<form target="_blank" ')
    const sandboxed = `const f = document.createElement('iframe'); f.sandbox = 'allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox'; f.srcdoc = ${JSON.stringify(inner).replaceAll('<', '\\u003c')}; document.body.append(f)`
    refusedByServiceWorker(await fromOtherSite('cross-site', scriptPage(sandboxed)))

    expect((await api('GET', '/status')).body).toMatchObject({ status: 'ready' })
    expect(await pageNodeMoney()).toEqual(before)
    const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { event: string; identifier: string }[]
    expect(received.filter((p) => p.event === 'EventPaymentReceivedSuccess').map((p) => p.identifier)).toEqual(['1'])
  }, 60_000)

  test('an address typed into a new tab is answered by the node', async () => {
    const answer = await commands.typeAddress(`${location.origin}/api/v1/address`)
    expect(answer).toMatchObject({ status: 200, servedBy: 'service worker' })
    expect(JSON.parse(answer!.body)).toEqual({ our_address: address })
  })
})

describe('a `sluice serve` node', () => {
  test('a no-cors fetch and forms posted from another origin are refused; the node runs on and pays nothing', async () => {
    const before = await hubMoney()
    expect(before).toEqual({ sent: ['1'], balance: '199' })
    const pay = `${hub.api}/payments/${token}/${far.address}`

    // Chromium's opaque-response blocking keeps a no-cors answer's JSON from everyone, Playwright included: its status shows.
    const fetched = await fromOtherSite('cross-site', scriptPage(`fetch(${JSON.stringify(pay)}, { method: 'POST', mode: 'no-cors', body: '{"amount":"1"}' })`))
    expect(fetched, JSON.stringify(fetched)).toMatchObject({ status: 403, servedBy: 'network' })
    for (const answer of [
      await fromOtherSite('same-site', postingPage(pay)),
      await fromOtherSite('cross-site', postingPage(`${hub.api}/shutdown`, { textPlain: false })),
    ]) {
      expect(answer, JSON.stringify(answer)).toMatchObject({ status: 403, servedBy: 'network' })
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'FORBIDDEN_ORIGIN' })
    }

    expect((await commands.peerRequest(hub.api, 'GET', '/status')).body).toMatchObject({ status: 'ready' })
    expect(await hubMoney()).toEqual(before)
    const received = (await commands.peerRequest(far.api, 'GET', `/payments/${token}`)).body as { event: string }[]
    expect(received.filter((p) => p.event === 'EventPaymentReceivedSuccess')).toHaveLength(1)
  }, 60_000)
})
