import { createTestClient, http, publicActions, walletActions, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'

/** A viem client for anvil that reads, writes and uses anvil's test RPCs. cacheTime 0: see docs/decisions/0017-toolchain.md. */
export function anvilClient(rpcUrl: string, privateKey: Hex) {
  return createTestClient({
    chain: foundry,
    mode: 'anvil',
    transport: http(rpcUrl),
    account: privateKeyToAccount(privateKey),
    cacheTime: 0,
    pollingInterval: 50,
  })
    .extend(publicActions)
    .extend(walletActions)
}

export type AnvilClient = ReturnType<typeof anvilClient>
