import { createPublicClient, http, keccak256, toHex, type Address, type Hex, type PublicClient, type Transport } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { ChainRpcError } from '../../../src/chain/errors.ts'
import { syncChainEvents, type ChainContracts } from '../../../src/chain/eventSync.ts'
import { LogChunkSize } from '../../../src/chain/getLogsByChunk.ts'
import { readChannelInfo } from '../../../src/chain/reads.ts'
import { mintTokens } from '../../../src/chain/erc20.ts'
import { openChannel, registerToken, setTotalDeposit } from '../../../src/chain/tokenNetworkActions.ts'
import { sendProtocolTransaction } from '../../../src/chain/transactions.ts'
import { depositToUserDeposit, planUserDepositWithdraw, withdrawFromUserDeposit } from '../../../src/chain/userDepositActions.ts'
import { balanceHash, packBalanceProof } from '../../../src/protocol/balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS, locksroot, secrethashOf, type Lock } from '../../../src/protocol/locks.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import type { StateChange } from '../../../src/protocol/state/changes.ts'
import type { ChainTransaction as Transaction } from '../../../src/protocol/state/effects.ts'
import type { BalanceProofState } from '../../../src/protocol/state/types.ts'
import { packWithdraw } from '../../../src/protocol/withdrawProof.ts'
import { startMisbehavingRpc } from '../../support/misbehavingRpc.ts'
import { startChainTestbed, type Account, type ChainTestbed } from './chainTestbed.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

const revealTimeout = 7n
const chainId = 31337n

let bed: ChainTestbed
let client: PublicClient
let contracts: ChainContracts
let fromBlock: bigint
let toBlock: bigint
/** What the history must sync to, in order. */
const expected: StateChange[] = []
/** UserDeposit events: stored, no state change. */
const expectedUserDeposit: { name: string; blockNumber: bigint }[] = []
/** The block of the second TokenNetworkCreated, to resume right before it. */
let secondNetworkBlock: bigint

function proof(tokenNetwork: Address, signer: Account, channelId: bigint, nonce: bigint, transferredAmount: bigint, locks: Lock[] = []): BalanceProofState {
  const lockedAmount = locks.reduce((sum, l) => sum + l.amount, 0n)
  const root = locksroot(locks)
  const bh = balanceHash({ transferredAmount, lockedAmount, locksroot: root })
  const messageHash = keccak256(toHex(`message ${nonce}`))
  const signature = signPackedSync(
    jsSecp256k1,
    signer.key,
    packBalanceProof({ tokenNetworkAddress: tokenNetwork, chainId, channelIdentifier: channelId, balanceHash: bh, nonce, additionalHash: messageHash }),
  )
  return { nonce, transferredAmount, lockedAmount, locksroot: root, balanceHash: bh, messageHash, signature }
}

/**
 * The history: two token networks, three accounts, channels opened with and without deposit, deposits, a
 * withdraw, a secret registration, close by the partner, update, settle, unlock, and UserDeposit activity.
 */
