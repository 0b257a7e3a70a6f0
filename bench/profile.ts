// The CPU profile of one direct payment: two nodes in this process (LevelDB, sync writes) on anvil, sampled by
// V8's profiler over many sequential payments, self time grouped by what the code is.
import { anvilKeys } from '../src/devnet/anvil.ts'
import { startDevnet, startNode } from '../test/integration/support/devnet.ts'
import { openChannelOnChain } from '../src/node/actions/channels.ts'
import { sendPayment } from '../src/node/actions/payments.ts'
import { nodeCategoryTotals, startCpuProfile } from './cpuProfile.ts'

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
    const stop = await startCpuProfile()
    const started = performance.now()
    for (let i = 0; i < count; i++) await pay()
    const wall = (performance.now() - started) / count
    const profile = await stop()
    // Self time by what the code is (bench/cpuProfile.ts, shared with the traces' summaries).
    const totals = nodeCategoryTotals(profile)
    const rows: Record<string, string> = { 'wall time per payment (sequential)': `${wall.toFixed(2)} ms` }
    for (const [key, micros] of [...totals].sort((x, y) => y[1] - x[1])) rows[key] = `${(micros / 1000 / count).toFixed(2)} ms`
    return rows
  } finally {
    await a.stop()
    await b.stop()
    await net.stop()
  }
}
