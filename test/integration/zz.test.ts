import { afterAll, beforeAll, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
let net: Devnet; let a: SluiceNode; let b: SluiceNode
beforeAll(async () => {
  net = await startDevnet([anvilKeys[1], anvilKeys[2]])
  ;[a, b] = await Promise.all([startNode(net, anvilKeys[1]), startNode(net, anvilKeys[2])])
  a.notices.subscribe((e) => { if (e.type === 'error' || e.type === 'messageRejected') console.log('A', e) })
  b.notices.subscribe((e) => { if (e.type === 'error' || e.type === 'messageRejected') console.log('B', e) })
  await a.openChannel({ tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 10000n })
  await b.waitForBlock(await a.chain.publicClient.getBlockNumber())
}, 60_000)
afterAll(async () => { await a.stop(); await b.stop(); await net.stop() })
test('dbg', async () => {
  let done = 0
  const t0 = performance.now()
  const timer = setInterval(() => {
    const ch = a.channel(net.tokenNetwork, b.address)!
    console.log(`t=${Math.round(performance.now()-t0)} done=${done} locks=${ch.our.locks.length} nonce=${ch.our.nonce} initiators=${Object.keys(a.state.initiators).length} Bpartnernonce=${b.channel(net.tokenNetwork, a.address)?.partnerEnd.nonce} Atx=${(a as any).delivery.pending?.().length ?? '?'} Btx=${(b as any).delivery.pending?.().length ?? '?'}`)
  }, 1000)
  await Promise.allSettled(Array.from({ length: 300 }, () => a.pay({ tokenNetwork: net.tokenNetwork, target: b.address, amount: 1n }).then(() => done++, (e) => { done++; console.log('fail', String(e)) })))
  clearInterval(timer)
  console.log('all done', Math.round(performance.now() - t0))
}, 60_000)