async function scriptHistory(A: Account, B: Account, C: Account): Promise<void> {
  const { TTT, TT2 } = bed.deployment.tokens
  const registry = bed.deployment.contracts.TokenNetworkRegistry.address
  const secretRegistry = bed.deployment.contracts.SecretRegistry.address
  const tx = (who: Account, t: Transaction) => sendProtocolTransaction(t, { signer: who.chain, secretRegistry, queue: who.queue })
  const [a, b, c] = [A.chain.address, B.chain.address, C.chain.address]

  const tn1 = (await registerToken(A.chain, A.queue, { registry, token: TTT })).tokenNetwork
  expected.push({ type: 'tokenNetworkCreated', token: TTT, tokenNetwork: tn1 })
  for (const who of [A, B, C]) await mintTokens(who.chain, who.queue, { token: TTT, amount: 1_000n })

  const opened1 = await openChannel(A.chain, A.queue, { tokenNetwork: tn1, partner: b, settleTimeout: 10n, totalDeposit: 100n })
  const ch1 = opened1.channelId
  expected.push(
    {
      type: 'channelOpened',
      tokenNetwork: tn1,
      channelId: ch1,
      participant1: a,
      participant2: b,
      settleTimeout: 10n,
      blockNumber: opened1.receipt.blockNumber,
      revealTimeout,
    },
    { type: 'channelDeposit', tokenNetwork: tn1, channelId: ch1, participant: a, totalDeposit: 100n },
  )
  await setTotalDeposit(B.chain, B.queue, { tokenNetwork: tn1, channelId: ch1, partner: a, totalDeposit: 50n })
  expected.push({ type: 'channelDeposit', tokenNetwork: tn1, channelId: ch1, participant: b, totalDeposit: 50n })

  const opened2 = await openChannel(B.chain, B.queue, { tokenNetwork: tn1, partner: c, settleTimeout: 15n })
  expected.push({
    type: 'channelOpened',
    tokenNetwork: tn1,
    channelId: opened2.channelId,
    participant1: b,
    participant2: c,
    settleTimeout: 15n,
    blockNumber: opened2.receipt.blockNumber,
    revealTimeout,
  })
  await setTotalDeposit(C.chain, C.queue, { tokenNetwork: tn1, channelId: opened2.channelId, partner: b, totalDeposit: 20n })
  expected.push({ type: 'channelDeposit', tokenNetwork: tn1, channelId: opened2.channelId, participant: c, totalDeposit: 20n })

  // A second token network, whose channel opens right after it is created.
  const created2 = await registerToken(B.chain, B.queue, { registry, token: TT2 })
  secondNetworkBlock = created2.receipt.blockNumber
  const tn2 = created2.tokenNetwork
  expected.push({ type: 'tokenNetworkCreated', token: TT2, tokenNetwork: tn2 })
  const opened3 = await openChannel(C.chain, C.queue, { tokenNetwork: tn2, partner: a, settleTimeout: 5n })
  expected.push({
    type: 'channelOpened',
    tokenNetwork: tn2,
    channelId: opened3.channelId,
    participant1: c,
    participant2: a,
    settleTimeout: 5n,
    blockNumber: opened3.receipt.blockNumber,
    revealTimeout,
  })

  const expiration = (await bed.devnet.getBlockNumber()) + 50n
  const partnerSignature = signPackedSync(
    jsSecp256k1,
    B.key,
    packWithdraw({ tokenNetworkAddress: tn1, chainId, channelIdentifier: ch1, participant: a, totalWithdraw: 10n, expiration }),
  )
  await tx(A, { type: 'setTotalWithdraw', tokenNetwork: tn1, channelId: ch1, participant: a, totalWithdraw: 10n, expiration, partnerSignature })
  expected.push({ type: 'channelWithdraw', tokenNetwork: tn1, channelId: ch1, participant: a, totalWithdraw: 10n })

  const secret = keccak256(toHex('event sync secret'))
  const lock: Lock = { expiration: (await bed.devnet.getBlockNumber()) + 1_000n, amount: 5n, secrethash: secrethashOf(secret) }
  const registered = await tx(B, { type: 'registerSecret', secret, secrethash: lock.secrethash })
  expected.push({ type: 'secretRegistered', secrethash: lock.secrethash, secret, blockNumber: registered.receipt.blockNumber })

  const proofOfA = proof(tn1, A, ch1, 3n, 30n, [lock])
  const proofOfB = proof(tn1, B, ch1, 2n, 7n)
  const closed = await tx(B, { type: 'close', tokenNetwork: tn1, channelId: ch1, partner: a, balanceProof: proofOfA })
  expected.push({
    type: 'channelClosed',
    tokenNetwork: tn1,
    channelId: ch1,
    closer: b,
    nonce: 3n,
    balanceHash: proofOfA.balanceHash,
    blockNumber: closed.receipt.blockNumber,
  })
  await tx(A, { type: 'update', tokenNetwork: tn1, channelId: ch1, partner: b, balanceProof: proofOfB })
  expected.push({ type: 'nonClosingUpdated', tokenNetwork: tn1, channelId: ch1, closer: b, nonce: 2n, balanceHash: proofOfB.balanceHash })

  const { settleBlockNumber } = await readChannelInfo(A.chain, { tokenNetwork: tn1, channelId: ch1, participant1: a, participant2: b })
  await bed.devnet.mine({ blocks: Number(settleBlockNumber - (await bed.devnet.getBlockNumber()) + 1n) })
  const settled = await tx(B, {
    type: 'settle',
    tokenNetwork: tn1,
    channelId: ch1,
    participant1: b,
    participant1Balance: { transferredAmount: 7n, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS },
    participant2: a,
    participant2Balance: { transferredAmount: 30n, lockedAmount: 5n, locksroot: proofOfA.locksroot },
  })
  expected.push({
    type: 'channelSettled',
    tokenNetwork: tn1,
    channelId: ch1,
    participant1: b,
    participant1Amount: 73n,
    participant1Locksroot: LOCKSROOT_OF_NO_LOCKS,
    participant2: a,
    participant2Amount: 62n,
    participant2Locksroot: proofOfA.locksroot,
    blockNumber: settled.receipt.blockNumber,
  })
  await tx(C, { type: 'unlock', tokenNetwork: tn1, channelId: ch1, receiver: b, sender: a, locks: [lock] })
  expected.push({
    type: 'channelUnlocked',
    tokenNetwork: tn1,
    channelId: ch1,
    receiver: b,
    sender: a,
    locksroot: proofOfA.locksroot,
    unlockedAmount: 5n,
    returnedTokens: 0n,
  })

  const userDeposit = bed.deployment.contracts.UserDeposit.address
  await mintTokens(A.chain, A.queue, { token: bed.deployment.serviceToken, amount: 100n })
  await depositToUserDeposit(A.chain, A.queue, { userDeposit, totalDeposit: 60n })
  const planned = await planUserDepositWithdraw(A.chain, A.queue, { userDeposit, amount: 25n })
  expectedUserDeposit.push({ name: 'WithdrawPlanned', blockNumber: planned.receipt.blockNumber })
  await bed.devnet.mine({ blocks: 100 })
  const withdrawn = await withdrawFromUserDeposit(A.chain, A.queue, { userDeposit, amount: 25n })
  expectedUserDeposit.push({ name: 'BalanceReduced', blockNumber: withdrawn.receipt.blockNumber })
}

