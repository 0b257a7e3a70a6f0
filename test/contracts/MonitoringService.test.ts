import { encodePacked, getAddress, keccak256, parseEventLogs, toFunctionSelector, toHex, zeroAddress, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CustomToken, MonitoringService, OneToN, SecretRegistry, TokenNetwork, TokenNetworkRegistry } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { ZERO_HASH, balanceHash, packBalanceProof, packBalanceProofCounter } from '../../src/protocol/balanceProof.ts'
import { packIou } from '../../src/protocol/iou.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import { MessageTypeId } from '../../src/protocol/messageTypeId.ts'
import { packRewardProof, type RewardProof } from '../../src/protocol/rewardProof.ts'
import { signPacked } from '../../src/protocol/signature.ts'
import { snapshotEach } from '../support/chainSuite.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import { constructorRevertReason, deployServices, depositToUdc, mined, mineTo, registerService, udcBalance, type Services } from '../support/services.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

// 30% and 50% of 15 are 4.5 and 7.5: the contract floors each on its own (4 and 7), where flooring 80% and
// subtracting would give a range of 8. A settle timeout above the minimum makes the assumed close block differ
// from the real one.
const SETTLE_TIMEOUT_MIN = 15n
const SETTLE_TIMEOUT = 40n
const REWARD = 10n
const EMPTY_SIGNATURE: Hex = `0x${'00'.repeat(65)}`

/** TS reference of MonitoringService.firstBlockAllowedToMonitor (docs/protocol.md §1.9 and §7). */
function referenceFirstBlock(closedAt: bigint, settleTimeout: bigint, p1: Address, p2: Address, ms: Address): bigint {
  const rangeLength = (50n * settleTimeout) / 100n
  return closedAt + (30n * settleTimeout) / 100n + ((BigInt(p1) + BigInt(p2) + BigInt(ms)) % rangeLength)
}

let anvil: Anvil
let client: AnvilClient // deployer
let closer: AnvilClient // A: closes the channel
let node: AnvilClient // B: the monitored (non-closing) node, pays the reward
let ms: AnvilClient // a registered monitoring service
let ms2: AnvilClient // another registered monitoring service
let stranger: AnvilClient // never registers
const keyOf = new Map<string, Hex>()
let s: Services
let tnRegistry: Address
let tokenNetwork: Address
let channelToken: Address
let chainId: bigint

const msc = () => ({ address: s.monitoringService, abi: MonitoringService.abi }) as const
const tn = () => ({ address: tokenNetwork, abi: TokenNetwork.abi }) as const
const sign = (who: Address, data: Hex) => signPacked(jsSecp256k1, keyOf.get(who)!, data)

async function openChannel(a: AnvilClient = closer, b: AnvilClient = node): Promise<bigint> {
  const receipt = await mined(
    client,
    client.writeContract({ ...tn(), functionName: 'openChannel', args: [a.account.address, b.account.address, SETTLE_TIMEOUT] }),
  )
  const [opened] = parseEventLogs({ abi: TokenNetwork.abi, logs: receipt.logs, eventName: 'ChannelOpened' })
  return opened!.args.channel_identifier
}

/** The closer closes without a balance proof of its partner (nonce 0); returns the close block. */
async function closeChannel(channelId: bigint): Promise<bigint> {
  const proof = { tokenNetworkAddress: tokenNetwork, chainId, channelIdentifier: channelId, balanceHash: ZERO_HASH, nonce: 0n, additionalHash: ZERO_HASH }
  const closingSignature = await sign(closer.account.address, packBalanceProofCounter(MessageTypeId.BalanceProof, proof, EMPTY_SIGNATURE))
  const receipt = await mined(
    closer,
    closer.writeContract({
      ...tn(),
      functionName: 'closeChannel',
      args: [channelId, node.account.address, closer.account.address, ZERO_HASH, 0n, ZERO_HASH, EMPTY_SIGNATURE, closingSignature],
    }),
  )
  return receipt.blockNumber
}

type MonitorRequest = {
  channelId: bigint
  nonce: bigint
  transferred: bigint
  balanceHash: Hex
  additionalHash: Hex
  closingSignature: Hex
  nonClosingSignature: Hex
  rewardAmount: bigint
  rewardProofSignature: Hex
  tokenNetwork: Address
}

