import { encodeFunctionData, http, keccak256, toHex, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient } from '../../../src/chain/chainClient.ts'
import { ChainIdMismatchError, InsufficientFundsForGasError, TransactionRevertedError } from '../../../src/chain/errors.ts'
import { readChannelIdentifier } from '../../../src/chain/reads.ts'
import { registerToken } from '../../../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue, type ChainCall } from '../../../src/chain/transactionQueue.ts'
import { SecretRegistry, TokenNetwork } from '../../../src/contracts/index.ts'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { startChainTestbed, type ChainTestbed } from './chainTestbed.ts'
import { waitForReceipt } from '../../../src/chain/receipt.ts'

let bed: ChainTestbed
let tokenNetwork: Hex
beforeAll(async () => {
  bed = await startChainTestbed({ accounts: 3 })
  const [a] = bed.accounts
  tokenNetwork = (
    await registerToken(a!.chain, a!.queue, { registry: bed.deployment.contracts.TokenNetworkRegistry.address, token: bed.deployment.tokens.TTT })
  ).tokenNetwork
})
afterAll(() => bed.stop())

const registerSecretCall = (secretRegistry: Hex, label: string): ChainCall => ({
  to: secretRegistry,
  data: encodeFunctionData({ abi: SecretRegistry.abi, functionName: 'registerSecret', args: [keccak256(toHex(label))] }),
  description: `registerSecret(${label})`,
})

const openCall = (participant1: Hex, participant2: Hex): ChainCall => ({
  to: tokenNetwork,
  data: encodeFunctionData({ abi: TokenNetwork.abi, functionName: 'openChannel', args: [participant1, participant2, 10n] }),
  description: 'openChannel',
})