beforeAll(async () => {
  bed = await startChainTestbed({ accounts: 3 })
  client = bed.accounts[0]!.chain.publicClient
  const d = bed.deployment.contracts
  contracts = { tokenNetworkRegistry: d.TokenNetworkRegistry.address, secretRegistry: d.SecretRegistry.address, userDeposit: d.UserDeposit.address }
  fromBlock = BigInt(d.TokenNetworkRegistry.blockNumber)
  const [A, B, C] = bed.accounts as [Account, Account, Account]
  await scriptHistory(A, B, C)
  // Empty blocks after the history: the sync must cover them without inventing anything.
  await bed.devnet.mine({ blocks: 3 })
  toBlock = await bed.devnet.getBlockNumber()
})
afterAll(() => bed.stop())

const changesOf = (events: Awaited<ReturnType<typeof syncChainEvents>>['events']) => events.flatMap((e) => (e.change ? [e.change] : []))

describe('syncChainEvents', () => {
  test('decodes the whole history into the exact state changes, in chain order', async () => {
    expect(expected.map((c) => c.type)).toEqual([
      'tokenNetworkCreated',
      'channelOpened',
      'channelDeposit',
      'channelDeposit',
      'channelOpened',
      'channelDeposit',
      'tokenNetworkCreated',
      'channelOpened',
      'channelWithdraw',
      'secretRegistered',
      'channelClosed',
      'nonClosingUpdated',
      'channelSettled',
      'channelUnlocked',
    ])
    const synced = await syncChainEvents(client, { contracts, fromBlock, toBlock, defaultRevealTimeout: revealTimeout })
    expect(changesOf(synced.events)).toEqual(expected)
    expect(synced.tokenNetworks).toEqual(expected.flatMap((c) => (c.type === 'tokenNetworkCreated' ? [c.tokenNetwork] : [])))

    // Ordered by (block, log index), and every event stored with what the debug API filters on.
    const keys = synced.events.map((e) => e.event.blockNumber * 10_000n + BigInt(e.event.logIndex))
    expect([...keys].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))).toEqual(keys)
    const opened = synced.events.find((e) => e.event.name === 'ChannelOpened')!.event
    expect(opened).toMatchObject({ tokenNetwork: expected[1]!.type === 'channelOpened' ? expected[1]!.tokenNetwork : '', channelId: 1n })
    expect(opened.participants).toHaveLength(2)
    expect(opened.transactionHash).toMatch(/^0x[0-9a-f]{64}$/)

    const userDepositEvents = synced.events.filter((e) => e.event.address === contracts.userDeposit)
    expect(userDepositEvents.map((e) => ({ name: e.event.name, blockNumber: e.event.blockNumber }))).toEqual(expectedUserDeposit)
    expect(userDepositEvents.every((e) => e.change === undefined)).toBe(true)
    expect(userDepositEvents[0]!.event.args).toEqual({ withdrawer: bed.accounts[0]!.chain.address, plannedBalance: 35n })
  })

  test('gets everything with a tiny chunk size, including a network created and used inside one chunk', async () => {
    const chunkSize = new LogChunkSize({ initial: 2n, min: 1n, max: 2n })
    const progress: bigint[] = []
    const synced = await syncChainEvents(client, {
      contracts,
      fromBlock,
      toBlock,
      defaultRevealTimeout: revealTimeout,
      chunkSize,
      onProgress: (b) => progress.push(b),
    })
    expect(changesOf(synced.events)).toEqual(expected)
    expect(progress.at(-1)).toBe(toBlock)
    expect(progress.length).toBeGreaterThanOrEqual(Number(toBlock - fromBlock + 1n) / 2)
  })

  test('resumes from the last synced block with the token networks known so far', async () => {
    const first = await syncChainEvents(client, { contracts, fromBlock, toBlock: secondNetworkBlock - 1n, defaultRevealTimeout: revealTimeout })
    expect(first.tokenNetworks).toHaveLength(1)
    const second = await syncChainEvents(client, {
      contracts,
      tokenNetworks: first.tokenNetworks,
      fromBlock: secondNetworkBlock,
      toBlock,
      defaultRevealTimeout: revealTimeout,
    })
    expect([...changesOf(first.events), ...changesOf(second.events)]).toEqual(expected)
    expect(second.tokenNetworks).toHaveLength(2)
    // Without the known networks, a resumed sync misses their events: the list is what carries them over.
    const forgetful = await syncChainEvents(client, { contracts, fromBlock: secondNetworkBlock + 1n, toBlock, defaultRevealTimeout: revealTimeout })
    expect(changesOf(forgetful.events).some((c) => c.type === 'channelClosed')).toBe(false)
  })

  test('halves the range while the endpoint refuses it, and still gets everything', async () => {
    const limit = 10n
    const spans: { span: bigint; ok: boolean }[] = []
    const refusing = rangeLimitedTransport(bed.anvil.rpcUrl, limit, spans)
    const limited = createPublicClient({ transport: refusing, cacheTime: 0 })
    const chunkSize = new LogChunkSize({ min: 1n })
    const synced = await syncChainEvents(limited, { contracts, fromBlock, toBlock, defaultRevealTimeout: revealTimeout, chunkSize })
    expect(changesOf(synced.events)).toEqual(expected)

    const total = toBlock - fromBlock + 1n
    expect(total).toBeGreaterThan(limit * 8n)
    // First the whole range, then halves of it until one fits.
    const firstFit = spans.findIndex((s) => s.ok)
    expect(spans.slice(0, firstFit + 1).map((s) => s.span)).toEqual(halvings(total, limit))
    expect(spans.every((s) => s.ok === s.span <= limit)).toBe(true)
    // It grew back after successes (and was refused again), rather than staying small.
    expect(spans.slice(firstFit).some((s) => !s.ok)).toBe(true)
    expect(chunkSize.current).toBeLessThanOrEqual(limit * 2n)
  })

  test('through an endpoint that repeats, reorders, replays and adds logs, the same events: once each, in chain order', async () => {
    const seed = Number(process.env.MISBEHAVING_RPC_SEED ?? Math.floor(Math.random() * 2 ** 31))
    const rpc = await startMisbehavingRpc(bed.anvil.rpcUrl, { seed })
    try {
      const careless = createPublicClient({ transport: http(rpc.url), cacheTime: 0 })
      const straight = await syncChainEvents(client, { contracts, fromBlock, toBlock, defaultRevealTimeout: revealTimeout })
      // Whole, and in chunks of two blocks (many answers to replay, and networks found inside a chunk).
      for (const chunkSize of [undefined, new LogChunkSize({ initial: 2n, min: 1n, max: 2n })]) {
        const synced = await syncChainEvents(careless, {
          contracts,
          fromBlock,
          toBlock,
          defaultRevealTimeout: revealTimeout,
          ...(chunkSize ? { chunkSize } : {}),
        })
        expect(synced, `seed ${seed}`).toEqual(straight)
      }
      for (const k of ['duplicated', 'replayed', 'removedCopies', 'incompleteCopies'] as const) expect(rpc.stats[k], `${k}, seed ${seed}`).toBeGreaterThan(0)
    } finally {
      await rpc.close()
    }
  })

  test('refuses with ChainRpcError an answer with two different logs at one position (an endpoint mixing forks)', async () => {
    const forked = createPublicClient({ transport: forkMixingTransport(bed.anvil.rpcUrl), cacheTime: 0 })
    const error = await syncChainEvents(forked, { contracts, fromBlock, toBlock, defaultRevealTimeout: revealTimeout }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ChainRpcError)
    expect(String(error)).toMatch(/two different logs at block \d+, log \d+/)
  })

  test('gives up with ChainRpcError when even the smallest range is refused', async () => {
    const limited = createPublicClient({ transport: rangeLimitedTransport(bed.anvil.rpcUrl, 0n, []), cacheTime: 0 })
    const error = await syncChainEvents(limited, {
      contracts,
      fromBlock,
      toBlock,
      defaultRevealTimeout: revealTimeout,
      chunkSize: new LogChunkSize({ min: 4n }),
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ChainRpcError)
    expect(error).toMatchObject({ method: 'eth_getLogs' })
  })
})

