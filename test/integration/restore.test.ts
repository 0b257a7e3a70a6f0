// The off-browser backup, end to end on anvil (docs/decisions/0034): a node with a backup URL pushes sealed copies to a
// real backup server as it pays; its LevelDB directory is wiped; started again with the same key and the URL, it
// restores the newest copy, asks its partner for the latest state (the copy lagged behind what it signed), adopts it,
// and pays again without signing any nonce twice. A copy older than what the chain shows of ours is refused.
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { serveBackups, type ServedBackups } from '../../src/cli/backupServer.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { closeChannel, openChannelOnChain, withdrawFromChannel } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import { createNode } from '../../src/node/createNode.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { decodeMessage } from '../../src/protocol/messages/index.ts'
import { takesNonce } from '../../src/protocol/channel/usedNonce.ts'
import { packMessage } from '../../src/protocol/messages/pack.ts'
import { openLevelStorage } from '../../src/storage/levelStorage.ts'
import { bytesToHex } from 'viem'
import { devnetNodeConfig, startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

const [keyA, keyB, keyC, keyD, keyE] = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[4], anvilKeys[5]] as [Hex, Hex, Hex, Hex, Hex]
/** The pair of the test without a backup server (the others' channels stay on this chain). */
const [keyF, keyG] = [anvilKeys[6], anvilKeys[7]] as [Hex, Hex]
let net: Devnet
let backups: ServedBackups
const running: SluiceNode[] = []
const dirs: string[] = []

beforeAll(async () => {
  net = await startDevnet([keyA, keyB, keyC, keyD, keyF], 1000n)
  const dir = await mkdtemp(join(tmpdir(), 'sluice-backups-'))
  dirs.push(dir)
  backups = await serveBackups({ dataDir: dir, host: '127.0.0.1', port: 0, limits: { pushesPerMinute: 100_000, requestsPerMinute: 100_000 } })
}, 60_000)

