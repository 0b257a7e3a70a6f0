// The offline case, end to end, in separate processes on anvil (docs/decisions/0035): a `sluice relay`, a
// `sluice monitor`, and two `sluice serve` nodes. B runs with --enable-monitoring and a UserDeposit, receives payments
// from A (and pays A once), and is killed. A closes: its close can carry only B's proof (the contract takes the
// closer's partner's proof, §2.5), so A's payments to B reach the chain only if someone submits A's newest proof for
// B (updateNonClosingBalanceProof). The monitoring service does so in its window; without it B loses every token A
// paid it over the channel, which is what the contract allows: it settles A's side as nothing transferred.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient } from '../../src/chain/chainClient.ts'
import { mintTokens } from '../../src/chain/erc20.ts'
import { readFirstBlockAllowedToMonitor } from '../../src/chain/monitoringService.ts'
import { readChannelInfo, readParticipantInfo, readTokenBalance } from '../../src/chain/reads.ts'
import { createTransactionQueue } from '../../src/chain/transactionQueue.ts'
import { UserDeposit } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { call } from '../cli/devnetProcess.ts'
import { logged, relayListening, startSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from './support/devnet.ts'
import { mineUntil } from '../support/monitoring.ts'
import { eventually } from './support/eventually.ts'

const serviceKey = anvilKeys[3] as Hex
const service = privateKeyToAddress(serviceKey)
const REWARD = 10n ** 18n
const SETTLE_TIMEOUT = 30n
/** A pays B these, B pays A one. */
const PAID_TO_B = [10n, 20n, 30n, 40n, 50n]
const PAID_TO_A = 7n
const DEPOSIT_A = 1000n
const DEPOSIT_B = 100n

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-offline-'))
  dirs.push(dir)
  return dir
}
const started: SluiceProcess[] = []
let net: Devnet
let deploymentFile: string
let relayAddress: string
let monitorDir: string
let monitor: { sluice: SluiceProcess; api: string } | undefined
let devnet: ReturnType<typeof createDevnetClient>
let reader: Awaited<ReturnType<typeof createChainClient>>

beforeAll(async () => {
  const relay = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'], tempDir())
  started.push(relay)
  const keys = [1, 2, 4, 5].map((i) => anvilKeys[i] as Hex)
  ;[net] = await Promise.all([startDevnet(keys), relay.waitForOutput(/Press Ctrl-C to stop/)])
  relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
  monitorDir = tempDir()
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[6] as Hex })
  reader = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[6] as Hex, pollingInterval: 50 })
  // The service pays the registry in service tokens; the guarded nodes buy service tokens for their UserDeposit.
  const deployer = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] as Hex, pollingInterval: 50 })
  const queue = createTransactionQueue(deployer)
  await mintTokens(deployer, queue, { token: net.deployment.serviceToken, amount: 10n ** 22n, to: service })
  for (const key of [anvilKeys[2], anvilKeys[5]] as Hex[])
    await mintTokens(deployer, queue, { token: net.deployment.serviceToken, amount: 10n * REWARD, to: privateKeyToAddress(key) })
  // What the service then reads (its registration fails with 'holds 0' otherwise, as it once did in a CI run).
  const head = await reader.publicClient.getBlockNumber({ cacheTime: 0 })
  expect(await readTokenBalance(reader, { token: net.deployment.serviceToken, owner: service }), `the service's balance at block ${head}`).toBe(10n ** 22n)
  // The service, for both cases (the second stops it before A closes).
  monitor = await startMonitor()
}, 120_000)

afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await Promise.all(started.map((p) => p.exited))
  await net?.stop()
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

async function startMonitor() {
  const sluice = startSluice(
    [
      'monitor',
      ...['--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', serviceKey, '--data-dir', monitorDir, '--relay', relayAddress],
      ...['--api', '127.0.0.1:0', '--confirmations', '1', '--polling-interval', '50'],
    ],
    tempDir(),
  )
  started.push(sluice)
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  await sluice.waitForOutput(/Ready: synced to block \d+\n/, 60_000)
  return { sluice, api: api! }
}

