import { TransactionReceiptNotFoundError, WaitForTransactionReceiptTimeoutError, type Hash, type TransactionReceipt } from 'viem'

export type ReceiptReader = {
  getTransactionReceipt(args: { hash: Hash }): Promise<TransactionReceipt>
  pollingInterval: number
}

/**
 * The receipt of `hash` once it is mined, asking for the receipt itself every `pollingInterval`.
 *
 * Not viem's waitForTransactionReceipt: when it finds the transaction in a block but not yet its receipt, it waits
 * for the next block number to look again, and a chain that mines on demand (anvil's automine: the devnet, every
 * test chain) makes no block after the one holding the transaction. If the receipt lags the block (anvil under
 * load), that wait never ends: the likely cause of a contract test that hung once under double load.
 */
export async function waitForReceipt(
  client: ReceiptReader,
  hash: Hash,
  { timeout, pollingInterval = client.pollingInterval }: { timeout: number; pollingInterval?: number },
): Promise<TransactionReceipt> {
  const deadline = Date.now() + timeout
  for (;;) {
    try {
      return await client.getTransactionReceipt({ hash })
    } catch (e) {
      if (!(e instanceof TransactionReceiptNotFoundError)) throw e
    }
    if (Date.now() + pollingInterval > deadline) throw new WaitForTransactionReceiptTimeoutError({ hash })
    await new Promise((resolve) => setTimeout(resolve, pollingInterval))
  }
}
