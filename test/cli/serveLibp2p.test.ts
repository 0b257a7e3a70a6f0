import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { peerIdOfKey } from '../../src/transport/libp2p/peerIdentity.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { metricsUrlOf, sampleValue, scrape } from '../support/prometheusText.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { call } from './devnetProcess.ts'
import { logMessages, relayListening, startSluice, type SluiceProcess, quickServeFlags } from './sluiceProcess.ts'

/**
 * `sluice serve` nodes in separate processes pay each other over libp2p: a real `sluice relay` process, two
 * `sluice serve` processes (different keys and data directories), everything through their REST APIs over HTTP.
 */

const tempDir = tempDirs('sluice-serve-libp2p-')

const [keyA, keyB, keyC, keyD] = [anvilKeys[1] as Hex, anvilKeys[2] as Hex, anvilKeys[3] as Hex, anvilKeys[4] as Hex]
const [addressA, addressB, addressC, addressD] = [keyA, keyB, keyC, keyD].map((k) => privateKeyToAddress(k))
let net: Devnet
let deploymentFile: string
let relay: SluiceProcess | undefined
let relayAddress: string
const started: SluiceProcess[] = []

beforeAll(async () => {
  const relayDir = tempDir()
  relay = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'], relayDir)
  ;[net] = await Promise.all([startDevnet([keyA, keyB, keyC, keyD]), relay.waitForOutput(/Press Ctrl-C to stop/)])
  relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
})

afterAll(async () => {
  // Whatever a failed test left running.
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  if (relay) {
    relay.child.kill('SIGTERM')
    await relay.exited
  }
  await net?.stop()
})

const serveArgs = (key: Hex, ...more: string[]) => [
  'serve',
  '--rpc',
  net.anvil.rpcUrl,
  '--deployment',
  deploymentFile,
  '--key',
  key,
  '--data-dir',
  tempDir(),
  ...quickServeFlags,
  ...more,
]

async function startServe(args: string[]): Promise<{ sluice: SluiceProcess; api: string }> {
  const sluice = startSluice(args, tempDir())
  started.push(sluice)
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  return { sluice, api: api! }
}

async function waitReady(api: string) {
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 60_000)
}

