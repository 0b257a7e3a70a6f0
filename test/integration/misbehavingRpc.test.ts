// A node behind an RPC endpoint that repeats, reorders, replays and delays logs (test/support/misbehavingRpc.ts),
// on the run's anvil, while other accounts open, fund and close channels and callers wait for blocks: what the
// node applies and stores must be exactly the chain's events, once each, in order, and it must never stop.
import { getAddress, isAddressEqual, type Address, type Hex, type Log } from 'viem'
import { expect, inject, test } from 'vitest'
import { decodeChainEvent, eventSelectors } from '../../src/chain/chainEvents.ts'
import type { Deployment } from '../../src/chain/deployment.ts'
import { readChannelInfo, readParticipantInfo } from '../../src/chain/reads.ts'
import { openChannel, setTotalDeposit } from '../../src/chain/tokenNetworkActions.ts'
import { sendProtocolTransaction } from '../../src/chain/transactions.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { createNode } from '../../src/node/createNode.ts'
import type { NodeNotice } from '../../src/node/notices.ts'
import { openMemoryStorage } from '../../src/storage/memoryStorage.ts'
import { createBroadcastChannelTransport } from '../../src/transport/broadcastChannelTransport.ts'
import { startMisbehavingRpc } from '../support/misbehavingRpc.ts'
import { freshAccount, mint, ownTokenNetwork, type FreshAccount } from '../support/sharedChain.ts'