/** The spans asked for while halving from `total` until one is at most `limit`. */
function halvings(total: bigint, limit: bigint): bigint[] {
  const out = [total]
  while (out.at(-1)! > limit) out.push(out.at(-1)! / 2n)
  return out
}

/** http() to anvil, except that each eth_getLogs answer also has its first log as another fork has it (another block hash). */
function forkMixingTransport(url: string): Transport {
  const inner = http(url)
  return (options) => {
    const transport = inner(options)
    return {
      ...transport,
      request: (async (args: { method: string; params?: unknown }, requestOptions?: unknown) => {
        const result = await transport.request(args as never, requestOptions as never)
        if (args.method !== 'eth_getLogs' || !Array.isArray(result) || result.length === 0) return result
        const [first] = result as { blockHash: Hex }[]
        return [...result, { ...first, blockHash: keccak256(first!.blockHash) }]
      }) as typeof transport.request,
    }
  }
}

/** http() to anvil, except that eth_getLogs over more than `limit` blocks fails as some providers' do. */
function rangeLimitedTransport(url: string, limit: bigint, spans: { span: bigint; ok: boolean }[]): Transport {
  const inner = http(url)
  return (options) => {
    const transport = inner(options)
    return {
      ...transport,
      request: (async (args: { method: string; params?: unknown }, requestOptions?: unknown) => {
        if (args.method === 'eth_getLogs') {
          const [{ fromBlock: from, toBlock: to }] = args.params as [{ fromBlock: Hex; toBlock: Hex }]
          const span = BigInt(to) - BigInt(from) + 1n
          spans.push({ span, ok: span <= limit })
          if (span > limit) throw Object.assign(new Error(`query exceeds max block range ${limit}`), { code: -32005 })
        }
        return transport.request(args as never, requestOptions as never)
      }) as typeof transport.request,
    }
  }
}
