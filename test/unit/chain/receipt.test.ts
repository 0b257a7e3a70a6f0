import { createTestClient, http, keccak256, parseEther, publicActions, WaitForTransactionReceiptTimeoutError } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { expect, inject, test } from 'vitest'
import { waitForReceipt } from '../../../src/chain/receipt.ts'

const client = createTestClient({ chain: foundry, mode: 'anvil', transport: http(inject('rpcUrl')), pollingInterval: 20, cacheTime: 0 }).extend(publicActions)

test('finds a receipt that was not there at its first look, looking again without waiting for another block', async () => {
  const account = privateKeyToAccount(generatePrivateKey())
  await client.setBalance({ address: account.address, value: parseEther('1') })
  const request = await client.prepareTransactionRequest({ account, to: account.address, value: 1n, chain: foundry })
  const signed = await account.signTransaction(request as never)
  const hash = keccak256(signed)
  // Looking starts before the transaction exists; it is then mined in a block of its own and no block follows.
  const receipt = waitForReceipt(client, hash, { timeout: 10_000 })
  await new Promise((resolve) => setTimeout(resolve, 100))
  await client.sendRawTransaction({ serializedTransaction: signed })
  expect((await receipt).transactionHash).toBe(hash)
})

test('gives up with a timeout error for a transaction that never comes', async () => {
  await expect(waitForReceipt(client, keccak256('0x01'), { timeout: 200 })).rejects.toBeInstanceOf(WaitForTransactionReceiptTimeoutError)
})