test('behind an endpoint that repeats, reorders, replays and delays logs, under load, a node applies each chain event once, in order', async () => {
  const rpcUrl = inject('rpcUrl')
  const deployment = inject('deployment')
  const seed = Number(process.env.MISBEHAVING_RPC_SEED ?? Math.floor(Math.random() * 2 ** 31))
  console.info(`misbehaving RPC seed ${seed} (MISBEHAVING_RPC_SEED=${seed} repeats its choices)`)
  const rpc = await startMisbehavingRpc(rpcUrl, { seed })
  const accounts = await Promise.all(Array.from({ length: 8 }, () => freshAccount(rpcUrl)))
  const [me, owner, first] = accounts as [FreshAccount, FreshAccount, FreshAccount]
  const others = accounts.slice(2)
  const secretRegistry = deployment.contracts.SecretRegistry.address
  const settleTimeout = 500n

  // Before the node runs: a token network and a channel with us, found by its first sync in one range (the
  // network's events come from a second eth_getLogs, the network being unknown when the range was asked for).
  const { token, tokenNetwork } = await ownTokenNetwork(owner, deployment)
  await Promise.all(accounts.map((x) => mint(x, token, 10n ** 21n)))
  const early = await openChannel(first.chain, first.queue, { tokenNetwork, partner: me.address, settleTimeout, totalDeposit: 100n })

  const node = await createNode({
    rpc: rpc.url,
    deployment,
    key: me.key,
    storage: (identity) => openMemoryStorage(identity),
    transport: ({ address }) => createBroadcastChannelTransport({ address, channelName: `misbehaving-rpc-${seed}` }),
    confirmations: 0,
    pollingInterval: 20,
  })
  const notices: NodeNotice[] = []
  node.notices.subscribe((n) => void notices.push(n))
  try {
    await node.run()

    // The load: each other account funds a channel with us three more times (every other one then closes it), and
    // opens, funds and closes one with its neighbour; we open and fund a channel ourselves (each action waits for
    // its block); and three callers wait for the latest block all the while.
    const open = async (x: FreshAccount, partner: Address) =>
      (await openChannel(x.chain, x.queue, { tokenNetwork, partner, settleTimeout, totalDeposit: 10n })).channelId
    const close = (x: FreshAccount, id: bigint, partner: Address) =>
      sendProtocolTransaction({ type: 'close', tokenNetwork, channelId: id, partner, balanceProof: null }, { signer: x.chain, queue: x.queue, secretRegistry })
    const deposit = (x: FreshAccount, id: bigint, partner: Address, totalDeposit: bigint) =>
      setTotalDeposit(x.chain, x.queue, { tokenNetwork, channelId: id, partner, totalDeposit })
    const withUs = async (x: FreshAccount, i: number) => {
      const id = x === first ? early.channelId : await open(x, me.address)
      for (const total of [120n, 130n, 145n]) await deposit(x, id, me.address, total)
      if (i % 2 === 0) await close(x, id, me.address)
    }
    const withNeighbour = async (x: FreshAccount, i: number) => {
      const y = others[(i + 1) % others.length]!
      const id = await open(x, y.address)
      await deposit(y, id, x.address, 5n)
      await close(x, id, y.address)
    }
    const ours = async () => {
      await openChannelOnChain(node.client, { tokenNetwork, partner: owner.address, totalDeposit: 7n })
      await depositOnChain(node.client, { tokenNetwork, partner: owner.address, totalDeposit: 9n })
    }
    let loadDone = false
    const waiter = async () => {
      while (!loadDone) await node.client.waitForBlock(await owner.chain.publicClient.getBlockNumber())
    }
    const load = Promise.all([...others.map(withUs), ...others.map(withNeighbour), ours()]).finally(() => (loadDone = true))
    await Promise.all([load, waiter(), waiter(), waiter()])
    await node.client.waitForBlock(await owner.chain.publicClient.getBlockNumber(), 20_000)

    // The node never stopped and reported nothing.
    expect(notices.filter((n) => n.type === 'error')).toEqual([])
    expect(node.status.status).toBe('ready')

    // Our channels as the chain has them.
    const channels = Object.values(node.state.channels).filter((ch) => isAddressEqual(ch.tokenNetwork, tokenNetwork))
    expect(channels.map((ch) => ch.partner).sort()).toEqual([...others, owner].map((x) => x.address).sort())
    for (const ch of channels) {
      const info = await readChannelInfo(me.chain, { tokenNetwork, channelId: ch.id, participant1: me.address, participant2: ch.partner })
      const [our, theirs] = await Promise.all([
        readParticipantInfo(me.chain, { tokenNetwork, channelId: ch.id, participant: me.address, partner: ch.partner }),
        readParticipantInfo(me.chain, { tokenNetwork, channelId: ch.id, participant: ch.partner, partner: me.address }),
      ])
      expect({ partner: ch.partner, state: ch.state, our: ch.our.deposit, theirs: ch.partnerEnd.deposit }).toEqual({
        partner: ch.partner,
        state: info.state,
        our: our.deposit,
        theirs: theirs.deposit,
      })
    }

    // The stored chain events are the chain's logs, once each; read up to a block whose range is committed.
    const synced = node.state.blockNumber
    const chainLogs = await followedLogs(me, deployment, synced)
    const stored = await node.client.store.chainEvents({ toBlock: synced })
    const key = (e: { blockNumber: bigint | null; logIndex: number | null; transactionHash: Hex | null }) =>
      `${e.blockNumber}:${e.logIndex}:${e.transactionHash}`
    expect(stored.map(key)).toEqual(chainLogs.map(key))

    // What a user sees of our channels (the push events) follows the chain's order, each event once.
    const seen = notices.flatMap((n) =>
      n.type === 'channelStateChanged' && isAddressEqual(n.tokenNetwork, tokenNetwork)
        ? [`${n.channelId} ${n.state}`]
        : n.type === 'channelDeposit' && isAddressEqual(n.tokenNetwork, tokenNetwork)
          ? [`${n.channelId} deposit ${n.participant} ${n.totalDeposit}`]
          : [],
    )
    const ourIds = new Set(channels.map((ch) => ch.id))
    const expected = chainLogs.flatMap((log) => {
      if (!isAddressEqual(log.address, tokenNetwork)) return []
      const change = decodeChainEvent({ source: 'tokenNetwork', log, defaultRevealTimeout: 0n })?.change
      if (!change || !('channelId' in change) || change.channelId === undefined || !ourIds.has(change.channelId)) return []
      if (change.type === 'channelOpened') return [`${change.channelId} opened`]
      if (change.type === 'channelDeposit') return [`${change.channelId} deposit ${getAddress(change.participant)} ${change.totalDeposit}`]
      if (change.type === 'channelClosed') return [`${change.channelId} closed`]
      return []
    })
    expect(seen).toEqual(expected)

    console.info(
      `${chainLogs.length} chain events stored once each; ${seen.length} of our channels' events seen in order; endpoint ${JSON.stringify(rpc.stats)}`,
    )
    // The endpoint did misbehave, and the node asked for one range at a time.
    expect(rpc.stats).toMatchObject({ maxGetLogsInFlight: 1 })
    for (const k of ['duplicated', 'replayed', 'removedCopies', 'incompleteCopies'] as const) expect(rpc.stats[k]).toBeGreaterThan(0)
  } finally {
    await node.stop()
    await rpc.close()
  }
})

/** Every log the node follows from the registry's deployment to `toBlock`, straight from anvil, in chain order. */
async function followedLogs(reader: FreshAccount, deployment: Deployment, toBlock: bigint): Promise<Log[]> {
  const client = reader.chain.publicClient
  const fromBlock = BigInt(deployment.contracts.TokenNetworkRegistry.blockNumber)
  const registry = deployment.contracts.TokenNetworkRegistry.address
  const created = await client.getLogs({ address: registry, fromBlock, toBlock })
  const networks = created.flatMap((log) => {
    const change = decodeChainEvent({ source: 'registry', log, defaultRevealTimeout: 0n })?.change
    return change?.type === 'tokenNetworkCreated' ? [change.tokenNetwork] : []
  })
  const address = [registry, deployment.contracts.SecretRegistry.address, deployment.contracts.UserDeposit.address, ...networks]
  const selectors = [...eventSelectors('registry'), ...eventSelectors('tokenNetwork'), ...eventSelectors('secretRegistry'), ...eventSelectors('userDeposit')]
  const logs = await client.getLogs({ address, fromBlock, toBlock } as never)
  return (logs as Log[]).filter((log) => selectors.includes(log.topics[0]!))
}
