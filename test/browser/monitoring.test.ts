// The page's node guarded while its tab is closed (docs/decisions/0035): a tab starts the node with enableMonitoring
// and a UserDeposit, is paid by a headless peer over a relay (and pays it once), and is closed. The peer closes the
// channel, which carries none of its payments to the page; a `sluice monitor` process submits the peer's newest
// proof for the page in its window, the settlement pays the page everything it received, and the service claims its
// reward from the page's UserDeposit. On a private anvil (commands/monitoring.ts), whose blocks the test mines.
import { createPublicClient, createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, describe, expect, test } from 'vitest'
import { commands } from 'vitest/browser'
import type { Deployment } from '../../src/chain/deployment.ts'
import { CustomToken, UserDeposit } from '../../src/contracts/index.ts'
import { eventually } from '../integration/support/eventually.ts'

const REWARD = 10n ** 18n

const key = generatePrivateKey()
const address = privateKeyToAddress(key)

afterAll(async () => {
  await commands.closeAllTabs()
  await commands.stopPeers()
  await commands.stopMonitoring()
})

describe("the page's node with monitoring on, its tab closed", () => {
  test("a monitoring service submits the peer's newest proof: after settlement the page's account holds every payment, and the service its reward", async () => {
    const chain = await commands.startPrivateChain()
    const { rpc, deployment, token } = chain
    const world = await commands.startPeers(rpc, deployment, 1)
    const hub = world.peers[0]!
    const monitor = await commands.startMonitorService(rpc, deployment, world.relay)
    const anvil = createTestClient({ mode: 'anvil', transport: http(rpc) })
    const reader = createPublicClient({ transport: http(rpc) })
    await anvil.setBalance({ address, value: parseEther('10') })

    const tab = await commands.openTab()
    const started = await commands.inTab<{ ok: boolean }>(tab, 'start', [
      {
        rpc,
        deployment: deployment as Deployment,
        key,
        relay: [world.relay],
        confirmations: 0,
        pollingInterval: 50,
        environment: 'development',
        // The hub's channel has a settle timeout of 20 blocks: a lock must leave the page its reveal timeout.
        defaultRevealTimeout: 5,
        enableMonitoring: true,
        monitoringReward: String(REWARD),
      },
    ])
    expect(started).toMatchObject({ ok: true })
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await commands.inTab<{ ok: true; value: { status: number; body: any } }>(tab, 'fetch', [
        `/api/v1${path}`,
        { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
      ])
      return r.value
    }
    const ok = async (method: string, path: string, body?: unknown) => {
      const r = await api(method, path, body)
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300)
      return r.body
    }
    const hubOk = async (method: string, path: string, body?: unknown) => {
      const r = await commands.peerRequest(hub.api, method, path, body)
      expect(r.status, `hub ${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300)
      return r.body
    }
    expect(await ok('GET', '/settings')).toMatchObject({ monitoring_enabled: true, monitoring_reward: String(REWARD) })

    // The page buys service tokens for its UserDeposit and tokens for its channel; the hub opens a channel to it.
    await ok('POST', `/_testing/tokens/${deployment.serviceToken}/mint`, { to: address, value: String(2n * REWARD) })
    await ok('POST', '/user_deposit', { total_deposit: String(2n * REWARD) })
    await ok('POST', `/_testing/tokens/${token}/mint`, { to: address, value: '1000' })
    await hubOk('POST', `/_testing/tokens/${token}/mint`, { to: hub.address, value: '1000' })
    await hubOk('PUT', '/channels', { partner_address: address, token_address: token, total_deposit: '1000', settle_timeout: '20', reveal_timeout: '5' })
    await eventually(async () => expect((await api('GET', `/channels/${token}/${hub.address}`)).status).toBe(200), 20_000)
    await ok('PATCH', `/channels/${token}/${hub.address}`, { total_deposit: '100' })

    // The hub pays three times (once the page is reachable through the relay), the page pays once.
    await eventually(
      async () => expect((await commands.peerRequest(hub.api, 'POST', `/payments/${token}/${address}`, { amount: '10', identifier: '1' })).status).toBe(200),
      30_000,
    )
    await hubOk('POST', `/payments/${token}/${address}`, { amount: '20', identifier: '2' })
    await ok('POST', `/payments/${token}/${hub.address}`, { amount: '7', identifier: '3' })
    await hubOk('POST', `/payments/${token}/${address}`, { amount: '30', identifier: '4' })

    // The page's node asks the service to hold the hub's newest proof (nonce 6: a LockedTransfer and an Unlock each).
    const guarded = await eventually(async () => {
      const m = await ok('GET', '/monitoring')
      expect(m.services).toEqual(expect.arrayContaining([expect.objectContaining({ address: monitor.address })]))
      expect(m.channels).toEqual([expect.objectContaining({ partner_address: hub.address, requested_nonce: '6' })])
      expect(m.channels[0].acknowledged).toEqual(expect.arrayContaining([expect.objectContaining({ service_address: monitor.address, nonce: '6' })]))
      return m
    }, 30_000)
    const channelId = BigInt(guarded.channels[0].channel_identifier)

    // The tab closes: its worker dies with it, and the node with it.
    await commands.closeTab(tab)
    const balanceOf = () => reader.readContract({ address: token, abi: CustomToken.abi, functionName: 'balanceOf', args: [address] })
    const udc = (who: Address) =>
      reader.readContract({ address: deployment.contracts.UserDeposit.address, abi: UserDeposit.abi, functionName: 'balances', args: [who] })
    const before = await balanceOf()
    const udcBefore = await udc(address)

    // The hub closes, with the page's proof (nonce 2) and nothing of its own payments.
    expect(await hubOk('PATCH', `/channels/${token}/${address}`, { state: 'closed' })).toMatchObject({ state: 'closed' })
    const calls = async () => (await commands.peerRequest<any[]>(monitor.api, 'GET', '/monitor_calls')).body
    // One block at a time, each once the service has read the last: a busy machine slows the service down, and
    // mining ahead of it would run the settle window out before it had its turn to act.
    const serviceAt = async () => Number((await commands.peerRequest<{ synced_block: string | number }>(monitor.api, 'GET', '/status')).body.synced_block)
    const mineUntil = async (done: () => Promise<boolean>, blocks: number) => {
      for (let i = 0; !(await done()); i++) {
        expect(i, 'blocks mined').toBeLessThan(blocks)
        const before = await serviceAt()
        await anvil.mine({ blocks: 1 })
        await eventually(async () => expect(await serviceAt()).toBeGreaterThan(before), 30_000)
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    await mineUntil(async () => (await calls()).some((c) => c.status === 'done'), 25)
    expect((await calls())[0]).toMatchObject({
      channel_identifier: String(channelId),
      non_closing_participant: address,
      closing_participant: hub.address,
      nonce: '6',
    })

    // The hub settles after the window: the page's account gets its deposit and all it received, less what it paid.
    await mineUntil(async () => (await balanceOf()) !== before, 20)
    expect((await balanceOf()) - before).toBe(100n + 10n + 20n + 30n - 7n)
    await mineUntil(async () => (await calls())[0]?.reward?.status === 'claimed', 20)
    expect(await udc(address)).toBe(udcBefore - REWARD)
    expect(await udc(monitor.address)).toBe(REWARD)
  }, 240_000)
})