/** Each key's data directory: a node started again with the same key goes on from its store. */
const dataDirs = new Map<Hex, string>()
async function startServe(key: Hex, ...more: string[]) {
  if (!dataDirs.has(key)) dataDirs.set(key, tempDir())
  const sluice = startSluice(
    [
      'serve',
      ...['--rpc', net.anvil.rpcUrl, '--deployment', deploymentFile, '--key', key, '--data-dir', dataDirs.get(key)!, '--relay', relayAddress],
      ...['--api', '127.0.0.1:0', '--confirmations', '0', '--polling-interval', '50', '--environment', 'development'],
      ...['--default-reveal-timeout', '5', '--default-settle-timeout', String(SETTLE_TIMEOUT)],
      ...more,
    ],
    tempDir(),
  )
  started.push(sluice)
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 60_000)
  return { sluice, api: api!, address: privateKeyToAddress(key) }
}

const ok = async (method: string, url: string, body?: unknown) => {
  const r = await call(method, url, body)
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}
const udc = (who: Address) =>
  devnet.readContract({ address: net.deployment.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'balances', args: [who] })
const tokenBalance = (owner: Address) => readTokenBalance(reader, { token: net.token, owner })

/**
 * B (with monitoring on and a UserDeposit) is paid by A and pays A once, until the service acknowledges A's newest
 * proof; then B is killed, and A closes the channel. Returns what the test needs to follow the chain.
 */
async function paidThenOffline(keyA: Hex, keyB: Hex, beforeClose: () => Promise<void> = async () => {}) {
  const [a, b] = await Promise.all([startServe(keyA), startServe(keyB, '--enable-monitoring', '--monitoring-reward', String(REWARD))])
  expect(b.sluice.stdout()).toContain(`Monitoring: on, ${REWARD} service token units offered per request`)
  expect((await ok('GET', `${b.api}/settings`)).monitoring_enabled).toBe(true)
  await ok('POST', `${b.api}/user_deposit`, { total_deposit: String(2n * REWARD) })
  await ok('PUT', `${a.api}/channels`, { partner_address: b.address, token_address: net.token, total_deposit: String(DEPOSIT_A) })
  await eventually(async () => expect((await call('GET', `${b.api}/channels/${net.token}/${a.address}`)).status).toBe(200))
  await ok('PATCH', `${b.api}/channels/${net.token}/${a.address}`, { total_deposit: String(DEPOSIT_B) })
  let identifier = 1
  for (const [i, amount] of PAID_TO_B.entries()) {
    await ok('POST', `${a.api}/payments/${net.token}/${b.address}`, { amount: String(amount), identifier: String(identifier++) })
    if (i === 2) await ok('POST', `${b.api}/payments/${net.token}/${a.address}`, { amount: String(PAID_TO_A), identifier: String(identifier++) })
  }
  const paidAt = performance.now()
  // Every payment of A's is a LockedTransfer and an Unlock: A's newest proof has nonce 2 per payment.
  const newest = String(2 * PAID_TO_B.length)
  const guarded = await eventually(async () => {
    const m = await ok('GET', `${b.api}/monitoring`)
    expect(m).toMatchObject({
      enabled: true,
      reward: String(REWARD),
      services: [expect.objectContaining({ address: service })],
      channels: [expect.objectContaining({ partner_address: a.address, state: 'opened', requested_nonce: newest })],
    })
    expect(m.channels[0].acknowledged).toEqual([expect.objectContaining({ service_address: service, nonce: newest })])
    return m
  }, 30_000)
  const channelId = BigInt(guarded.channels[0].channel_identifier)
  const guardedAfterMs = performance.now() - paidAt

  // B goes away without a word.
  b.sluice.child.kill('SIGKILL')
  await b.sluice.exited
  const bBefore = await tokenBalance(b.address)
  const udcBefore = await udc(b.address)
  await beforeClose()

  // A closes: the close carries B's newest proof to A (nonce 2), and nothing of A's payments to B.
  expect(await ok('PATCH', `${a.api}/channels/${net.token}/${b.address}`, { state: 'closed' })).toMatchObject({ state: 'closed' })
  const { settleBlockNumber } = await readChannelInfo(reader, {
    tokenNetwork: net.tokenNetwork,
    channelId,
    participant1: a.address,
    participant2: b.address,
  })
  const aSide = () => readParticipantInfo(reader, { tokenNetwork: net.tokenNetwork, channelId, participant: a.address, partner: b.address })
  expect(await aSide()).toMatchObject({ nonce: 0n, isTheCloser: true })
  return { a, b, channelId, settleBlockNumber, bBefore, udcBefore, aSide, newest, guardedAfterMs }
}

/**
 * Mines one block at a time (each a chance for the service, then for A's node, to act) until `done`, at most up to
 * `last`. Blocks before `from`, in which the contract lets nobody act, come in one step: a busy machine's test spent
 * its time there.
 */

