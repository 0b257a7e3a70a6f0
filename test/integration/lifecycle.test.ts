import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Address } from 'viem'
import { createChainClient, createTransactionQueue, readTokenBalance, sendProtocolTransaction } from '../../src/chain/index.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { balance } from '../../src/protocol/channel/amounts.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { depositOnChain, openChannelOnChain, withdrawFromChannel } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'

const [keyA, keyB] = [anvilKeys[4], anvilKeys[5]]
let net: Devnet
let a: SluiceNode
let b: SluiceNode

beforeAll(async () => {
  net = await startDevnet([keyA, keyB], 1000n)
  ;[a, b] = await Promise.all([startNode(net, keyA), startNode(net, keyB)])
}, 60_000)

afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.stop()))
  await net?.stop()
})

const tokens = (n: SluiceNode) => readTokenBalance(n.client.chain, { token: net.token })
const own = (n: SluiceNode, partner: Address) => {
  const ch = n.client.channel(net.tokenNetwork, partner)!
  return balance(ch.our, ch.partnerEnd)
}
const mine = async (blocks: number) => {
  await createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).mine({ blocks })
}
const synced = async () => {
  const head = await a.client.chain.publicClient.getBlockNumber()
  await Promise.all([a.client.waitForBlock(head), b.client.waitForBlock(head)])
}

describe("a channel's whole life between two nodes on anvil", () => {
  test('withdraw with both signatures made by the nodes is accepted on-chain', async () => {
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 300n })
    await synced()
    await depositOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: a.address, totalDeposit: 200n })
    await synced()
    const before = await tokens(a)
    await withdrawFromChannel(a.client, { token: net.token, partner: b.address, totalWithdraw: 50n })
    await eventually(async () => expect(await tokens(a)).toBe(before + 50n))
    await synced()
    expect(a.client.channel(net.tokenNetwork, b.address)!.our.withdrawn).toBe(50n)
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.withdrawn).toBe(50n))
  })

  test('the partner closes with a stale proof; the node updates with the latest; the settle pays both exactly', async () => {
    await sendPayment(a.client, { token: net.token, target: b.address, amount: 20n })
    await eventually(() => expect(own(b, a.address)).toBe(220n))
    const staleOfA = b.client.channel(net.tokenNetwork, a.address)!.partnerEnd.balanceProof!
    await sendPayment(a.client, { token: net.token, target: b.address, amount: 15n })
    await sendPayment(b.client, { token: net.token, target: a.address, amount: 4n })
    await eventually(() => expect(own(b, a.address)).toBe(200n + 20n + 15n - 4n))
    await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)!.partnerEnd.balanceProof?.transferredAmount).toBe(4n))
    const channel = a.client.channel(net.tokenNetwork, b.address)!
    // B misbehaves: it stops, and its key closes with A's first proof (20) instead of the latest (35).
    await b.stop()
    const bChain = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: keyB, pollingInterval: 50 })
    await sendProtocolTransaction(
      { type: 'close', tokenNetwork: net.tokenNetwork, channelId: channel.id, partner: a.address, balanceProof: staleOfA },
      { queue: createTransactionQueue(bChain), signer: bChain, secretRegistry: net.deployment.contracts.SecretRegistry.address },
    )
    const [aBefore, bBefore] = [await tokens(a), await readTokenBalance(bChain, { token: net.token })]
    // A sees the close and answers with B's latest proof (4), on its own.
    await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)!.partnerEnd.onchainNonce).toBeGreaterThan(0n))
    // After the settle window A settles by itself; the chain pays by the proofs it holds: A's stale 20, B's 4.
    await mine(Number(channel.settleTimeout) + 2)
    await eventually(async () => expect(await tokens(a)).toBe(aBefore + (300n - 50n) - 20n + 4n), 20_000)
    expect(await readTokenBalance(bChain, { token: net.token })).toBe(bBefore + 200n + 20n - 4n)
    await eventually(() => expect(a.client.channel(net.tokenNetwork, b.address)).toBeUndefined())
  }, 60_000)
})