/**
 * What the monitored node hands to monitoring services (RequestMonitoring): the closer's balance proof, its
 * own BalanceProofUpdate counter-signature and a reward proof, all signed in TypeScript. `rewardOverrides`
 * and `rewardSigner` change the signed reward proof only (to test that each field is covered).
 */
async function monitorRequest(
  channelId: bigint,
  nonce: bigint,
  rewardAmount = REWARD,
  rewardOverrides: Partial<RewardProof> = {},
  rewardSigner: Address = node.account.address,
): Promise<MonitorRequest> {
  const transferred = 3n * nonce
  const bh = balanceHash({ transferredAmount: transferred, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS })
  const proof = {
    tokenNetworkAddress: tokenNetwork,
    chainId,
    channelIdentifier: channelId,
    balanceHash: bh,
    nonce,
    additionalHash: keccak256(toHex(`msg ${nonce}`)),
  }
  const closingSignature = await sign(closer.account.address, packBalanceProof(proof))
  const nonClosingSignature = await sign(node.account.address, packBalanceProofCounter(MessageTypeId.BalanceProofUpdate, proof, closingSignature))
  const reward: RewardProof = {
    monitoringServiceAddress: s.monitoringService,
    chainId,
    tokenNetworkAddress: tokenNetwork,
    nonClosingParticipant: node.account.address,
    nonClosingSignature,
    rewardAmount,
    ...rewardOverrides,
  }
  const rewardProofSignature = await sign(rewardSigner, packRewardProof(reward))
  return {
    channelId,
    nonce,
    transferred,
    balanceHash: bh,
    additionalHash: proof.additionalHash,
    closingSignature,
    nonClosingSignature,
    rewardAmount,
    rewardProofSignature,
    tokenNetwork,
  }
}

const monitorArgs = (r: MonitorRequest) =>
  [
    closer.account.address,
    node.account.address,
    r.balanceHash,
    r.nonce,
    r.additionalHash,
    r.closingSignature,
    r.nonClosingSignature,
    r.rewardAmount,
    r.tokenNetwork,
    r.rewardProofSignature,
  ] as const

const rewardId = (channelId: bigint, tokenNetworkAddress: Address = tokenNetwork) =>
  keccak256(encodePacked(['uint256', 'address'], [channelId, tokenNetworkAddress]))

async function firstAllowed(channelId: bigint, service: AnvilClient = ms): Promise<bigint> {
  return client.readContract({
    ...msc(),
    functionName: 'firstBlockAllowedToMonitorChannel',
    args: [tokenNetwork, channelId, closer.account.address, node.account.address, service.account.address],
  })
}

/** A closed channel and the block from which `ms` may monitor it. */
async function closedChannel() {
  const channelId = await openChannel()
  const closeBlock = await closeChannel(channelId)
  return { channelId, closeBlock, settleBlock: closeBlock + SETTLE_TIMEOUT, first: await firstAllowed(channelId) }
}

/** Monitors in the MS's first allowed block; returns the receipt. */
async function monitorWhenAllowed(request: MonitorRequest, service: AnvilClient = ms) {
  const first = await firstAllowed(request.channelId, service)
  await mineTo(client, first - 1n)
  return mined(service, service.writeContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }))
}

beforeAll(async () => {
  anvil = await startAnvil()
  const clients = anvilKeys.slice(0, 6).map((key) => anvilClient(anvil.rpcUrl, key))
  ;[client, closer, node, ms, ms2, stranger] = clients as [AnvilClient, AnvilClient, AnvilClient, AnvilClient, AnvilClient, AnvilClient]
  clients.forEach((c, i) => keyOf.set(c.account.address, anvilKeys[i]!))
  chainId = BigInt(await client.getChainId())

  const secretRegistry = await deploy(client, SecretRegistry, [])
  tnRegistry = getAddress(await deploy(client, TokenNetworkRegistry, [secretRegistry, SETTLE_TIMEOUT_MIN, 1000n, 10n]))
  channelToken = getAddress(await deploy(client, CustomToken, [10n ** 24n, 18, 'Channel Token', 'CT']))
  await mined(
    client,
    client.writeContract({ address: tnRegistry, abi: TokenNetworkRegistry.abi, functionName: 'createERC20TokenNetworkWithoutLimits', args: [channelToken] }),
  )
  tokenNetwork = await client.readContract({
    address: tnRegistry,
    abi: TokenNetworkRegistry.abi,
    functionName: 'token_to_token_networks',
    args: [channelToken],
  })

  s = await deployServices(client, { tokenNetworkRegistry: tnRegistry })
  await registerService(ms, s)
  await registerService(ms2, s)
  await depositToUdc(node, s, node.account.address, 100n)
})
afterAll(() => anvil.stop())
snapshotEach(() => client)