afterAll(async () => {
  await Promise.all(running.map((n) => n.stop()))
  await backups?.close(100)
  await net?.stop()
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

/** A node with its own LevelDB directory (wiped by deleting it) and the backup server. */
async function startOwn(key: Hex, dataDir: string, backupUrl: string = backups.url) {
  const node = await createNode({ ...devnetNodeConfig(net, key), storage: (identity) => openLevelStorage(identity, { dataDir }), backupUrl })
  running.push(node)
  return node
}

/** Every nonce message the devnet's channel carried, by its signer, channel and nonce: the signed bytes seen under each. */
function wireNonces() {
  const seen = new Map<string, Set<string>>()
  const channel = new BroadcastChannel(net.channelName)
  channel.onmessage = async (e: MessageEvent) => {
    const d = e.data as { kind?: string; lines?: string[] }
    if (d.kind !== 'lines') return
    for (const line of d.lines ?? []) {
      const { message, signer } = await decodeMessage(jsSecp256k1, line)
      if (!takesNonce(message)) continue
      const key = `${signer}:${message.channel_identifier}:${message.nonce}`
      seen.set(key, (seen.get(key) ?? new Set()).add(bytesToHex(packMessage(message))))
    }
  }
  return { twice: () => [...seen].filter(([, s]) => s.size > 1).map(([k]) => k), close: () => channel.close() }
}

const backupOf = (node: SluiceNode) => node.services.backup!.status()

/** A and B of the first test, for the last one: A restored and synced, B its partner. */
let first: { a: SluiceNode; b: SluiceNode } | undefined
/** C's store of the second test, for the third. */
let dirC = ''

describe('a node with a backup server', () => {
  test('pushes copies as it pays, batched, without slowing its payments; wiped, it restores, syncs with its partner and pays again', async () => {
    const wire = wireNonces()
    try {
      const dirA = await mkdtemp(join(tmpdir(), 'sluice-restore-a-'))
      dirs.push(dirA)
      let a = await startOwn(keyA, dirA)
      await a.run()
      const b = await startNode(net, keyB, { durable: true })
      running.push(b)
      await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 500n })
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))

      // Payments back to back: the copies follow, batched (fewer pushes than payments), and end at the last state.
      const pushesBefore = backupOf(a).pushes
      const started = performance.now()
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => sendPayment(a.client, { token: net.token, target: b.address, amount: 1n, identifier: BigInt(i + 1) })),
      )
      await eventually(() => expect(backupOf(a)).toMatchObject({ behind: false, lastPush: { version: String(a.client.recoveryPoint().seq) } }))
      // One push at a time, at most one start per 200 ms: however long the payments took, fewer copies than changes.
      const pushes = backupOf(a).pushes - pushesBefore
      expect(pushes).toBeGreaterThan(0)
      expect(pushes).toBeLessThanOrEqual(Math.ceil((performance.now() - started) / 200) + 1)
      expect(BigInt(backupOf(a).lastPush!.version) - BigInt(backupOf(a).restored?.version ?? 0)).toBeGreaterThan(BigInt(pushes))
      expect(backupOf(a).lastError).toBeUndefined()

      // The copies lag: the server goes away, the node pays on (the pushes fail and are retried), and is wiped.
      const served = backups
      const url = served.url
      await served.close(100)
      for (let i = 21n; i <= 23n; i++) await sendPayment(a.client, { token: net.token, target: b.address, amount: 2n, identifier: i })
      await eventually(() => expect(backupOf(a).lastError?.code).toMatch(/BACKUP_UNREACHABLE|BACKUP_TIMEOUT/))
      const lagging = BigInt(backupOf(a).lastPush!.version)
      await a.stop()
      await rm(dirA, { recursive: true, force: true })
      backups = await serveBackups({ dataDir: dirs[0]!, host: '127.0.0.1', port: Number(new URL(url).port), limits: { pushesPerMinute: 100_000 } })

      // Started again on an empty directory with the same key: the newest copy comes back, then the partner's sync.
      const notices: NodeNotice[] = []
      a = await startOwn(keyA, dirA)
      a.notices.subscribe((n) => notices.push(n))
      expect(backupOf(a).restored).toMatchObject({ version: String(lagging) })
      const restored = a.client.channel(net.tokenNetwork, b.address)!
      expect(restored).toMatchObject({ state: 'opened', waitingSync: true })
      expect(restored.our.balanceProof!.transferredAmount).toBe(20n)
      await a.run()
      await eventually(() => expect(notices).toContainEqual(expect.objectContaining({ type: 'channelSynced', adopted: { ours: true, partner: false } })))
      const synced = a.client.channel(net.tokenNetwork, b.address)!
      expect(synced.waitingSync).toBeUndefined()
      expect(synced.our.balanceProof!.transferredAmount).toBe(26n)
      expect(synced.our.nonce).toBe(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.nonce)

      // It pays again, on from the nonce its partner holds: B receives it, and no nonce carried two messages.
      await sendPayment(a.client, { token: net.token, target: b.address, amount: 4n, identifier: 24n })
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.balanceProof!.transferredAmount).toBe(30n))
      expect(wire.twice()).toEqual([])
      // The restored node pushes its own copies on from the restored version.
      await eventually(() => expect(BigInt(backupOf(a).lastPush?.version ?? '0')).toBeGreaterThan(lagging))
      await eventually(() => expect(backupOf(a).behind).toBe(false))
      first = { a, b }
    } finally {
      wire.close()
    }
  }, 180_000)

  test('a restart with no change since its last copy pushes the same version again without a conflict', async () => {
    const dirE = await mkdtemp(join(tmpdir(), 'sluice-restore-e-'))
    dirs.push(dirE)
    let e = await startOwn(keyE, dirE)
    await e.run()
    await eventually(() => expect(backupOf(e)).toMatchObject({ behind: false, lastPush: { version: String(e.client.recoveryPoint().seq) } }))
    await e.stop()
    e = await startOwn(keyE, dirE)
    await e.run()
    // Sealed again (a fresh IV), the copy is other bytes under the version the server holds: 409 BACKUP_CONFLICT, which
    // the node settles by opening the server's copy and finding its own state in it.
    await eventually(() => expect(backupOf(e)).toMatchObject({ behind: false, failures: 0, lastPush: { version: String(e.client.recoveryPoint().seq) } }))
    expect(backupOf(e).lastError).toBeUndefined()
    await e.stop()
  }, 60_000)

  test('a backup server that never answers does not hold a payment up, and the failure is reported', async () => {
    // A TCP server that accepts and never answers: every push waits for its deadline.
    const silent: Server = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    try {
      dirC = await mkdtemp(join(tmpdir(), 'sluice-restore-c-'))
      dirs.push(dirC)
      // The store is empty, so the start first asks for a copy: a silent server makes it fail in time (BACKUP_TIMEOUT).
      await expect(
        createNode({
          ...devnetNodeConfig(net, keyC),
          storage: (identity) => openLevelStorage(identity, { dataDir: dirC }),
          backupUrl: `http://127.0.0.1:${port}/backup/v1`,
          backup: { timeoutMs: 500 },
        }),
      ).rejects.toMatchObject({ code: 'BACKUP_TIMEOUT' })
      // Once it has a store, it starts without the server, and its payments do not wait for it.
      const first = await startOwn(keyC, dirC, backups.url)
      await first.run()
      await first.stop()
      const c = await createNode({
        ...devnetNodeConfig(net, keyC),
        storage: (identity) => openLevelStorage(identity, { dataDir: dirC }),
        backupUrl: `http://127.0.0.1:${port}/backup/v1`,
        backup: { timeoutMs: 60_000, stopTimeoutMs: 300 },
      })
      running.push(c)
      await c.run()
      const d = await startNode(net, keyD)
      running.push(d)
      await openChannelOnChain(c.client, { tokenNetwork: net.tokenNetwork, partner: d.address, totalDeposit: 100n })
      await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)?.state).toBe('opened'))
      const started = performance.now()
      for (let i = 1n; i <= 5n; i++) await sendPayment(c.client, { token: net.token, target: d.address, amount: 1n, identifier: i })
      const perPayment = (performance.now() - started) / 5
      // A push is under way and has no answer (it would for a minute): the payments went as fast as without it.
      expect(backupOf(c)).toMatchObject({ behind: true, pushes: 0 })
      expect(perPayment).toBeLessThan(1_000)
      // The stop gives the last push its short bound and no more.
      const stopping = performance.now()
      await c.stop()
      expect(performance.now() - stopping).toBeLessThan(5_000)
    } finally {
      silent.close()
    }
  }, 120_000)

  test('refuses to go on from a copy older than what the chain shows of ours: STALE_STATE', async () => {
    // C and D from the test before: C's store goes to the server, then C pays on without it, and loses its store.
    let c = await startOwn(keyC, dirC)
    await c.run()
    const d = running.find((n) => n.address !== c.address && n.client.channel(net.tokenNetwork, c.address))!
    await eventually(() => expect(backupOf(c)).toMatchObject({ behind: false }))
    const copied = c.client.channel(net.tokenNetwork, d.address)!.our.nonce
    await c.stop()
    c = await createNode({ ...devnetNodeConfig(net, keyC), storage: (identity) => openLevelStorage(identity, { dataDir: dirC }) })
    running.push(c)
    await c.run()
    await sendPayment(c.client, { token: net.token, target: d.address, amount: 3n, identifier: 100n })
    await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)!.partnerEnd.nonce).toBeGreaterThan(copied))
    await c.stop()
    await rm(dirC, { recursive: true, force: true })

    // The partner closes with the newest proof of ours before the restored node could ask it.
    await closeChannel(d.client, { token: net.token, partner: c.address })
    c = await startOwn(keyC, dirC)
    expect(c.client.channel(net.tokenNetwork, d.address)!.our.nonce).toBe(copied)
    await c.run().catch(() => {})
    expect(await c.halted).toMatchObject({ code: 'STALE_STATE', message: expect.stringMatching(/beyond the last nonce/) })
    // `halted` is heard as the node begins to stop; its store is closed once it has.
    await eventually(() => expect(c.status.status).toBe('stopped'))
    await expect(startOwn(keyC, dirC)).rejects.toMatchObject({ code: 'STALE_STATE' })
  }, 120_000)

  test('restored while its partner is offline, a channel answers 409 CHANNEL_NOT_SYNCED and raises a notification until the partner is back', async () => {
    const { a: a0, b: b0 } = first!
    await b0.stop()
    await a0.stop()
    const dirA = await mkdtemp(join(tmpdir(), 'sluice-restore-wait-'))
    dirs.push(dirA)
    const a = await startOwn(keyA, dirA)
    await a.run()
    const channel = a.client.channel(net.tokenNetwork, b0.address)!
    expect(channel.waitingSync).toBe(true)
    const partner = channel.partner
    await expect(withdrawFromChannel(a.client, { token: net.token, partner, totalWithdraw: 1n })).rejects.toMatchObject({ code: 'CHANNEL_NOT_SYNCED' })
    await expect(closeChannel(a.client, { token: net.token, partner })).rejects.toMatchObject({ code: 'CHANNEL_NOT_SYNCED' })
    await expect(sendPayment(a.client, { token: net.token, target: partner, amount: 1n, identifier: 500n })).rejects.toMatchObject({
      code: 'CHANNEL_NOT_SYNCED',
    })
    expect(await a.services.notifications.list()).toContainEqual(
      expect.objectContaining({ id: 'channels_waiting_sync', body: expect.stringContaining(partner) }),
    )
    // The partner comes back: the request (retried until delivered) gets its answer, and the channel carries payments.
    const b = await startNode(net, keyB, { durable: true })
    running.push(b)
    await eventually(() => expect(a.client.channel(net.tokenNetwork, partner)!.waitingSync).toBeUndefined(), 30_000)
    expect(await a.services.notifications.list()).not.toContainEqual(expect.objectContaining({ id: 'channels_waiting_sync' }))
    await sendPayment(a.client, { token: net.token, target: partner, amount: 1n, identifier: 501n })
  }, 120_000)
})

