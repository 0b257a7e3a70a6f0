// Real reorgs on a private anvil that mines only when told (anvil_reorg replaces the last blocks, dropping their
// transactions; anvil_rollback removes them): node A follows the chain with 3 confirmations. An event in a block
// replaced before it is confirmed (a deposit, a secret registration, the partner's close) is never acted upon; the
// same event mined again in the new chain is acted upon once; a reorg of blocks A has synced is reported, while it
// runs and when it happened while A was down (docs/decisions/0009).
import { bytesToHex, sha256, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient, type ChainClient } from '../../src/chain/chainClient.ts'
import { readParticipantInfo } from '../../src/chain/reads.ts'
import { setTotalDeposit } from '../../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue } from '../../src/chain/transactionQueue.ts'
import { sendProtocolTransaction } from '../../src/chain/transactions.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient, type DevnetClient } from '../../src/devnet/devnetClient.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import { createNode } from '../../src/node/createNode.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { devnetNodeConfig, startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

const [keyA, keyB] = [anvilKeys[1], anvilKeys[2]]
const confirmations = 3
let net: Devnet
let devnet: DevnetClient
let a: SluiceNode
let b: SluiceNode
let chainOfB: ChainClient
let deployer: ChainClient
let channelId: bigint
const noticesOfA: NodeNotice[] = []

const startA = async () => {
  const node = await createNode(devnetNodeConfig(net, keyA, { durable: true, confirmations, pollingInterval: 50 }))
  node.notices.subscribe((n) => void noticesOfA.push(n))
  await node.run()
  return node
}

beforeAll(async () => {
  net = await startDevnet([keyA, keyB])
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  chainOfB = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: keyB, pollingInterval: 20 })
  deployer = await createChainClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 20 })
  ;[a, b] = await Promise.all([startA(), startNode(net, keyB, { confirmations, pollingInterval: 50 })])
  // The nodes' own actions wait for their confirmations: blocks come on their own while the channel is made.
  const miner = setInterval(() => void devnet.mine({ blocks: 1 }), 100)
  try {
    channelId = (await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 1000n })).id
    await eventually(() => expect(b.client.channel(net.tokenNetwork, a.address)).toBeDefined())
    await depositOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: a.address, totalDeposit: 100n })
  } finally {
    clearInterval(miner)
  }
  // From now on a block is mined only when a test says so.
  await devnet.setAutomine(false)
  await synced((await devnet.getBlockNumber()) - BigInt(confirmations))
}, 60_000)

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await net?.stop()
})

const latest = () => devnet.getBlockNumber()
const mine = (blocks: number) => devnet.mine({ blocks })
/** anvil_reorg: the last `depth` blocks are replaced by as many empty ones (their transactions are gone). */
const reorg = (depth: number) => devnet.request({ method: 'anvil_reorg', params: [depth, []] } as never)
/** Until A has synced `block` (its confirmed head has reached it). */
const synced = (block: bigint) => eventually(() => expect(a.state.blockNumber).toBeGreaterThanOrEqual(block), 10_000)
/** Time for A to act on anything it has seen: many of its polls. */
const afterPolls = () => new Promise((r) => setTimeout(r, 500))
const pendingNonce = (address: Address) => devnet.getTransactionCount({ address, blockTag: 'pending' })
const channelOfA = () => a.client.channel(net.tokenNetwork, b.address)!
const errorsOfA = (where: string) => noticesOfA.filter((n) => n.type === 'error' && n.where === where)

/**
 * Sends with a queue of its own (the account's nonce goes back with a reorg), mining a block whenever one waits, and
 * stops that queue once the transaction is mined: the reorg then removes it for good, as it would another party's
 * transaction that nobody sends again (a queue left running would send it again: chainFaults.test.ts).
 */
async function mined<T extends { receipt: { blockNumber: bigint } }>(
  send: (queue: ReturnType<typeof createTransactionQueue>) => Promise<T>,
  chain: ChainClient,
) {
  let done = false
  const queue = createTransactionQueue(chain)
  const sent = send(queue).finally(() => (done = true))
  while (!done) {
    const pool = (await devnet.request({ method: 'txpool_status' } as never)) as { pending: Hex }
    if (BigInt(pool.pending) > 0n) await mine(1)
    await new Promise((r) => setTimeout(r, 20))
  }
  await queue.stop()
  return sent
}

/** The chain events A stored of `name` from `fromBlock` on. */
async function storedEvents(address: Address, name: string, fromBlock: bigint) {
  return (await a.client.store.chainEvents({ address, fromBlock, toBlock: await latest() })).filter((e) => e.name === name)
}

