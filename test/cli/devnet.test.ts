import { existsSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { createPublicClient, http, type Address } from 'viem'
import { afterAll, describe, expect, test } from 'vitest'
import { backupKey, fetchBackup, open, pushBackup, seal } from '../../src/backup/index.ts'
import { CustomToken, UserDeposit } from '../../src/contracts/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { privateKeyToAddress } from 'viem/accounts'
import { eventually } from '../integration/support/eventually.ts'
import { tempDirs } from '../support/tempDirs.ts'
import { call, startDevnetCommand, type DevnetJson } from './devnetProcess.ts'
import { childProcesses, isAlive, logMessages, runSluice, startSluice } from './sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

const tempDir = tempDirs('sluice-devnet-test-')

const refused = (url: string) =>
  fetch(url).then(
    () => false,
    () => true,
  )

describe('sluice devnet', () => {
  test('--json: one line once ready; funded nodes; PUT /channels and POST /payments between two nodes; SIGTERM stops everything', async () => {
    const { sluice, info, anvilPid } = await startDevnetCommand(['--nodes', '2', '--port-base', '0'])
    // Exactly one line on stdout, with the documented keys.
    expect(sluice.stdout().trim().split('\n')).toHaveLength(1)
    // Its log went to stderr, a line for each step as it began.
    for (const line of sluice.stderr().trim().split('\n')) expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}/)
    expect(logMessages(sluice.stderr())).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^anvil at http:\/\/127\.0\.0\.1:\d+; deploying the contracts$/),
        'waiting for the nodes to sync with the chain',
        expect.stringMatching(/^nodes ready: synced to block \d+$/),
      ]),
    )
    expect(Object.keys(info)).toEqual(['rpcUrl', 'deployment', 'tokens', 'nodes', 'backup'])
    expect(Object.keys(info.tokens)).toEqual(['TTT', 'TT2'])
    expect(info.nodes.map((n) => n.address)).toEqual([privateKeyToAddress(anvilKeys[1]), privateKeyToAddress(anvilKeys[2])])
    for (const n of info.nodes) expect(n.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/)
    const deployment = JSON.parse(readFileSync(info.deployment, 'utf8'))
    expect(deployment.rpcUrl).toBe(info.rpcUrl)
    // The backup server keeps a node's sealed copy and gives it back to that node's key.
    expect(info.backup.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/backup\/v1$/)
    const nodeKey = await backupKey(jsSecp256k1, anvilKeys[1])
    await pushBackup(info.backup.api, await seal(nodeKey, { version: 1n, payload: new TextEncoder().encode('node 0') }))
    expect(await open(nodeKey, (await fetchBackup(info.backup.api, nodeKey))!)).toMatchObject({ version: 1n })

    const [a, b] = info.nodes as [DevnetJson['nodes'][0], DevnetJson['nodes'][0]]
    for (const n of info.nodes) {
      expect(await call('GET', `${n.api}/address`)).toEqual({ status: 200, body: { our_address: n.address } })
      expect((await call('GET', `${n.api}/status`)).body).toEqual({ status: 'ready' })
      // Both test tokens have a token network.
      expect(((await call('GET', `${n.api}/tokens`)).body as string[]).sort()).toEqual(Object.values(info.tokens).sort())
    }
    // Funded: native currency, 1000 TTT and TT2, 100 service tokens in the UserDeposit.
    const client = createPublicClient({ transport: http(info.rpcUrl) })
    for (const n of info.nodes) {
      expect(await client.getBalance({ address: n.address })).toBeGreaterThan(10n ** 18n)
      for (const token of Object.values(info.tokens))
        expect(await client.readContract({ address: token, abi: CustomToken.abi, functionName: 'balanceOf', args: [n.address] })).toBe(1000n * 10n ** 18n)
      expect(
        await client.readContract({
          address: deployment.contracts.UserDeposit.address,
          abi: UserDeposit.abi,
          functionName: 'effectiveBalance',
          args: [n.address],
        }),
      ).toBe(100n * 10n ** 18n)
    }

    const opened = await call('PUT', `${a.api}/channels`, {
      partner_address: b.address,
      token_address: info.tokens.TTT,
      total_deposit: '1000',
      settle_timeout: '40',
    })
    expect(opened.status).toBe(201)
    expect(opened.body).toMatchObject({ partner_address: b.address, token_address: info.tokens.TTT, total_deposit: '1000', state: 'opened' })
    const paid = await call('POST', `${a.api}/payments/${info.tokens.TTT}/${b.address}`, { amount: '10', identifier: '7' })
    expect(paid).toMatchObject({ status: 200, body: { amount: '10', identifier: '7', target_address: b.address } })
    await eventually(async () => expect((await call('GET', `${b.api}/channels/${info.tokens.TTT}/${a.address}`)).body.balance).toBe('10'))

    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(isAlive(anvilPid)).toBe(false)
    for (const n of info.nodes) expect(await refused(`${n.api}/status`)).toBe(true)
    expect(await refused(`${info.backup.api}/status`)).toBe(true)
    // Its temporary directory (deployment file, stores) is gone with it.
    expect(existsSync(info.deployment)).toBe(false)
  })

  test('--channels: a line of funded channels on consecutive ports from --port-base, a mediated payment, a table; Ctrl-C stops it', async () => {
    const base = await freePorts(3)
    const sluice = startSluice(['devnet', '--nodes', '3', '--channels', '--port-base', String(base)], tempDir())
    await sluice.waitForOutput(/Press Ctrl-C to stop\./, 120_000)
    const out = sluice.stdout()
    const apis = [...out.matchAll(/^(\d)\s+(0x[0-9a-fA-F]{40})\s+(\S+)$/gm)].map((m) => ({ index: Number(m[1]), address: m[2] as Address, api: m[3]! }))
    expect(apis.map((n) => n.api)).toEqual([0, 1, 2].map((i) => `http://127.0.0.1:${base + i}/api/v1`))
    expect(out).toMatch(/^TTT\s+0x[0-9a-fA-F]{40}$/m)
    expect(out).toMatch(/^RPC URL: http:\/\/127\.0\.0\.1:\d+$/m)
    expect(out).toMatch(/^Backup server: http:\/\/127\.0\.0\.1:\d+\/backup\/v1$/m)
    const token = /^TTT\s+(0x[0-9a-fA-F]{40})$/m.exec(out)![1]!
    const anvilPid = childProcesses(sluice.child.pid!).find((p) => p.name === 'anvil')!.pid

    const [n0, n1, n2] = apis as [(typeof apis)[0], (typeof apis)[0], (typeof apis)[0]]
    const channelsOf1 = (await call('GET', `${n1.api}/channels`)).body as { partner_address: string; total_deposit: string; balance: string; state: string }[]
    expect(channelsOf1.map((c) => c.partner_address).sort()).toEqual([n0.address, n2.address].sort())
    for (const c of channelsOf1) expect(c).toMatchObject({ state: 'opened', total_deposit: String(100n * 10n ** 18n), balance: String(100n * 10n ** 18n) })
    expect(((await call('GET', `${n0.api}/channels`)).body as unknown[]).length).toBe(1)

    const paid = await call('POST', `${n0.api}/payments/${token}/${n2.address}`, { amount: '5' })
    expect(paid.status).toBe(200)
    await eventually(async () => expect((await call('GET', `${n2.api}/channels/${token}/${n1.address}`)).body.balance).toBe(String(100n * 10n ** 18n + 5n)))

    sluice.child.kill('SIGINT')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(isAlive(anvilPid)).toBe(false)
    for (const n of apis) expect(await refused(`${n.api}/status`)).toBe(true)
  })

  test('--transport libp2p: the nodes talk through a relay it starts (its multiaddr in the --json line); a payment over REST; SIGTERM stops everything', async () => {
    const t0 = performance.now()
    const { sluice, info, anvilPid } = await startDevnetCommand([
      '--nodes',
      '2',
      '--channels',
      '--port-base',
      '0',
      '--storage',
      'memory',
      '--transport',
      'libp2p',
    ])
    const tReady = performance.now()
    // The documented keys, in their order, the relay before the backup server.
    expect(Object.keys(info)).toEqual(['rpcUrl', 'deployment', 'tokens', 'nodes', 'relay', 'backup'])
    expect(info.relay).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/ws\/p2p\/\w+$/)
    expect(sluice.stderr()).toContain(`libp2p relay at ${info.relay}`)

    const [a, b] = info.nodes as [DevnetJson['nodes'][0], DevnetJson['nodes'][0]]
    const deposit = String(100n * 10n ** 18n)
    expect((await call('GET', `${a.api}/channels/${info.tokens.TTT}/${b.address}`)).body).toMatchObject({
      state: 'opened',
      total_deposit: deposit,
      balance: deposit,
    })
    const paid = await call('POST', `${a.api}/payments/${info.tokens.TTT}/${b.address}`, { amount: '5', identifier: '11' })
    expect(paid).toMatchObject({ status: 200, body: { amount: '5', identifier: '11', target_address: b.address } })
    await eventually(async () =>
      expect((await call('GET', `${b.api}/channels/${info.tokens.TTT}/${a.address}`)).body.balance).toBe(String(100n * 10n ** 18n + 5n)),
    )
    expect((await call('GET', `${b.api}/payments/${info.tokens.TTT}`)).body).toEqual([
      expect.objectContaining({ event: 'EventPaymentReceivedSuccess', initiator: a.address, amount: '5', identifier: '11' }),
    ])
    const tPaid = performance.now()

    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(isAlive(anvilPid)).toBe(false)
    // The relay stopped with it: nothing listens on its port any more.
    const port = Number(/\/tcp\/(\d+)\//.exec(info.relay!)![1])
    expect(await refused(`http://127.0.0.1:${port}/`)).toBe(true)
    console.log(`devnet over libp2p: ready (2 nodes, channel) ${Math.round(tReady - t0)} ms, payment ${Math.round(tPaid - tReady)} ms`)
  })

  test("--monitoring: a monitoring service, funded and registered, on the nodes' relay (address and API in the --json line); SIGTERM stops it too", async () => {
    const { sluice, info } = await startDevnetCommand(['--nodes', '1', '--port-base', '0', '--storage', 'memory', '--transport', 'libp2p', '--monitoring'])
    expect(Object.keys(info)).toEqual(['rpcUrl', 'deployment', 'tokens', 'nodes', 'relay', 'backup', 'monitor'])
    const monitor = info.monitor!
    expect(monitor.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/)
    const status = (await call('GET', `${monitor.api}/status`)).body
    expect(status).toMatchObject({
      address: monitor.address,
      registration: { registered: true, url: monitor.api.replace(/\/api\/v1$/, '') },
      requests: { accepted: 0, refused_total: 0 },
      watching: { channels: 0, requests: 0 },
    })
    // Reached like the nodes: its libp2p identity is its key's.
    expect(status.peer_id).toMatch(/^16Uiu2H\w+$/)
    expect((await call('GET', `${monitor.api}/channels`)).body).toEqual([])
    const client = createPublicClient({ transport: http(info.rpcUrl) })
    expect(await client.getBalance({ address: monitor.address })).toBeGreaterThan(10n ** 18n)

    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(await refused(`${monitor.api}/status`)).toBe(true)
  })

  test("--pathfinding: a free pathfinding service on the nodes' relay, registered (address and URL in the --json line); the nodes tell it of their channels; SIGTERM stops it too", async () => {
    const { sluice, info } = await startDevnetCommand([
      '--nodes',
      '2',
      '--channels',
      '--port-base',
      '0',
      '--storage',
      'memory',
      '--transport',
      'libp2p',
      '--pathfinding',
    ])
    expect(Object.keys(info)).toEqual(['rpcUrl', 'deployment', 'tokens', 'nodes', 'relay', 'backup', 'pathfinding'])
    const pathfinding = info.pathfinding!
    expect(pathfinding.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const status = async () => (await call('GET', `${pathfinding.url}/api/v1/status`)).body
    expect(await status()).toMatchObject({ address: pathfinding.address, registration: { registered: true, url: pathfinding.url } })
    expect((await call('GET', `${pathfinding.url}/api/v1/info`)).body).toMatchObject({ price_info: 0, payment_address: pathfinding.address })
    // Each node's capacity and fee updates of the channel 0-1, acknowledged (docs/decisions/0073).
    await eventually(async () => {
      expect((await status()).network).toMatchObject({ channels: 1, nodes: 2 })
      for (const node of info.nodes) expect((await call('GET', `${node.api}/settings`)).body.pathfinding).toMatchObject({ announcements: { waiting: 0 } })
      expect((await status()).updates.accepted).toBeGreaterThanOrEqual(4)
    }, 30_000)
    sluice.child.kill('SIGTERM')
    expect(await sluice.exited).toEqual({ code: 0, signal: null })
    expect(await refused(`${pathfinding.url}/api/v1/status`)).toBe(true)
  })

  test('POST /shutdown stops that node only', async () => {
    const { sluice, info, anvilPid } = await startDevnetCommand(['--nodes', '2', '--port-base', '0', '--storage', 'memory'])
    const [a, b] = info.nodes as [DevnetJson['nodes'][0], DevnetJson['nodes'][0]]
    expect((await call('POST', `${a.api}/shutdown`)).body).toEqual({ status: 'shutdown' })
    await eventually(async () => expect(await refused(`${a.api}/status`)).toBe(true))
    expect((await call('GET', `${b.api}/status`)).body).toEqual({ status: 'ready' })
    sluice.child.kill('SIGTERM')
    expect((await sluice.exited).code).toBe(0)
    expect(isAlive(anvilPid)).toBe(false)
  })

  describe('bad options exit 2 with one line on stderr, leaving nothing behind', () => {
    let server: Server
    afterAll(() => server?.close())

    test.concurrent.each([
      [['--nodes', '0'], /--nodes must be an integer from 1 to 9, got "0"/],
      [['--nodes', '10'], /--nodes must be an integer from 1 to 9, got "10"/],
      [['--port-base', 'x'], /--port-base must be an integer/],
      [['--storage', 'disk'], /--storage must be level or memory, got "disk"/],
      [['--transport', 'nostr'], /--transport must be broadcast or libp2p, got "nostr"/],
      [['--channels=maybe'], /--channels must be true or false, got "maybe"/],
      [['--json', 'now'], /unexpected argument "now"/],
    ])('%j', async (args, message) => {
      const { code, stdout, stderr } = await runSluice(['devnet', ...args], tempDir())
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toMatch(/^sluice devnet: /)
      expect(stderr).toMatch(message)
      expect(stderr.split('\n')).toHaveLength(2)
    })

    test('an API port in use', async () => {
      server = createServer()
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      const port = (server.address() as { port: number }).port
      const sluice = startSluice(['devnet', '--nodes', '1', '--port-base', String(port)], tempDir())
      let anvilPid: number | undefined
      const watch = setInterval(() => (anvilPid ??= childProcesses(sluice.child.pid!).find((p) => p.name === 'anvil')?.pid), 20)
      const { code } = await sluice.exited
      clearInterval(watch)
      expect(code).toBe(2)
      expect(sluice.stderr()).toMatch(new RegExp(`^sluice devnet: 127\\.0\\.0\\.1:${port} is already in use[^\\n]*\\n$`))
      if (anvilPid) expect(isAlive(anvilPid)).toBe(false)
    })

    test('a backup server port in use: exits 2 before anvil starts', async () => {
      const busy = createServer()
      await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r))
      const port = (busy.address() as { port: number }).port
      try {
        const { code, stdout, stderr } = await runSluice(['devnet', '--nodes', '1', '--backup-port', String(port)], tempDir())
        expect(code).toBe(2)
        expect(stdout).toBe('')
        expect(stderr).toBe(`sluice devnet: port ${port} is already in use (choose another with --backup-port, or 0)\n`)
      } finally {
        busy.close()
      }
    })
  })
})

/** The first of `count` consecutive free ports from a random start (the test needs --port-base to be its own). */
async function freePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000)
    const servers: Server[] = []
    try {
      for (let i = 0; i < count; i++) {
        const s = createServer()
        await new Promise<void>((resolve, reject) => {
          s.once('error', reject)
          s.listen(base + i, '127.0.0.1', resolve)
        })
        servers.push(s)
      }
      return base
    } catch {
      // taken: try another
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
    }
  }
  throw new Error('no free ports')
}
