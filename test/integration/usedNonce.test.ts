// Nonces that come back, between real nodes on anvil (docs/decisions/0029): a partner that signs a second message under
// a nonce it used gets it neither acknowledged nor applied, and leaves evidence and a critical notification, also
// after a restart; a node restored from a stale copy of its store stops with STALE_STATE when its own newer proof
// shows up on-chain, and does not start on that state again.
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { closeChannel, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { createNode } from '../../src/node/createNode.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { decodeMessage, encodeMessage, signMessage } from '../../src/protocol/messages/index.ts'
import type { LockedTransfer, Message, Signed } from '../../src/protocol/messages/types.ts'
import { openLevelStorage } from '../../src/storage/levelStorage.ts'
import type { StorageDump } from '../../src/storage/storage.ts'
import { devnetNodeConfig, startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

const [keyA, keyB, keyC, keyD] = [anvilKeys[4], anvilKeys[5], anvilKeys[6], anvilKeys[7]] as [Hex, Hex, Hex, Hex]
let net: Devnet
const running: SluiceNode[] = []

beforeAll(async () => {
  net = await startDevnet([keyA, keyB, keyC, keyD], 1000n)
}, 60_000)

afterAll(async () => {
  await Promise.all(running.map((n) => n.stop()))
  await net?.stop()
})

const start = async (key: Hex, options: Parameters<typeof startNode>[2] = {}) => {
  const node = await startNode(net, key, { durable: true, ...options })
  running.push(node)
  return node
}

/** Every message on the devnet's channel, decoded: every node sees every envelope there. */
function listen() {
  const seen: { from: Address; to: string; message: Signed<Message> }[] = []
  const channel = new BroadcastChannel(net.channelName)
  channel.onmessage = async (e: MessageEvent) => {
    const d = e.data as { kind?: string; from: Address; to: string; lines?: string[] }
    if (d.kind !== 'lines') return
    for (const line of d.lines ?? []) seen.push({ from: d.from, to: d.to, message: (await decodeMessage(jsSecp256k1, line)).message })
  }
  return {
    seen,
    post: (from: Address, to: Address, message: Signed<Message>) =>
      channel.postMessage({ kind: 'lines', from, to: to.toLowerCase(), lines: [encodeMessage(message)] }),
    close: () => channel.close(),
  }
}

const processedFor = (seen: ReturnType<typeof listen>['seen'], from: Address, id: bigint) =>
  seen.filter((s) => s.from === from && s.message.type === 'Processed' && s.message.message_identifier === id)

describe('a partner signing two messages under one nonce', () => {
  test('the second is not acknowledged nor applied; it is kept with both signatures, counted and raised as critical, also after a restart', async () => {
    const wire = listen()
    try {
      const a = await start(keyA)
      let b = await start(keyB)
      await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 100n })
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))
      await sendPayment(a.client, { token: net.token, target: b.address, amount: 10n, identifier: 1n })
      const original = await eventually(() => {
        const lt = wire.seen.find((s) => s.from === a.address && s.message.type === 'LockedTransfer')
        expect(lt).toBeDefined()
        return lt!.message as Signed<LockedTransfer>
      })
      await eventually(() => expect(processedFor(wire.seen, b.address, original.message_identifier)).not.toHaveLength(0))
      // The payment's Unlock applied too: the partner's end is at rest.
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd).toMatchObject({ nonce: 2n, locks: [] }))
      const before = b.client.channel(net.tokenNetwork, a.address)!

      // A signs another LockedTransfer under the nonce B applied (another message id, so nothing but the id differs).
      const { signature: _, ...plain } = original
      const variant = await signMessage(jsSecp256k1, keyA, { ...plain, message_identifier: original.message_identifier + 1000n })
      wire.post(a.address, b.address, variant)
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.partnerEnd.equivocations).toBe(1))
      const notifications = await b.services.notifications.list()
      expect(notifications).toContainEqual(
        expect.objectContaining({ id: 'partner_equivocation', urgency: 'critical', body: expect.stringContaining(a.address) }),
      )
      const evidence = (await b.client.store.events({})).map((e) => e.event).filter((e) => e.type === 'partnerEquivocated')
      expect(evidence).toEqual([
        expect.objectContaining({
          partner: a.address,
          channelId: before.id,
          nonce: original.nonce,
          applied: expect.objectContaining({ signature: original.signature }),
          second: expect.objectContaining({ signature: variant.signature }),
        }),
      ])
      // Nothing else changed, and a later payment still goes through: then no Processed for the variant was ever sent.
      expect({ ...b.client.channel(net.tokenNetwork, a.address)!.partnerEnd, equivocations: undefined }).toEqual({
        ...before.partnerEnd,
        equivocations: undefined,
      })
      await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier: 2n })
      expect(processedFor(wire.seen, b.address, variant.message_identifier)).toEqual([])

      // After a restart (nothing remembered in memory), the store tells the resend of the original from the variant.
      await b.stop()
      b = await start(keyB)
      const processedBefore = processedFor(wire.seen, b.address, original.message_identifier).length
      wire.post(a.address, b.address, original)
      await eventually(() => expect(processedFor(wire.seen, b.address, original.message_identifier).length).toBe(processedBefore + 1))
      wire.post(a.address, b.address, variant)
      await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.partnerEnd.equivocations).toBe(2))
      await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier: 3n })
      expect(processedFor(wire.seen, b.address, variant.message_identifier)).toEqual([])
      expect(await b.services.notifications.list()).toContainEqual(
        expect.objectContaining({ id: 'partner_equivocation', body: expect.stringContaining('2 time(s)') }),
      )
    } finally {
      wire.close()
    }
  }, 120_000)
})

