/**
 * One Sluice node in its own OS process, for crash tests: started by `spawnNodeProcess` (nodeProcesses.ts) with
 * `child_process.fork` of nodeProcessBoot.mjs, which loads this file through tsx. LevelDB storage, the libp2p
 * transport through the test's relay, one anvil.
 * It takes commands over the IPC channel and answers each; it also forwards every node notice. The parent
 * kills it with SIGKILL at will, and starts it again on the same data directory.
 */
import '../../../src/transport/libp2p/nodePolyfills.ts'
import type { Address, Hex } from 'viem'
import type { Deployment } from '../../../src/chain/deployment.ts'
import { createNode } from '../../../src/node/createNode.ts'
import { balance, locked, transferred } from '../../../src/protocol/channel/amounts.ts'
import type { Channel, ChannelEnd } from '../../../src/protocol/state/types.ts'
import { openLevelStorage } from '../../../src/storage/levelStorage.ts'
import { createLibp2pTransport } from '../../../src/transport/libp2p/libp2pTransport.ts'
import { openChannelOnChain } from '../../../src/node/actions/channels.ts'
import { sendPayment } from '../../../src/node/actions/payments.ts'

export type NodeProcessConfig = {
  rpcUrl: string
  deployment: Deployment
  privateKey: Hex
  dataDir: string
  relays: string[]
}

export type EndSummary = { deposit: bigint; nonce: bigint; transferred: bigint; locked: bigint; locks: number; locksroot: Hex | null }
export type ChannelSummary = { id: bigint; state: string; our: EndSummary; partner: EndSummary; ourBalance: bigint; partnerBalance: bigint }

export type NodeCommand =
  | { cmd: 'openChannel'; tokenNetwork: Address; partner: Address; totalDeposit: bigint }
  | { cmd: 'waitForBlock'; block: bigint }
  | { cmd: 'pay'; tokenNetwork: Address; target: Address; amount: bigint; paymentId: bigint }
  | { cmd: 'channel'; tokenNetwork: Address; partner: Address }
  | { cmd: 'history' }
  | { cmd: 'debug' }
  | { cmd: 'stop' }

/** What the child sends: `ready` once the node has started, answers to commands, and every notice. */
export type NodeProcessMessage =
  | { type: 'ready'; address: Address; startMs: number }
  | { type: 'answer'; id: number; ok: true; result: unknown }
  | { type: 'answer'; id: number; ok: false; error: string }
  | { type: 'notice'; notice: { type: string } & Record<string, unknown> }

const endSummary = (end: ChannelEnd): EndSummary => ({
  deposit: end.deposit,
  nonce: end.nonce,
  transferred: transferred(end),
  locked: locked(end),
  locks: end.locks.length,
  locksroot: end.balanceProof?.locksroot ?? null,
})

const channelSummary = (c: Channel): ChannelSummary => ({
  id: c.id,
  state: c.state,
  our: endSummary(c.our),
  partner: endSummary(c.partnerEnd),
  ourBalance: balance(c.our, c.partnerEnd),
  partnerBalance: balance(c.partnerEnd, c.our),
})

const send = (message: NodeProcessMessage) => process.send?.(message)

async function main() {
  const started = performance.now()
  const config = JSON.parse(process.env.SLUICE_NODE_CONFIG!) as NodeProcessConfig
  const node = await createNode({
    rpc: config.rpcUrl,
    deployment: config.deployment,
    key: config.privateKey,
    storage: (identity) => openLevelStorage(identity, { dataDir: config.dataDir }),
    transport: () =>
      createLibp2pTransport({
        privateKey: config.privateKey,
        relays: config.relays,
        announceIntervalMs: 5_000,
        // SLUICE_TRACE=1: the transport's events on stdout, with the wall clock (to line up several processes).
        ...(process.env.SLUICE_TRACE
          ? {
              log: (e) =>
                console.log(
                  Date.now(),
                  JSON.stringify(e, (_k, v) => (v instanceof Error ? v.message : v)),
                ),
            }
          : {}),
      }),
    confirmations: 0,
    pollingInterval: 50,
    defaultRevealTimeout: 10,
    defaultSettleTimeout: 40,
    backoff: { initialMs: 100, maxMs: 1000 },
  })
  await node.run()
  node.notices.subscribe((notice) => {
    // Errors and statuses are for logs; the rest are protocol events the test reads.
    if (notice.type === 'error') console.error(`[${node.address}] ${notice.where}:`, notice.error)
    else if (notice.type !== 'status') send({ type: 'notice', notice: notice as unknown as { type: string } & Record<string, unknown> })
  })

  const run = async (command: NodeCommand): Promise<unknown> => {
    switch (command.cmd) {
      case 'openChannel':
        return channelSummary(
          await openChannelOnChain(node.client, { tokenNetwork: command.tokenNetwork, partner: command.partner, totalDeposit: command.totalDeposit }),
        )
      case 'waitForBlock':
        await node.client.waitForBlock(command.block)
        return null
      case 'pay': {
        const token = node.state.tokenNetworks[command.tokenNetwork]!.token
        const result = await sendPayment(node.client, { token, target: command.target, amount: command.amount, identifier: command.paymentId })
        return { paymentId: result.identifier, amount: result.amount }
      }
      case 'channel': {
        const channel = node.client.channel(command.tokenNetwork, command.partner)
        return channel ? channelSummary(channel) : null
      }
      case 'history': {
        // The payment history is the store's, not part of the node's public surface yet.
        const storage = (node as unknown as { storage: { payments(q: object): Promise<{ event: string; identifier: bigint; amount: bigint }[]> } }).storage
        return (await storage.payments({})).map((p) => ({ event: p.event, identifier: p.identifier, amount: p.amount }))
      }
      case 'debug': {
        // For failure messages: what the node still waits for, and what it holds of each payment.
        const delivery = (node as unknown as { delivery: { pending(): { key: string; recipient: string; message: { type: string } }[]; stats(): unknown } })
          .delivery
        const { initiators, mediators, targets } = node.state
        return {
          pending: delivery.pending().map((r) => `${r.message.type} → ${r.recipient} (${r.key})`),
          stats: delivery.stats(),
          payments: JSON.stringify({ initiators, mediators, targets }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
        }
      }
      case 'stop':
        await node.stop()
        setImmediate(() => process.exit(0))
        return null
    }
  }

  process.on('message', (message: { id: number; command: NodeCommand }) => {
    run(message.command).then(
      (result) => send({ type: 'answer', id: message.id, ok: true, result }),
      (error: unknown) =>
        send({ type: 'answer', id: message.id, ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }),
    )
  })
  send({ type: 'ready', address: node.address, startMs: performance.now() - started })
}

// The parent went away (it crashed, or the test ended without stopping us): so do we.
process.on('disconnect', () => process.exit(0))
main().catch((error) => {
  console.error('node process failed to start:', error)
  process.exit(1)
})