describe('deployment', () => {
  test('exposes the token, the service registry, the user deposit and the token network registry', async () => {
    expect(await client.readContract({ ...msc(), functionName: 'token' })).toBe(s.token)
    expect(await client.readContract({ ...msc(), functionName: 'service_registry' })).toBe(s.serviceRegistry)
    expect(await client.readContract({ ...msc(), functionName: 'user_deposit' })).toBe(s.userDeposit)
    expect(await client.readContract({ ...msc(), functionName: 'token_network_registry' })).toBe(tnRegistry)
  })

  test('the constructor refuses zero addresses, addresses without code and a token without supply', async () => {
    const eoa = stranger.account.address
    const empty = await deploy(client, CustomToken, [0n, 18, 'Empty', 'E'])
    const construct = (token: Address, registry: Address, udc: Address, tnr: Address) =>
      constructorRevertReason(client, MonitoringService, [token, registry, udc, tnr])
    expect(await construct(zeroAddress, s.serviceRegistry, s.userDeposit, tnRegistry)).toBe('Token at address zero')
    expect(await construct(s.token, zeroAddress, s.userDeposit, tnRegistry)).toBe('ServiceRegistry at address zero')
    expect(await construct(s.token, s.serviceRegistry, zeroAddress, tnRegistry)).toBe('UDC at address zero')
    expect(await construct(eoa, s.serviceRegistry, s.userDeposit, tnRegistry)).toBe('token has no code')
    expect(await construct(s.token, eoa, s.userDeposit, tnRegistry)).toBe('ServiceRegistry has no code')
    expect(await construct(s.token, s.serviceRegistry, eoa, tnRegistry)).toBe('UDC has no code')
    expect(await construct(s.token, s.serviceRegistry, s.userDeposit, eoa)).toBe('TokenNetworkRegistry has no code')
    expect(await construct(s.token, s.serviceRegistry, s.userDeposit, zeroAddress)).toBe('TokenNetworkRegistry has no code')
    expect(await construct(empty, s.serviceRegistry, s.userDeposit, tnRegistry)).toBe('Token with zero total supply')
  })
})