const transferredToB = PAID_TO_B.reduce((x, y) => x + y, 0n)

describe('a node that goes offline with monitoring on', () => {
  test("the monitoring service submits A's newest proof in its window: after settlement B holds every payment it received, and the service got its reward from B's UserDeposit", async () => {
    const { a, b, channelId, settleBlockNumber, bBefore, udcBefore, aSide, newest, guardedAfterMs } = await paidThenOffline(
      anvilKeys[1] as Hex,
      anvilKeys[2] as Hex,
    )
    const closedAt = settleBlockNumber - SETTLE_TIMEOUT
    const allowedFrom = await readFirstBlockAllowedToMonitor(reader, {
      monitoringService: net.deployment.contracts.MonitoringService.address,
      tokenNetwork: net.tokenNetwork,
      channelId,
      closing: a.address,
      nonClosing: b.address,
      service,
    })

    // The service sees the close (one confirmation) and calls monitor in its window, before the settle block.
    await mineUntil(devnet, async () => (await ok('GET', `${monitor!.api}/monitor_calls`))[0]?.status === 'done', settleBlockNumber, allowedFrom)
    const [monitored] = await ok('GET', `${monitor!.api}/monitor_calls`)
    expect(monitored).toMatchObject({ non_closing_participant: b.address, closing_participant: a.address, nonce: newest, reward_amount: String(REWARD) })
    expect(BigInt(monitored.block_number)).toBeLessThanOrEqual(settleBlockNumber)
    expect(await aSide()).toMatchObject({ nonce: BigInt(newest) })

    // B comes back before the window ends (a tab opened again). It sees the close, and the chain holding A's newest
    // proof already: it has nothing to update (it would revert, "nonce reused") and settles once the window is over.
    const back = await startServe(anvilKeys[2] as Hex, '--enable-monitoring', '--monitoring-reward', String(REWARD))
    await eventually(async () => expect((await ok('GET', `${back.api}/channels/${net.token}/${a.address}`)).state).toBe('closed'))
    await mineUntil(devnet, async () => (await tokenBalance(b.address)) !== bBefore, settleBlockNumber + 20n, settleBlockNumber)
    expect((await tokenBalance(b.address)) - bBefore).toBe(DEPOSIT_B + transferredToB - PAID_TO_A)
    expect(back.sluice.stderr()).not.toMatch(logged('transaction\\b'))

    // The service claims its reward from B's UserDeposit once the settle window is over.
    await mineUntil(devnet, async () => (await ok('GET', `${monitor!.api}/monitor_calls`))[0]?.reward?.status === 'claimed', settleBlockNumber + 40n)
    expect(await udc(b.address)).toBe(udcBefore - REWARD)
    expect(await udc(service)).toBe(REWARD)
    console.log(
      `offline monitoring: the last payment acknowledged by the service within ${guardedAfterMs.toFixed(0)} ms of its answer; monitor mined ${BigInt(monitored.block_number) - closedAt} blocks after the close (settle timeout ${SETTLE_TIMEOUT})`,
    )
    a.sluice.child.kill('SIGTERM')
    back.sluice.child.kill('SIGTERM')
    await Promise.all([a.sluice.exited, back.sluice.exited])
  })

  test("with the service down, B loses exactly what A paid it over the channel: the contract settles A's side as nothing transferred", async () => {
    // The service holds A's newest proof (B saw it acknowledged), but it is gone before A closes.
    const { a, b, settleBlockNumber, bBefore, udcBefore, aSide } = await paidThenOffline(anvilKeys[4] as Hex, anvilKeys[5] as Hex, async () => {
      monitor!.sluice.child.kill('SIGKILL')
      await monitor!.sluice.exited
    })

    await mineUntil(devnet, async () => (await tokenBalance(b.address)) !== bBefore, settleBlockNumber + 20n, settleBlockNumber)
    expect(await aSide()).toMatchObject({ nonce: 0n })
    const received = (await tokenBalance(b.address)) - bBefore
    expect(received).toBe(DEPOSIT_B - PAID_TO_A)
    // What B lost: every token A paid it, 150 of the 243 it was owed; its UserDeposit paid nobody.
    expect(DEPOSIT_B + transferredToB - PAID_TO_A - received).toBe(transferredToB)
    expect(await udc(b.address)).toBe(udcBefore)
    a.sluice.child.kill('SIGTERM')
    await a.sluice.exited
  })
})
