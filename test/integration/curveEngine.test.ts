import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { jsSecp256k1, type Secp256k1Engine } from '../../src/protocol/secp256k1.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

// The curve engine is the host's (NodeConfig.secp256k1), passed to all that signs or recovers: no engine of the core's
// own does the work behind it. Each node gets a counting engine of its own and a payment goes through both.

const [keyA, keyB] = [anvilKeys[7], anvilKeys[8]] as [Hex, Hex]
let net: Devnet
const nodes: SluiceNode[] = []

/** The JS engine, counting what goes through it. */
function counting(): { engine: Secp256k1Engine; signs: () => number; recoveries: () => number } {
  let signs = 0
  let recoveries = 0
  return {
    engine: {
      ...jsSecp256k1,
      sign: (hash, key) => {
        signs++
        return jsSecp256k1.sign(hash, key)
      },
      recover: (hash, signature) => {
        recoveries++
        return jsSecp256k1.recover(hash, signature)
      },
    },
    signs: () => signs,
    recoveries: () => recoveries,
  }
}

beforeAll(async () => {
  net = await startDevnet([keyA])
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await net?.stop()
})

describe('the curve engine its host gave a node', () => {
  test('signs what the node sends and recovers who signed what it receives: a payment goes through each node’s own', async () => {
    const curveA = counting()
    const curveB = counting()
    const a = await startNode(net, keyA, { secp256k1: curveA.engine })
    const b = await startNode(net, keyB, { secp256k1: curveB.engine })
    nodes.push(a, b)
    expect(a.client.config.secp256k1).toBe(curveA.engine)

    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 100n })
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.state).toBe('opened'))
    const before = { a: curveA.signs(), b: curveB.recoveries() }
    await sendPayment(a.client, { token: net.token, target: b.address, amount: 7n })
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)?.partnerEnd.balanceProof?.transferredAmount).toBe(7n))

    // A signed the LockedTransfer, RevealSecret and Unlock with its engine; B recovered their signers with its own.
    expect(curveA.signs() - before.a).toBeGreaterThanOrEqual(3)
    expect(curveB.recoveries() - before.b).toBeGreaterThanOrEqual(3)
    expect(curveB.signs()).toBeGreaterThan(0)
    expect(curveA.recoveries()).toBeGreaterThan(0)
  })
})
