// The CPU profile of one direct payment: two nodes in this process (LevelDB, sync writes) on anvil, sampled by
// V8's profiler over many sequential payments, self time grouped by what the code is.
import { Session } from 'node:inspector/promises'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { startDevnet, startNode } from '../test/integration/support/devnet.ts'
import { openChannelOnChain } from '../src/node/actions/channels.ts'
import { sendPayment } from '../src/node/actions/payments.ts'

type ProfileNode = { id: number; callFrame: { functionName: string; url: string }; children?: number[] }

/** Which part of the stack a sampled frame belongs to. */
function category({ callFrame: { url, functionName } }: ProfileNode): string {
  if (functionName === '(idle)') return 'idle (waiting for fsync, timers, I/O)'
  if (functionName === '(garbage collector)') return 'garbage collector'
  if (functionName === '(program)') return 'V8 (program)'
  // Both WASM modules are ours: libsecp256k1 (tiny-secp256k1) and Keccak (hash-wasm); keccak's is tiny.
  if (url.startsWith('wasm://')) return 'WASM: keccak (and secp256k1 where the native addon is missing)'
  if (/node_modules\/secp256k1\//.test(url)) return 'secp256k1 sign + recover (native libsecp256k1)'
  if (/tiny-secp256k1|hash-wasm|src\/protocol\/(secp256k1|keccak|signature)/.test(url)) return 'crypto glue (JS side of the WASM calls)'
  if (/classic-level|abstract-level|level-transcoder|src\/storage/.test(url)) return 'storage (LevelDB, records, encoding)'
  if (/src\/protocol/.test(url)) return 'protocol core (transition, packing, decoding)'
  if (/src\/transport/.test(url)) return 'delivery and transport'
  if (/src\/node|src\/chain/.test(url)) return 'runtime (engine, node, chain watcher)'
  if (/viem|@noble/.test(url)) return 'viem / noble (hex and address utilities)'
  if (url === '' || url.startsWith('node:')) return 'Node natives (JSON, structured clone, BroadcastChannel, timers)'
  return 'other'
}

export async function profilePayment(count = 300): Promise<Record<string, string>> {
  const keys = [anvilKeys[1]!, anvilKeys[2]!] as const
  const net = await startDevnet(keys)
  const a = await startNode(net, keys[0], { durable: true })
  const b = await startNode(net, keys[1], { durable: true })
  try {
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 10n ** 20n })
    await b.client.waitForBlock(a.state.blockNumber)
    const pay = () => sendPayment(a.client, { token: net.token, target: b.address, amount: 1n })
    for (let i = 0; i < 50; i++) await pay()
    const session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
    await session.post('Profiler.start')
    const started = performance.now()
    for (let i = 0; i < count; i++) await pay()
    const wall = (performance.now() - started) / count
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    const byId = new Map((profile.nodes as ProfileNode[]).map((n) => [n.id, n]))
    const parentOf = new Map<number, ProfileNode>()
    for (const n of byId.values()) for (const child of n.children ?? []) parentOf.set(child, n)
    // A native addon's frame has no URL: it counts for the JS that called it (secp256k1, LevelDB).
    const owner = (n: ProfileNode): ProfileNode => {
      if (n.callFrame.url !== '' || n.callFrame.functionName.startsWith('(')) return n
      const parent = parentOf.get(n.id)
      return parent && /node_modules\/(secp256k1|classic-level)\//.test(parent.callFrame.url) ? parent : n
    }
    const totals = new Map<string, number>()
    profile.samples!.forEach((id, i) => {
      const key = category(owner(byId.get(id)!))
      totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas![i] ?? 0))
    })
    const rows: Record<string, string> = { 'wall time per payment (sequential)': `${wall.toFixed(2)} ms` }
    for (const [key, micros] of [...totals].sort((x, y) => y[1] - x[1])) rows[key] = `${(micros / 1000 / count).toFixed(2)} ms`
    return rows
  } finally {
    await a.stop()
    await b.stop()
    await net.stop()
  }
}