describe('reorgs on a private anvil, A following with 3 confirmations', () => {
  test('a deposit in blocks replaced before their confirmations is never counted; mined again, it is counted once', async () => {
    const before = channelOfA().partnerEnd.deposit
    const deposit = (queue: ReturnType<typeof createTransactionQueue>) =>
      setTotalDeposit(chainOfB, queue, { tokenNetwork: net.tokenNetwork, channelId, partner: a.address, totalDeposit: 300n })
    const first = await mined(deposit, chainOfB)
    await mine(1)
    await afterPolls()
    expect(channelOfA().partnerEnd.deposit).toBe(before)

    await reorg(2)
    expect((await readParticipantInfo(chainOfB, { tokenNetwork: net.tokenNetwork, channelId, participant: b.address, partner: a.address })).deposit).toBe(
      before,
    )
    await mine(confirmations + 2)
    await synced(first.receipt.blockNumber + 1n)
    expect(channelOfA().partnerEnd.deposit).toBe(before)
    expect(await storedEvents(net.tokenNetwork, 'ChannelNewDeposit', first.receipt.blockNumber)).toEqual([])

    const again = await mined(deposit, chainOfB)
    await mine(confirmations)
    await synced(again.receipt.blockNumber)
    expect(channelOfA().partnerEnd.deposit).toBe(300n)
    expect((await storedEvents(net.tokenNetwork, 'ChannelNewDeposit', first.receipt.blockNumber)).map((e) => e.transactionHash)).toEqual([again.hash])
    expect(noticesOfA.filter((n) => n.type === 'channelDeposit' && n.totalDeposit === 300n)).toHaveLength(1)
    expect(errorsOfA('chain reorg')).toEqual([])
  })

  test('a secret registered in blocks replaced before their confirmations never settles a payment; registered again, it does, once', async () => {
    const secret = bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
    const secrethash = sha256(secret)
    // Started with its hash alone and no secret resolver: A cannot reveal the secret, so the payment waits.
    const payment = sendPayment(a.client, { token: net.token, target: b.address, amount: 3n, secrethash })
    await eventually(() => expect(a.state.initiators[secrethash]?.secretRequested).toBe(true))
    const register = (queue: ReturnType<typeof createTransactionQueue>) =>
      sendProtocolTransaction(
        { type: 'registerSecret', secret, secrethash },
        { signer: deployer, queue, secretRegistry: net.deployment.contracts.SecretRegistry.address },
      ) as Promise<{ hash: Hex; receipt: { blockNumber: bigint } }>
    const first = await mined(register, deployer)
    await mine(1)
    await afterPolls()
    expect(a.state.registeredSecrets[secrethash]).toBeUndefined()

    await reorg(2)
    await mine(confirmations + 2)
    await synced(first.receipt.blockNumber + 1n)
    expect(a.state.registeredSecrets[secrethash]).toBeUndefined()
    expect(a.state.initiators[secrethash]?.status).toBe('pending')

    const again = await mined(register, deployer)
    await mine(confirmations)
    expect(await payment).toMatchObject({ secrethash, amount: 3n })
    expect(a.state.registeredSecrets[secrethash]).toBe(again.receipt.blockNumber)
    await afterPolls()
    expect(noticesOfA.filter((n) => n.type === 'paymentSentSuccess' && n.secrethash === secrethash)).toHaveLength(1)
    expect(errorsOfA('chain reorg')).toEqual([])
  })

  test("the partner's close in blocks replaced before their confirmations draws no update; closed again, one update", async () => {
    // B pays A first: A then holds a proof of B's to put on-chain once B closes.
    await sendPayment(b.client, { token: net.token, target: a.address, amount: 5n })
    await eventually(() => expect(channelOfA().partnerEnd.balanceProof?.transferredAmount).toBe(5n))
    const nonceOfA = await pendingNonce(a.address)
    const close = (queue: ReturnType<typeof createTransactionQueue>) =>
      sendProtocolTransaction(
        { type: 'close', tokenNetwork: net.tokenNetwork, channelId, partner: a.address, balanceProof: null },
        { signer: chainOfB, queue, secretRegistry: net.deployment.contracts.SecretRegistry.address },
      ) as Promise<{ hash: Hex; receipt: { blockNumber: bigint } }>
    const first = await mined(close, chainOfB)
    await mine(1)
    await afterPolls()
    expect(channelOfA().state).toBe('opened')

    await reorg(2)
    await mine(confirmations + 2)
    await synced(first.receipt.blockNumber + 1n)
    await afterPolls()
    expect(channelOfA().state).toBe('opened')
    expect(await pendingNonce(a.address)).toBe(nonceOfA)

    const again = await mined(close, chainOfB)
    await mine(confirmations)
    await synced(again.receipt.blockNumber)
    // A's update waits in the pool: one, and only one, however many blocks come.
    await eventually(async () => expect(await pendingNonce(a.address)).toBe(nonceOfA + 1))
    await mine(confirmations + 1)
    await afterPolls()
    expect(await pendingNonce(a.address)).toBe(nonceOfA + 1)
    expect(await storedEvents(net.tokenNetwork, 'NonClosingBalanceProofUpdated', first.receipt.blockNumber)).toHaveLength(1)
    expect(errorsOfA('chain reorg')).toEqual([])
  })

  test('a reorg of blocks A has synced is reported, while it runs and when it happened while A was down', async () => {
    await mine(2)
    await synced((await latest()) - BigInt(confirmations))
    // Deeper than the confirmations: the close and A's update, acted upon, are gone.
    await reorg(confirmations + 6)
    await eventually(() => expect(errorsOfA('chain reorg')).toHaveLength(1))

    await mine(confirmations + 1)
    await synced((await latest()) - BigInt(confirmations))
    await a.stop()
    // While A is down: its last synced blocks are removed and others mined in their place.
    await devnet.request({ method: 'anvil_rollback', params: [confirmations + 2] } as never)
    await mine(confirmations + 2)
    a = await startA()
    expect(errorsOfA('chain reorg')).toHaveLength(2)
    expect(String((errorsOfA('chain reorg')[1] as { error: unknown }).error)).toMatch(/were replaced/)
  })
})