describe('a node without a backup server', () => {
  // Safari's 7-day cap, a person clearing site data: the store is gone, the dApp still gives the same key. Nothing
  // says which nonces the node signed, so its channels wait for their partners' sync as after a restore of no copy.
  test('wiped, with the same key: its channels wait for the partner’s sync, then it pays on from the partner’s nonce, never signing one twice', async () => {
    const wire = wireNonces()
    try {
      const dirF = await mkdtemp(join(tmpdir(), 'sluice-wiped-f-'))
      dirs.push(dirF)
      const startF = async () => {
        const node = await createNode({ ...devnetNodeConfig(net, keyF), storage: (identity) => openLevelStorage(identity, { dataDir: dirF }) })
        running.push(node)
        return node
      }
      let c = await startF()
      await c.run()
      const d = await startNode(net, keyG, { durable: true })
      running.push(d)
      await openChannelOnChain(c.client, { tokenNetwork: net.tokenNetwork, partner: d.address, totalDeposit: 500n })
      await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)?.state).toBe('opened'))
      for (let i = 1n; i <= 5n; i++) await sendPayment(c.client, { token: net.token, target: d.address, amount: 3n, identifier: i })
      await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)!.partnerEnd.balanceProof!.transferredAmount).toBe(15n))
      await c.stop()
      await rm(dirF, { recursive: true, force: true })

      c = await startF()
      const wiped = c.client.channel(net.tokenNetwork, d.address)
      await c.run()
      // Found on chain, of a life the store forgot: it waits, and signs nothing under its nonce until D answers.
      expect(wiped?.waitingSync ?? c.client.channel(net.tokenNetwork, d.address)!.waitingSync).toBe(true)
      await eventually(() => expect(c.client.channel(net.tokenNetwork, d.address)!.waitingSync).toBeUndefined(), 30_000)
      const synced = c.client.channel(net.tokenNetwork, d.address)!
      expect(synced.our.balanceProof!.transferredAmount).toBe(15n)
      expect(synced.our.nonce).toBe(d.client.channel(net.tokenNetwork, c.address)!.partnerEnd.nonce)
      await sendPayment(c.client, { token: net.token, target: d.address, amount: 4n, identifier: 6n })
      await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)!.partnerEnd.balanceProof!.transferredAmount).toBe(19n))
      expect(wire.twice()).toEqual([])

      // Wiped again while G closes with F's latest proof: the chain shows a proof of F's beyond what the empty store
      // knows, which is no sign of a stale state here (the store forgot, and says so): F starts, and sees it closed.
      await c.stop()
      await rm(dirF, { recursive: true, force: true })
      await closeChannel(d.client, { token: net.token, partner: c.address })
      c = await startF()
      await c.run()
      await eventually(() => expect(c.client.channel(net.tokenNetwork, d.address)?.state).toBe('closed'))
      await eventually(() => expect(c.client.channel(net.tokenNetwork, d.address)!.waitingSync).toBeUndefined(), 30_000)
      expect(c.client.channel(net.tokenNetwork, d.address)!.our.balanceProof!.transferredAmount).toBe(19n)
    } finally {
      wire.close()
    }
  }, 120_000)
})