describe('a node restored from a stale copy of its store', () => {
  test('stops with STALE_STATE when the partner closes with a newer proof of ours, signs nothing more, and does not start on that state again', async () => {
    let c = await start(keyC)
    const d = await start(keyD)
    await openChannelOnChain(c.client, { tokenNetwork: net.tokenNetwork, partner: d.address, totalDeposit: 100n })
    await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)?.state).toBe('opened'))
    await sendPayment(c.client, { token: net.token, target: d.address, amount: 10n, identifier: 1n })
    // A backup now: a consistent copy of the store, as GET /_state/export gives it.
    const backup: StorageDump = await c.client.store.exportDump()
    const backupNonce = c.client.channel(net.tokenNetwork, d.address)!.our.nonce
    await sendPayment(c.client, { token: net.token, target: d.address, amount: 7n, identifier: 2n })
    await eventually(() => expect(d.client.channel(net.tokenNetwork, c.address)!.partnerEnd.nonce).toBeGreaterThan(backupNonce))
    await c.stop()

    // The store is lost; the owner restores the backup into a fresh one and starts the node again.
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-stale-'))
    const config = { ...devnetNodeConfig(net, keyC), storage: (identity: Parameters<typeof openLevelStorage>[0]) => openLevelStorage(identity, { dataDir }) }
    c = await createNode({ ...config, import: backup })
    running.push(c)
    await c.run()
    expect(c.client.channel(net.tokenNetwork, d.address)!.our.nonce).toBe(backupNonce)

    // The partner closes with the newest proof of ours it holds: beyond what the restored state knows we signed.
    await closeChannel(d.client, { token: net.token, partner: c.address })
    const error = await c.halted
    expect(error).toMatchObject({ code: 'STALE_STATE', message: expect.stringMatching(/older than what it signed.*beyond the last nonce/) })
    await eventually(() => expect(c.status.status).toBe('stopped'))
    // It did not answer the close: no updateNonClosingBalanceProof, no settle, nothing signed after it knew.
    expect(c.state.stale).toMatchObject({ source: 'chain', ourNonce: backupNonce })

    // And it refuses to start on that state again.
    await expect(createNode(config)).rejects.toMatchObject({ code: 'STALE_STATE' })
    expect(privateKeyToAddress(keyC)).toBe(c.address)
  }, 120_000)
})