describe('createChainClient', () => {
  test('learns the chain id from the endpoint and derives the account', async () => {
    const chain = await createChainClient({ rpcUrl: bed.anvil.rpcUrl, privateKey: anvilKeys[1] })
    expect(chain.chainId).toBe(31337)
    expect(chain.address).toBe(bed.accounts[0]!.chain.address)
    expect(chain.publicClient.chain.id).toBe(31337)
  })

  test('refuses an endpoint of another chain', async () => {
    const error = await createChainClient({ rpcUrl: bed.anvil.rpcUrl, privateKey: anvilKeys[1], chainId: 1 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ChainIdMismatchError)
    expect(error).toMatchObject({ name: 'ChainIdMismatchError', expected: 1, actual: 31337 })
  })

  test('reports an unreachable endpoint as ChainRpcError', async () => {
    const error = await createChainClient({
      rpcUrl: 'http://127.0.0.1:1',
      transport: http('http://127.0.0.1:1', { retryCount: 0 }),
      privateKey: anvilKeys[1],
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'ChainRpcError', method: 'eth_chainId' })
  })
})

describe('createTransactionQueue', () => {
  test('sends 20 concurrent transactions of one account with consecutive nonces, in call order', async () => {
    const { chain, queue } = bed.accounts[1]!
    const first = await chain.publicClient.getTransactionCount({ address: chain.address, blockTag: 'pending' })
    const submitted: number[] = []
    const sends = Array.from({ length: 20 }, (_, i) =>
      queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, `concurrent ${i}`), {
        onSubmitted: ({ nonce }) => void submitted.push(nonce),
      }),
    )
    expect(queue.waiting).toBe(20)
    const sent = await Promise.all(sends)
    expect(queue.waiting).toBe(0)
    expect(sent.map((s) => s.nonce)).toEqual(Array.from({ length: 20 }, (_, i) => first + i))
    expect(submitted).toEqual(sent.map((s) => s.nonce))
    for (const s of sent) {
      expect(s.receipt.status).toBe('success')
      expect((await chain.publicClient.getTransaction({ hash: s.hash })).nonce).toBe(s.nonce)
    }
    // Mined in call order: block numbers never go down.
    const blocks = sent.map((s) => s.receipt.blockNumber)
    expect([...blocks].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(blocks)
  })

  test('adds the gas margin to the estimate', async () => {
    // An account of its own: a second queue must never share an account with another.
    const { chain } = await bed.account(anvilKeys[7])
    const queue = createTransactionQueue(chain, { gasMargin: 50 })
    const call = registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'margin')
    const estimate = await chain.publicClient.estimateGas({ account: chain.address, to: call.to, data: call.data })
    const { hash } = await queue.send(call)
    expect((await chain.publicClient.getTransaction({ hash })).gas).toBe((estimate * 150n) / 100n)
  })

  test('an account without ETH gets InsufficientFundsForGasError before anything is sent', async () => {
    const poor = await bed.account(anvilKeys[8])
    await bed.devnet.setBalance({ address: poor.chain.address, value: 0n })
    const error = await poor.queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'poor')).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InsufficientFundsForGasError)
    const typed = error as InsufficientFundsForGasError
    expect(typed.name).toBe('InsufficientFundsForGasError')
    expect(typed.balance).toBe(0n)
    expect(typed.required).toBeGreaterThan(0n)
    expect(await poor.chain.publicClient.getTransactionCount({ address: poor.chain.address })).toBe(0)
  })

  test('a call the contract refuses gives TransactionRevertedError with the exact reason, and burns no nonce', async () => {
    const { chain, queue } = bed.accounts[0]!
    const partner = bed.accounts[2]!.chain.address
    await queue.send(openCall(chain.address, partner))
    const nonce = await chain.publicClient.getTransactionCount({ address: chain.address, blockTag: 'pending' })
    const error = await queue.send(openCall(chain.address, partner)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TransactionRevertedError)
    expect(error).toMatchObject({ name: 'TransactionRevertedError', reason: 'TN/open: channel exists for participants', hash: undefined })
    expect(await chain.publicClient.getTransactionCount({ address: chain.address, blockTag: 'pending' })).toBe(nonce)
    // The next send still gets the next nonce.
    const next = await queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'after revert'))
    expect(next.nonce).toBe(nonce)
  })

  test('a transaction that reverts when mined gives TransactionRevertedError with its hash and the reason at its block', async () => {
    // Two senders open the same new pair while nothing is mined: both estimates pass, the later one of the block reverts.
    const [a, b] = bed.accounts
    const pair = [a!.chain.address, privateKeyToAccount(generatePrivateKey()).address] as const
    await bed.devnet.setAutomine(false)
    let results: PromiseSettledResult<unknown>[]
    try {
      let broadcast = 0
      const onSubmitted = () => void broadcast++
      const sends = [a!.queue.send(openCall(...pair), { onSubmitted }), b!.queue.send(openCall(...pair), { onSubmitted })]
      const failedEarly = Promise.race(sends.map((p) => p.then(() => new Promise(() => {}))))
      for (let i = 0; broadcast < 2 && i < 400; i++) await Promise.race([failedEarly, new Promise((r) => setTimeout(r, 5))])
      expect(broadcast).toBe(2)
      await bed.devnet.mine({ blocks: 1 })
      results = await Promise.allSettled(sends)
    } finally {
      await bed.devnet.setAutomine(true)
    }
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []))
    expect(failed).toHaveLength(1)
    expect(failed[0]).toBeInstanceOf(TransactionRevertedError)
    const error = failed[0] as TransactionRevertedError
    expect(error.reason).toBe('TN/open: channel exists for participants')
    expect(error.hash).toMatch(/^0x[0-9a-f]{64}$/)
    expect((await bed.devnet.getTransactionReceipt({ hash: error.hash! })).status).toBe('reverted')
    expect(await readChannelIdentifier(a!.chain, { tokenNetwork, participant: pair[0], partner: pair[1] })).toBeGreaterThan(0n)
  })

  test('after a nonce taken behind its back, the send signs again at the next nonce of the chain and goes through', async () => {
    const { chain, queue, key } = bed.accounts[2]!
    const warm = await queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'warm up'))
    // Another client of the same key uses the nonce the queue would use next.
    const other = await createChainClient({ rpcUrl: bed.anvil.rpcUrl, privateKey: key, pollingInterval: 20 })
    await waitForReceipt(other.publicClient, await other.walletClient.sendTransaction({ to: other.address, value: 1n }), { timeout: 20_000 })
    const sent = await queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'stale nonce'))
    expect(sent.receipt.status).toBe('success')
    expect(sent.nonce).toBe(warm.nonce + 2)
    const next = await queue.send(registerSecretCall(bed.deployment.contracts.SecretRegistry.address, 'resynced'))
    expect(next.nonce).toBe(warm.nonce + 3)
    expect(await chain.publicClient.getTransactionCount({ address: chain.address })).toBe(warm.nonce + 4)
  })
})
