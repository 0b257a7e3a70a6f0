import { describe, expect, inject, test } from 'vitest'
import type { SyncedChainEvent } from '../../../src/chain/chainEvents.ts'
import { ServiceChainWatch, type SyncMark, type SyncMarkSteps } from '../../../src/chain/serviceChainWatch.ts'
import { freshAccount, ownTokenNetwork } from '../../support/sharedChain.ts'

// A store whose steps write at once: the sync mark, and the events each step applied (in a list beside it).
class MarkStore {
  sync: SyncMark | undefined
  applied: SyncedChainEvent[] = []
  transact<T>(step: (tx: SyncMarkSteps) => T): Promise<T> {
    let next = this.sync
    const value = step({
      requireLease: () => {},
      sync: () => next,
      putSync: (mark) => {
        next = mark
      },
    })
    this.sync = next
    return Promise.resolve(value)
  }
}

describe("a service's chain watch", () => {
  test('applies each range once with its sync mark; a restart goes on after the mark; a range whose step fails is applied again at the next look', async () => {
    const deployment = inject('deployment')
    const owner = await freshAccount(inject('rpcUrl'))
    const { tokenNetwork, registered } = await ownTokenNetwork(owner, deployment)
    const firstBlock = registered.receipt.blockNumber
    const store = new MarkStore()
    const errors: string[] = []
    let failNext = false
    const watch = () =>
      new ServiceChainWatch<SyncMarkSteps>({
        chain: owner.chain,
        store,
        contracts: {
          tokenNetworkRegistry: deployment.contracts.TokenNetworkRegistry.address,
          secretRegistry: deployment.contracts.SecretRegistry.address,
        },
        firstBlock,
        apply: (_, events) => {
          if (failNext) {
            failNext = false
            throw new Error('the store failed')
          }
          store.applied.push(...events)
        },
        confirmations: 0n,
        pollingInterval: 50,
        onLooked: () => {},
        onError: (where, error) => errors.push(`${where}: ${(error as Error).message}`),
      })

    const first = watch()
    await first.catchUp()
    const mark = store.sync!
    expect(mark.syncedBlock).toBeGreaterThanOrEqual(firstBlock)
    expect(mark.tokenNetworks).toContain(tokenNetwork)
    const ours = (e: SyncedChainEvent) =>
      e.event.name === 'TokenNetworkCreated' &&
      e.event.address.toLowerCase() === deployment.contracts.TokenNetworkRegistry.address.toLowerCase() &&
      e.event.blockNumber === firstBlock
    expect(store.applied.filter(ours)).toHaveLength(1)
    expect(store.applied.every((e) => e.event.blockNumber >= firstBlock && e.event.blockNumber <= mark.syncedBlock)).toBe(true)
    await first.stop()

    // A new block (our own token network again), a watch made anew from the store: only what follows the mark.
    const { tokenNetwork: second, registered: again } = await ownTokenNetwork(owner, deployment)
    const before = store.applied.length
    failNext = true
    const restarted = watch()
    await expect(restarted.catchUp()).rejects.toThrow('the store failed')
    expect(store.sync).toEqual(mark)
    await restarted.catchUp()
    const after = store.applied.slice(before)
    expect(after.every((e) => e.event.blockNumber > mark.syncedBlock)).toBe(true)
    expect(after.filter((e) => e.event.name === 'TokenNetworkCreated' && e.event.blockNumber === again.receipt.blockNumber)).toHaveLength(1)
    expect(store.sync!.tokenNetworks).toEqual([...mark.tokenNetworks, ...store.sync!.tokenNetworks.slice(mark.tokenNetworks.length)])
    expect(store.sync!.tokenNetworks).toContain(second)
    await restarted.stop()
    expect(errors).toEqual([])
  })
})