describe('first block allowed to monitor', () => {
  test('matches the reference, flooring 30% and 50% of the settle timeout separately', async () => {
    const triples: [Address, Address, Address][] = [
      [closer.account.address, node.account.address, ms.account.address],
      [node.account.address, closer.account.address, ms2.account.address],
      ['0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002', '0xffffffffffffffffffffffffffffffffffffffff'],
    ]
    let differsFromSingleFloor = false
    for (const settleTimeout of [2n, 7n, 15n, 33n, 101n, 500n, 555_428n]) {
      for (const [p1, p2, service] of triples) {
        const onChain = await client.readContract({ ...msc(), functionName: 'firstBlockAllowedToMonitor', args: [1000n, settleTimeout, p1, p2, service] })
        expect(onChain, `timeout ${settleTimeout}`).toBe(referenceFirstBlock(1000n, settleTimeout, p1, p2, service))
        const singleFloorRange = (80n * settleTimeout) / 100n - (30n * settleTimeout) / 100n
        const singleFloor = 1000n + (30n * settleTimeout) / 100n + ((BigInt(p1) + BigInt(p2) + BigInt(service)) % singleFloorRange)
        if (onChain !== singleFloor) differsFromSingleFloor = true
      }
    }
    // The values above are able to tell the two roundings apart.
    expect(differsFromSingleFloor).toBe(true)
  })

  test('refuses absurd inputs and a settle timeout too small to leave a range', async () => {
    const [a, b, c] = [closer.account.address, node.account.address, ms.account.address]
    const huge = 2n ** 256n / 100n
    await expectRevert(
      client.readContract({ ...msc(), functionName: 'firstBlockAllowedToMonitor', args: [0n, huge, a, b, c] }),
      'maliciously big settle timeout',
    )
    await expectRevert(
      client.readContract({ ...msc(), functionName: 'firstBlockAllowedToMonitor', args: [huge, 10n, a, b, c] }),
      'maliciously big closed_at_block',
    )
    // 50% of 1 rounds to 0: modulo by zero.
    await expectRevert(client.readContract({ ...msc(), functionName: 'firstBlockAllowedToMonitor', args: [0n, 1n, a, b, c] }), { panic: 0x12 })
  })

  test('for a closed channel it assumes the close happened settlement_timeout_min before the settle block', async () => {
    const { closeBlock, first } = await closedChannel()
    const assumedClose = closeBlock + SETTLE_TIMEOUT - SETTLE_TIMEOUT_MIN
    expect(first).toBe(referenceFirstBlock(assumedClose, SETTLE_TIMEOUT_MIN, closer.account.address, node.account.address, ms.account.address))
    expect(first).toBeGreaterThan(closeBlock)
    expect(first).toBeLessThan(closeBlock + SETTLE_TIMEOUT)
  })

  test('needs a registered service and a closed channel', async () => {
    const channelId = await openChannel()
    const call = (service: Address) =>
      client.readContract({
        ...msc(),
        functionName: 'firstBlockAllowedToMonitorChannel',
        args: [tokenNetwork, channelId, closer.account.address, node.account.address, service],
      })
    await expectRevert(call(stranger.account.address), 'service not registered')
    await expectRevert(call(ms.account.address), 'channel not closed')
  })

  test('refuses a token network reporting a settle block below its minimum settle timeout', async () => {
    // A stand-in token network (raw EVM code): settlement_timeout_min() returns 100, every other call
    // returns (1, 2), i.e. getChannelInfo says "Closed, settle block 1".
    const selector = toFunctionSelector('settlement_timeout_min()').slice(2)
    const code = `0x60003560e01c63${selector}14601e576001600052600260205260406000f35b606460005260206000f3` as Hex
    const fake: Address = '0x00000000000000000000000000000000000fa4e0'
    await client.setCode({ address: fake, bytecode: code })
    await expectRevert(
      client.readContract({
        ...msc(),
        functionName: 'firstBlockAllowedToMonitorChannel',
        args: [fake, 1n, closer.account.address, node.account.address, ms.account.address],
      }),
      'too low settle block number',
    )
  })
})

