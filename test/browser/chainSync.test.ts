// The chain layer inside Chromium: if any module it reaches needed Node, this file would not even load.
import { createTestClient, getAddress, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expect, inject, test } from 'vitest'
import {
  createBlockWatcher,
  createChainClient,
  createTransactionQueue,
  openChannel,
  readTokenNetworkOf,
  registerToken,
  syncChainEvents,
} from '../../src/chain/index.ts'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

test('Chromium creates a chain client, sends through the queue and syncs the events it caused', async () => {
  const rpcUrl = inject('rpcUrl')
  const deployment = inject('deployment')
  // A fresh account funded for this test only, so no other test's nonces are touched.
  const privateKey = generatePrivateKey()
  await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({ address: privateKeyToAccount(privateKey).address, value: parseEther('10') })

  const chain = await createChainClient({ rpcUrl, privateKey, pollingInterval: 50 })
  expect(chain.chainId).toBe(deployment.chainId)
  const queue = createTransactionQueue(chain)

  // A token of our own to register: the shared deployment's tokens stay unregistered for other tests.
  const deployHash = await chain.walletClient.deployContract({
    abi: CustomToken.abi,
    bytecode: bytecode.CustomToken,
    args: [10n ** 24n, 18, 'Browser Token', 'BRT'],
  })
  const token = getAddress((await waitForReceipt(chain.publicClient, deployHash, { timeout: 20_000 })).contractAddress!)
  const registry = deployment.contracts.TokenNetworkRegistry.address
  const { tokenNetwork } = await registerToken(chain, queue, { registry, token })
  expect(await readTokenNetworkOf(chain, { registry, token })).toBe(tokenNetwork)
  const partner = privateKeyToAccount(generatePrivateKey()).address
  const opened = await openChannel(chain, queue, { tokenNetwork, partner, settleTimeout: 20n, totalDeposit: 30n })

  const toBlock = await chain.publicClient.getBlockNumber()
  const { events, tokenNetworks } = await syncChainEvents(chain.publicClient, {
    contracts: {
      tokenNetworkRegistry: registry,
      secretRegistry: deployment.contracts.SecretRegistry.address,
      userDeposit: deployment.contracts.UserDeposit.address,
    },
    fromBlock: BigInt(deployment.contracts.TokenNetworkRegistry.blockNumber),
    toBlock,
    defaultRevealTimeout: 10n,
  })
  expect(tokenNetworks).toContain(tokenNetwork)
  const ours = events.flatMap((e) => (e.change && 'tokenNetwork' in e.change && e.change.tokenNetwork === tokenNetwork ? [e.change] : []))
  expect(ours).toEqual([
    { type: 'tokenNetworkCreated', token, tokenNetwork },
    {
      type: 'channelOpened',
      tokenNetwork,
      channelId: opened.channelId,
      participant1: chain.address,
      participant2: partner,
      settleTimeout: 20n,
      blockNumber: opened.receipt.blockNumber,
      revealTimeout: 10n,
    },
    { type: 'channelDeposit', tokenNetwork, channelId: opened.channelId, participant: chain.address, totalDeposit: 30n },
  ])

  const watcher = createBlockWatcher(chain.publicClient, { fromBlock: toBlock - 1n, confirmations: 0n })
  expect(await watcher.poll()).toMatchObject({ type: 'blocks', fromBlock: toBlock })
})
