import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAddress, keccak256, toHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeEach, describe, expect, test } from 'vitest'
import { applyChainEvent } from '../../../src/monitor/channelEvents.ts'
import { channelKey, type WatchedChannel } from '../../../src/monitor/records.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'
import { rewardIdentifier } from '../../../src/protocol/rewardProof.ts'
import type { StoredChainEvent } from '../../../src/storage/storage.ts'
import { monitoringRequest, partnerProof } from '../../support/monitoring.ts'

/** What confirmed chain events do to the channels the service watches (no chain here: the events as data). */

const service = privateKeyToAddress(generatePrivateKey())
const otherService = privateKeyToAddress(generatePrivateKey())
const monitoringService = getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0')
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const [partnerKey, requesterKey] = [generatePrivateKey(), generatePrivateKey()]
const [partner, requester] = [privateKeyToAddress(partnerKey), privateKeyToAddress(requesterKey)]
const channelId = 7n
const key = channelKey(tokenNetwork, channelId)
const dirs: string[] = []
let store: MonitorStore
let block = 100n

afterAll(async () => {
  await store?.close()
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})
beforeEach(async () => {
  await store?.close()
  const dir = mkdtempSync(join(tmpdir(), 'sluice-monitor-events-'))
  dirs.push(dir)
  store = await MonitorStore.open(dir, { chainId: 31337, monitoringService, address: service })
  const request = monitoringRequest(
    requesterKey,
    partnerProof(partnerKey, { tokenNetwork, chainId: 31337n, channelId }, { nonce: 5n, transferred: 15n }),
    monitoringService,
    10n,
  )
  const watched: WatchedChannel = { tokenNetwork, channelId, requests: { [requester.toLowerCase()]: { request, closing: partner, receivedAt: 0 } }, duties: {} }
  await store.transact((tx) => tx.putChannel(watched))
})

function event(
  name: string,
  args: Record<string, unknown>,
  at: { tokenNetwork?: Address; channelId?: bigint } = { tokenNetwork, channelId },
): StoredChainEvent {
  block++
  return { blockNumber: block, logIndex: 0, transactionHash: keccak256(toHex(`tx ${block}`)) as Hex, address: tokenNetwork, name, args, ...at }
}
const apply = (...events: StoredChainEvent[]) => store.transact((tx) => events.forEach((e) => applyChainEvent(tx, e, service)))
const watched = () => store.channels.get(key)
const duty = () => watched()?.duties[requester.toLowerCase()]
const closedBy = (closer: Address) => event('ChannelClosed', { channel_identifier: channelId, closing_participant: closer, nonce: 1n, balance_hash: '0x00' })

describe('chain events for a watched channel', () => {
  test("the partner's close gives the requester a monitor duty, once however often it is applied; the requester's own close none", async () => {
    const close = closedBy(partner)
    await apply(close, close)
    expect(duty()).toEqual({ closing: partner, nonClosing: requester, monitor: { status: 'due' } })
    expect(watched()?.closed).toEqual({ by: partner, block: close.blockNumber })
    expect(store.openChannels()).toEqual([key])

    await store.transact((tx) => tx.putChannel({ ...watched()!, duties: {}, closed: undefined }))
    await apply(closedBy(requester))
    expect(watched()?.duties).toEqual({})
  })

  test('an update that puts the nonce on-chain makes the duty not needed; a lower one does not', async () => {
    await apply(closedBy(partner), event('NonClosingBalanceProofUpdated', { channel_identifier: channelId, closing_participant: partner, nonce: 4n }))
    expect(duty()?.monitor.status).toBe('due')
    await apply(event('NonClosingBalanceProofUpdated', { channel_identifier: channelId, closing_participant: partner, nonce: 5n }))
    expect(duty()?.monitor).toMatchObject({ status: 'not_needed' })
  })

  test('our NewBalanceProofReceived: the call is done and its reward due; RewardClaimed with our address: claimed', async () => {
    const received = event('NewBalanceProofReceived', {
      token_network_address: tokenNetwork,
      channel_identifier: channelId,
      reward_amount: 10n,
      nonce: 5n,
      ms_address: service,
      raiden_node_address: requester,
    })
    await apply(closedBy(partner), received)
    expect(duty()).toMatchObject({
      monitor: { status: 'done', nonce: 5n, rewardAmount: 10n, transactionHash: received.transactionHash, blockNumber: received.blockNumber },
      claim: { status: 'due', amount: 10n },
    })
    // Another service's RewardClaimed is not ours.
    const id = rewardIdentifier(channelId, tokenNetwork)
    await apply(event('RewardClaimed', { ms_address: otherService, amount: 10n, reward_identifier: id }, {}))
    expect(duty()?.claim?.status).toBe('due')
    const claimed = event('RewardClaimed', { ms_address: service, amount: 10n, reward_identifier: id }, {})
    await apply(claimed)
    expect(duty()?.claim).toEqual({ status: 'claimed', amount: 10n, transactionHash: claimed.transactionHash, blockNumber: claimed.blockNumber })
    expect(store.openChannels()).toEqual([])
  })

  test("another service's submission: our duty is not needed; after ours, a newer one of its takes the reward (lost)", async () => {
    const theirs = (nonce: bigint) =>
      event('NewBalanceProofReceived', {
        token_network_address: tokenNetwork,
        channel_identifier: channelId,
        reward_amount: 10n,
        nonce,
        ms_address: otherService,
        raiden_node_address: requester,
      })
    await apply(closedBy(partner), theirs(5n))
    expect(duty()?.monitor).toMatchObject({ status: 'not_needed' })

    await store.transact((tx) => tx.putChannel({ ...watched()!, duties: {}, closed: undefined }))
    await apply(closedBy(partner))
    await apply(
      event('NewBalanceProofReceived', {
        token_network_address: tokenNetwork,
        channel_identifier: channelId,
        reward_amount: 10n,
        nonce: 5n,
        ms_address: service,
        raiden_node_address: requester,
      }),
    )
    await apply(theirs(6n))
    expect(duty()?.claim).toMatchObject({ status: 'lost' })
  })

  test('settlement drops the requests, marks a duty still due as missed, and forgets a channel with nothing left', async () => {
    const settled = () => event('ChannelSettled', { channel_identifier: channelId })
    await apply(closedBy(partner), settled())
    expect(watched()?.requests).toEqual({})
    expect(duty()?.monitor).toMatchObject({ status: 'missed' })

    await store.transact((tx) => tx.putChannel({ ...watched()!, duties: {}, settled: undefined }))
    await apply(settled())
    expect(watched()).toBeUndefined()
  })

  test("another channel's events change nothing", async () => {
    const before = structuredClone(watched())
    await apply(
      event('ChannelClosed', { channel_identifier: 8n, closing_participant: partner }, { tokenNetwork, channelId: 8n }),
      event('ChannelSettled', { channel_identifier: 7n }, { tokenNetwork: monitoringService, channelId: 7n }),
    )
    expect(watched()).toEqual(before)
    expect(store.channels.size).toBe(1)
  })
})