describe('monitor', () => {
  test('a request signed in TypeScript is submitted from the first allowed block, updating the channel and recording the reward', async () => {
    const { channelId, first } = await closedChannel()
    const request = await monitorRequest(channelId, 5n)
    await mineTo(client, first - 1n)
    await expectRevert(ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'not allowed to monitor')
    // Sent now, it is mined in the first allowed block.
    const receipt = await mined(ms, ms.writeContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }))
    expect(receipt.blockNumber).toBe(first)

    const [received] = parseEventLogs({ abi: MonitoringService.abi, logs: receipt.logs, eventName: 'NewBalanceProofReceived' })
    expect(received?.args).toEqual({
      token_network_address: tokenNetwork,
      channel_identifier: channelId,
      reward_amount: REWARD,
      nonce: 5n,
      ms_address: ms.account.address,
      raiden_node_address: node.account.address,
    })
    const [updated] = parseEventLogs({ abi: TokenNetwork.abi, logs: receipt.logs, eventName: 'NonClosingBalanceProofUpdated' })
    expect(updated?.args).toEqual({ channel_identifier: channelId, closing_participant: closer.account.address, nonce: 5n, balance_hash: request.balanceHash })
    const closerInfo = await client.readContract({
      ...tn(),
      functionName: 'getChannelParticipantInfo',
      args: [channelId, closer.account.address, node.account.address],
    })
    expect([closerInfo[3], closerInfo[4]]).toEqual([request.balanceHash, 5n])
    expect(await client.readContract({ ...msc(), functionName: 'rewards', args: [rewardId(channelId)] })).toEqual([
      REWARD,
      5n,
      node.account.address,
      ms.account.address,
    ])
  })

  test('an unregistered service is refused', async () => {
    const { channelId } = await closedChannel()
    const request = await monitorRequest(channelId, 5n)
    await client.mine({ blocks: Number(SETTLE_TIMEOUT) - 1 })
    await expectRevert(stranger.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'service not registered')
  })

  test('an open channel cannot be monitored', async () => {
    const channelId = await openChannel()
    const request = await monitorRequest(channelId, 5n)
    await expectRevert(ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'channel not closed')
  })

  test('a token network the registry does not know is refused', async () => {
    // A genuine TokenNetwork for the same token, but created by another registry.
    const otherRegistry = await deploy(client, TokenNetworkRegistry, [
      await client.readContract({ address: tnRegistry, abi: TokenNetworkRegistry.abi, functionName: 'secret_registry_address' }),
      SETTLE_TIMEOUT_MIN,
      1000n,
      10n,
    ])
    await mined(
      client,
      client.writeContract({
        address: otherRegistry,
        abi: TokenNetworkRegistry.abi,
        functionName: 'createERC20TokenNetworkWithoutLimits',
        args: [channelToken],
      }),
    )
    const lookalike = await client.readContract({
      address: otherRegistry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'token_to_token_networks',
      args: [channelToken],
    })
    const { channelId } = await closedChannel()
    const request = { ...(await monitorRequest(channelId, 5n)), tokenNetwork: lookalike }
    await expectRevert(ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'Unknown TokenNetwork')
  })

  test('the reward proof covers every field: changing any one of them is refused', async () => {
    const { channelId, first } = await closedChannel()
    await mineTo(client, first)
    const reason = 'Reward proof with wrong non_closing_participant'
    const good = await monitorRequest(channelId, 5n)
    const monitorWith = (r: MonitorRequest) => ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(r) })
    // Submitted with a changed reward amount, or with the node's counter-signature of another balance proof.
    await expectRevert(monitorWith({ ...good, rewardAmount: REWARD + 1n }), reason)
    await expectRevert(monitorWith({ ...good, nonClosingSignature: (await monitorRequest(channelId, 6n)).nonClosingSignature }), reason)
    // Signed over a changed field.
    const signedWith = async (overrides: Partial<RewardProof>, signer?: Address) => ({
      ...good,
      rewardProofSignature: (await monitorRequest(channelId, 5n, REWARD, overrides, signer)).rewardProofSignature,
    })
    await expectRevert(monitorWith(await signedWith({ rewardAmount: REWARD + 1n })), reason)
    await expectRevert(monitorWith(await signedWith({ monitoringServiceAddress: s.oneToN })), reason)
    await expectRevert(monitorWith(await signedWith({ chainId: chainId + 1n })), reason)
    await expectRevert(monitorWith(await signedWith({ tokenNetworkAddress: channelToken })), reason)
    await expectRevert(monitorWith(await signedWith({ nonClosingSignature: EMPTY_SIGNATURE })), reason)
    await expectRevert(monitorWith(await signedWith({ nonClosingParticipant: closer.account.address })), reason)
    // Right data, wrong signer.
    await expectRevert(monitorWith(await signedWith({}, closer.account.address)), reason)
    // The untouched request passes.
    await monitorWith(good)
  })

  test('only a newer nonce replaces the reward, and the newer submitter earns it', async () => {
    const { channelId } = await closedChannel()
    await monitorWhenAllowed(await monitorRequest(channelId, 5n))
    const [first2, latest] = [await firstAllowed(channelId, ms2), await client.getBlockNumber()]
    await mineTo(client, first2 > latest ? first2 : latest)
    await expectRevert(ms2.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(await monitorRequest(channelId, 5n)) }), 'stale nonce')
    await expectRevert(ms2.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(await monitorRequest(channelId, 4n)) }), 'stale nonce')
    await mined(ms2, ms2.writeContract({ ...msc(), functionName: 'monitor', args: monitorArgs(await monitorRequest(channelId, 6n, 12n)) }))
    expect(await client.readContract({ ...msc(), functionName: 'rewards', args: [rewardId(channelId)] })).toEqual([
      12n,
      6n,
      node.account.address,
      ms2.account.address,
    ])
  })

  test('the token network still checks the balance proof itself', async () => {
    const { channelId, first } = await closedChannel()
    await mineTo(client, first)
    const request = await monitorRequest(channelId, 5n)
    // The counter-signature and reward proof stay valid, but the closer's signature is over other data.
    const forged = { ...request, additionalHash: keccak256(toHex('other message')) }
    const nonClosingSignature = await sign(
      node.account.address,
      packBalanceProofCounter(
        MessageTypeId.BalanceProofUpdate,
        {
          tokenNetworkAddress: tokenNetwork,
          chainId,
          channelIdentifier: channelId,
          balanceHash: forged.balanceHash,
          nonce: 5n,
          additionalHash: forged.additionalHash,
        },
        forged.closingSignature,
      ),
    )
    const rewardProofSignature = await sign(
      node.account.address,
      packRewardProof({
        monitoringServiceAddress: s.monitoringService,
        chainId,
        tokenNetworkAddress: tokenNetwork,
        nonClosingParticipant: node.account.address,
        nonClosingSignature,
        rewardAmount: REWARD,
      }),
    )
    await expectRevert(
      ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs({ ...forged, nonClosingSignature, rewardProofSignature }) }),
      'TN/update: invalid closing sig',
    )
  })
})

