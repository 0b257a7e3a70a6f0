import { createTestClient, http, publicActions, toHex, walletActions, type Hex, type Transport } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'

/** A viem client for anvil that reads, writes and uses anvil's test RPCs. cacheTime 0: see docs/decisions/0017-toolchain.md. */
export function anvilClient(rpcUrl: string, privateKey: Hex) {
  return createTestClient({
    chain: foundry,
    mode: 'anvil',
    transport: withGasMargin(http(rpcUrl)),
    account: privateKeyToAccount(privateKey),
    cacheTime: 0,
    pollingInterval: 50,
  })
    .extend(publicActions)
    .extend(walletActions)
}

export type AnvilClient = ReturnType<typeof anvilClient>

/**
 * anvil fills gas with the exact minimum at the moment of the estimate. A call whose cost depends on
 * block.timestamp (ServiceRegistry stores a new price only once a second has passed) then runs out of gas
 * when the next second begins before it is mined. 20% on top, as the node's transaction queue adds. viem asks
 * for gas with eth_fillTransaction when the node has it, else with eth_estimateGas.
 */
function withGasMargin(transport: Transport): Transport {
  const more = (gas: Hex) => toHex((BigInt(gas) * 6n) / 5n)
  return (parameters) => {
    const inner = transport(parameters)
    const request = (async (args: Parameters<typeof inner.request>[0], options?: Parameters<typeof inner.request>[1]) => {
      const result = await inner.request(args, options)
      const [asked] = (args.params ?? []) as [{ gas?: Hex }?]
      if (asked?.gas !== undefined) return result
      if (args.method === 'eth_estimateGas') return more(result as Hex)
      if (args.method === 'eth_fillTransaction') {
        const filled = result as { tx: { gas: Hex } }
        return { ...filled, tx: { ...filled.tx, gas: more(filled.tx.gas) } }
      }
      return result
    }) as typeof inner.request
    return { ...inner, request }
  }
}