describe('sluice serve over libp2p', () => {
  test('two serve processes meet through a sluice relay and pay each other over REST; SIGTERM stops both with exit code 0', async () => {
    const t0 = performance.now()
    // A names the transport; B gets libp2p as the default that --relay implies.
    const [a, b] = await Promise.all([
      startServe(serveArgs(keyA, '--transport', 'libp2p', '--relay', relayAddress, '--metrics', '127.0.0.1:0')),
      startServe(serveArgs(keyB, '--relay', relayAddress, '--metrics', '127.0.0.1:0')),
    ])
    const metricsOf = (node: { sluice: SluiceProcess }) => scrape(metricsUrlOf(node.sluice.stdout()))
    await Promise.all([waitReady(a.api), waitReady(b.api)])
    const tReady = performance.now()
    for (const [node, key] of [
      [a, keyA],
      [b, keyB],
    ] as const) {
      const peerId = peerIdOfKey(key).toString()
      expect(node.sluice.stdout()).toContain(`Transport: libp2p, peer id ${peerId}, relay ${relayAddress}`)
      // The reservation on the relay: the node is reachable at a circuit address ending in its own peer id.
      await node.sluice.waitForOutput(new RegExp(`libp2p: reachable at ${relayAddress.replace(/[/.]/g, '\\$&')}/p2p-circuit/p2p/${peerId}`), 15_000)
    }

    const opened = await call('PUT', `${a.api}/channels`, { partner_address: addressB, token_address: net.token, total_deposit: '1000' })
    expect(opened.status).toBe(201)
    expect(opened.body).toMatchObject({ partner_address: addressB, token_address: net.token, total_deposit: '1000', balance: '1000', state: 'opened' })
    const tOpened = performance.now()
    // The payment needs B to have seen A's presence and synced the channel; the delivery layer retries until it has.
    const paid = await call('POST', `${a.api}/payments/${net.token}/${addressB}`, { amount: '10', identifier: '7' })
    expect(paid).toMatchObject({
      status: 200,
      body: { initiator_address: addressA, target_address: addressB, token_address: net.token, amount: '10', identifier: '7' },
    })
    const tPaid = performance.now()

    // B, in its own process, holds what A sent over libp2p: its channel balance and its payment history say so.
    await eventually(async () =>
      expect((await call('GET', `${b.api}/channels/${net.token}/${addressA}`)).body).toMatchObject({
        partner_address: addressA,
        balance: '10',
        state: 'opened',
      }),
    )
    expect((await call('GET', `${a.api}/channels/${net.token}/${addressB}`)).body).toMatchObject({ balance: '990', total_deposit: '1000' })
    await eventually(async () => {
      const history = await call('GET', `${b.api}/payments/${net.token}`)
      expect(history.status).toBe(200)
      expect(history.body).toEqual([
        expect.objectContaining({ event: 'EventPaymentReceivedSuccess', initiator: addressA, amount: '10', identifier: '7', token_address: net.token }),
      ])
    })
    expect((await call('GET', `${a.api}/payments/${net.token}/${addressB}`)).body).toEqual([
      expect.objectContaining({ event: 'EventPaymentSentSuccess', target: addressB, amount: '10', identifier: '7' }),
    ])

    // A second payment, the other way: B's messages reach A as well.
    expect((await call('POST', `${b.api}/payments/${net.token}/${addressA}`, { amount: '3', identifier: '8' })).status).toBe(200)
    await eventually(async () => expect((await call('GET', `${a.api}/channels/${net.token}/${addressB}`)).body.balance).toBe('993'))
    const tBack = performance.now()

    // Their metrics (docs/decisions/0078): each sent one payment and received one, with its latency; one channel open.
    await eventually(async () => {
      for (const node of [a, b]) {
        const m = await metricsOf(node)
        expect(sampleValue(m, 'sluice_payments_sent_total', { outcome: 'success' })).toBe(1)
        expect(sampleValue(m, 'sluice_payments_sent_total', { outcome: 'failure' })).toBe(0)
        expect(sampleValue(m, 'sluice_payments_received_total', { outcome: 'success' })).toBe(1)
        expect(sampleValue(m, 'sluice_payment_sent_seconds_count', { outcome: 'success' })).toBe(1)
        expect(sampleValue(m, 'sluice_payment_sent_seconds_sum', { outcome: 'success' })).toBeGreaterThan(0)
        expect(sampleValue(m, 'sluice_payments_mediated_total', { outcome: 'success' })).toBe(0)
        expect(sampleValue(m, 'sluice_channels', { state: 'opened' })).toBe(1)
        expect(sampleValue(m, 'sluice_channels', { state: 'closed' })).toBe(0)
        expect(sampleValue(m, 'sluice_chain_synced_block')).toBeGreaterThan(0)
        expect(sampleValue(m, 'sluice_chain_sync_lag_blocks')).toBeLessThanOrEqual(2)
        expect(sampleValue(m, 'sluice_transactions_pending')).toBe(0)
        expect(sampleValue(m, 'sluice_info', { command: 'serve' })).toBe(1)
      }
    })
    // The first payment's latency, as A measured it from its start, is within what the test saw of it over REST.
    const latency = sampleValue(await metricsOf(a), 'sluice_payment_sent_seconds_sum', { outcome: 'success' })!
    expect(latency * 1000).toBeLessThanOrEqual(tPaid - tOpened)

    for (const node of [a, b]) node.sluice.child.kill('SIGTERM')
    for (const node of [a, b]) {
      expect(await node.sluice.exited).toEqual({ code: 0, signal: null })
      expect(logMessages(node.sluice.stdout()).slice(-3)).toEqual([
        'SIGTERM: stopping',
        expect.stringMatching(/^Stopped: synced to block \d+ event=status$/),
        'stopped',
      ])
      expect(node.sluice.stderr()).toBe('')
    }
    const tStopped = performance.now()
    console.log(
      `serve over libp2p: both ready ${Math.round(tReady - t0)} ms, channel opened ${Math.round(tOpened - tReady)} ms, ` +
        `first payment ${Math.round(tPaid - tOpened)} ms, one back ${Math.round(tBack - tPaid)} ms, both stopped in ${Math.round(tStopped - tBack)} ms`,
    )
  })

  test('with --p2p-listen on loopback (and --p2p-allow-private), two nodes pay each other over a direct connection', async () => {
    const direct = ['--p2p-listen', '/ip4/127.0.0.1/tcp/0/ws', '--p2p-allow-private']
    const [c, d] = await Promise.all([
      startServe(serveArgs(keyC, '--relay', relayAddress, ...direct)),
      startServe(serveArgs(keyD, '--relay', relayAddress, ...direct)),
    ])
    await Promise.all([waitReady(c.api), waitReady(d.api)])
    for (const [node, key] of [
      [c, keyC],
      [d, keyD],
    ] as const) {
      const peerId = peerIdOfKey(key).toString()
      expect(node.sluice.stdout()).toContain('Direct connections: listening on /ip4/127.0.0.1/tcp/0/ws')
      // Its direct address, with the port chosen, beside its circuit.
      await node.sluice.waitForOutput(new RegExp(`libp2p: reachable at .*/p2p-circuit/p2p/${peerId}, /ip4/127\\.0\\.0\\.1/tcp/\\d+/ws/p2p/${peerId}`), 15_000)
    }
    const opened = await call('PUT', `${c.api}/channels`, { partner_address: addressD, token_address: net.token, total_deposit: '100' })
    expect(opened.status).toBe(201)
    expect((await call('POST', `${c.api}/payments/${net.token}/${addressD}`, { amount: '4', identifier: '70' })).status).toBe(200)
    await eventually(async () => expect((await call('GET', `${d.api}/channels/${net.token}/${addressC}`)).body.balance).toBe('4'))
    expect((await call('POST', `${d.api}/payments/${net.token}/${addressC}`, { amount: '1', identifier: '71' })).status).toBe(200)
    await eventually(async () => expect((await call('GET', `${c.api}/channels/${net.token}/${addressD}`)).body.balance).toBe('97'))
    // C opened its way to D when it asked for the channel: directly; D answered over that connection or one of its own.
    await c.sluice.waitForOutput(new RegExp(`libp2p: direct connection with ${peerIdOfKey(keyD)} \\(outbound\\)`), 5_000)
    await d.sluice.waitForOutput(new RegExp(`libp2p: direct connection with ${peerIdOfKey(keyC)} \\(`), 5_000)
    for (const node of [c, d]) {
      node.sluice.child.kill('SIGTERM')
      expect(await node.sluice.exited).toEqual({ code: 0, signal: null })
      expect(node.sluice.stdout()).not.toContain('no direct connection')
    }
  })
})