describe('claimReward', () => {
  async function monitored() {
    const channel = await closedChannel()
    await monitorWhenAllowed(await monitorRequest(channel.channelId, 5n))
    return channel
  }
  const claim = (_who: AnvilClient, channelId: bigint) =>
    ({ ...msc(), functionName: 'claimReward', args: [channelId, tokenNetwork, closer.account.address, node.account.address] }) as const

  test('pays the reward from the node deposit once the settle block has passed, and only once', async () => {
    const { channelId, settleBlock } = await monitored()
    await mineTo(client, settleBlock)
    await expectRevert(client.simulateContract(claim(stranger, channelId)), 'channel not settled yet')
    await mineTo(client, settleBlock + 1n)
    // Anyone may trigger it; the service is paid.
    const receipt = await mined(stranger, stranger.writeContract(claim(stranger, channelId)))
    expect(await udcBalance(client, s, node.account.address)).toBe(100n - REWARD)
    expect(await udcBalance(client, s, ms.account.address)).toBe(REWARD)
    const [claimed] = parseEventLogs({ abi: MonitoringService.abi, logs: receipt.logs, eventName: 'RewardClaimed' })
    expect(claimed?.args).toEqual({ ms_address: ms.account.address, amount: REWARD, reward_identifier: rewardId(channelId) })
    expect(await client.readContract({ ...msc(), functionName: 'rewards', args: [rewardId(channelId)] })).toEqual([0n, 0n, zeroAddress, zeroAddress])
    await expectRevert(client.simulateContract(claim(stranger, channelId)), 'reward_sender is zero')
  })

  test('works after the channel was settled too', async () => {
    const { channelId, settleBlock } = await monitored()
    await mineTo(client, settleBlock)
    // The smaller transferred + locked side goes first: the node has no proof stored (closed with nonce 0).
    await mined(
      client,
      client.writeContract({
        ...tn(),
        functionName: 'settleChannel',
        args: [channelId, node.account.address, 0n, 0n, ZERO_HASH, closer.account.address, 15n, 0n, LOCKSROOT_OF_NO_LOCKS],
      }),
    )
    const [, state] = await client.readContract({ ...tn(), functionName: 'getChannelInfo', args: [channelId, closer.account.address, node.account.address] })
    expect(state).toBe(4) // Removed
    await mined(ms, ms.writeContract(claim(ms, channelId)))
    expect(await udcBalance(client, s, ms.account.address)).toBe(REWARD)
  })

  test('an open channel is too early', async () => {
    const channelId = await openChannel()
    await expectRevert(client.simulateContract(claim(ms, channelId)), 'too early channel state')
  })

  test('a closed channel nobody monitored has no reward', async () => {
    const { channelId, settleBlock } = await closedChannel()
    await mineTo(client, settleBlock + 1n)
    await expectRevert(client.simulateContract(claim(ms, channelId)), 'reward_sender is zero')
  })

  test('fails when the node deposit cannot cover the reward', async () => {
    const { channelId, settleBlock } = await closedChannel()
    await monitorWhenAllowed(await monitorRequest(channelId, 5n, 101n))
    await mineTo(client, settleBlock + 1n)
    await expectRevert(client.simulateContract(claim(ms, channelId)), 'UDC did not transfer')
    await depositToUdc(node, s, node.account.address, 1n)
    await mined(ms, ms.writeContract(claim(ms, channelId)))
    expect(await udcBalance(client, s, node.account.address)).toBe(0n)
  })
})

test('invariant 20: IOUs and monitoring rewards are paid only under their conditions', async () => {
  // OneToN: registered receiver, unexpired IOU, valid signature, one claim per session, partial when low.
  const payer = closer
  await depositToUdc(payer, s, payer.account.address, 6n)
  const expiration = (await client.getBlockNumber()) + 5n
  const iou = { oneToNAddress: s.oneToN, chainId, sender: payer.account.address, receiver: ms.account.address, amount: 10n, expirationBlock: expiration }
  const signature = await sign(payer.account.address, packIou(iou))
  const claimIou = (receiver: Address, sig: Hex = signature) =>
    ms.simulateContract({ address: s.oneToN, abi: OneToN.abi, functionName: 'claim', args: [iou.sender, receiver, iou.amount, iou.expirationBlock, sig] })
  await expectRevert(claimIou(stranger.account.address), 'receiver not registered')
  await expectRevert(claimIou(ms.account.address, await sign(payer.account.address, packIou({ ...iou, amount: 11n }))), 'Signature mismatch')
  expect((await claimIou(ms.account.address)).result).toBe(6n) // partial: only 6 deposited
  await mined(
    ms,
    ms.writeContract({
      address: s.oneToN,
      abi: OneToN.abi,
      functionName: 'claim',
      args: [iou.sender, iou.receiver, iou.amount, iou.expirationBlock, signature],
    }),
  )
  await expectRevert(claimIou(ms.account.address), 'Already settled session')
  // An unclaimed IOU to another registered service is still valid in its expiration block (it pays 0: the
  // deposit is used up) and expired one block later.
  const unclaimed = { ...iou, receiver: ms2.account.address }
  const unclaimedArgs = [
    unclaimed.sender,
    unclaimed.receiver,
    unclaimed.amount,
    unclaimed.expirationBlock,
    await sign(payer.account.address, packIou(unclaimed)),
  ] as const
  await mineTo(client, expiration)
  expect((await ms2.simulateContract({ address: s.oneToN, abi: OneToN.abi, functionName: 'claim', args: unclaimedArgs })).result).toBe(0n)
  await mineTo(client, expiration + 1n)
  await expectRevert(ms2.simulateContract({ address: s.oneToN, abi: OneToN.abi, functionName: 'claim', args: unclaimedArgs }), 'IOU expired')
  await expectRevert(
    ms.simulateContract({ address: s.oneToN, abi: OneToN.abi, functionName: 'bulkClaim', args: [[iou.sender], [], [1n], [1n], signature] }),
    'Same number of elements required for all input parameters',
  )

  // MonitoringService: registered MS, not before its first block, newer nonces only, known token networks.
  const { channelId, first, settleBlock } = await closedChannel()
  const request = await monitorRequest(channelId, 5n)
  await mineTo(client, first - 1n)
  await expectRevert(ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'not allowed to monitor')
  await expectRevert(stranger.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'service not registered')
  // UserDeposit answers token() like a token network would, but the registry does not list it.
  await expectRevert(
    ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs({ ...request, tokenNetwork: s.userDeposit }) }),
    'Unknown TokenNetwork',
  )
  await mined(ms, ms.writeContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }))
  await expectRevert(ms.simulateContract({ ...msc(), functionName: 'monitor', args: monitorArgs(request) }), 'stale nonce')
  // claimReward: only after the settle block, paid from the node's deposit.
  const claimArgs = [channelId, tokenNetwork, closer.account.address, node.account.address] as const
  await mineTo(client, settleBlock)
  await expectRevert(ms.simulateContract({ ...msc(), functionName: 'claimReward', args: claimArgs }), 'channel not settled yet')
  await client.mine({ blocks: 1 })
  await mined(ms, ms.writeContract({ ...msc(), functionName: 'claimReward', args: claimArgs }))
  expect(await udcBalance(client, s, node.account.address)).toBe(100n - REWARD)
  expect(await udcBalance(client, s, ms.account.address)).toBe(6n + REWARD)
})
