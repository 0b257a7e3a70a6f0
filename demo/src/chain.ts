/**
 * What the page reads from the chain itself (the REST API, like Raiden's, does not give on-chain balances), and
 * the devnet's faucet: anvil's own `anvil_setBalance`. Plain JSON-RPC, a handful of calls.
 */
let nextId = 1

export async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  })
  const answer = (await response.json()) as { result?: T; error?: { message: string } }
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`)
  return answer.result as T
}

const word = (address: string) => address.slice(2).toLowerCase().padStart(64, '0')

/** ERC-20 balanceOf and UserDeposit effectiveBalance take one address and answer one uint256. */
async function callUint(url: string, to: string, selector: string, address: string): Promise<bigint> {
  return BigInt(await rpc<string>(url, 'eth_call', [{ to, data: `${selector}${word(address)}` }, 'latest']))
}

export const tokenBalance = (url: string, token: string, owner: string) => callUint(url, token, '0x70a08231', owner)
export const userDepositBalance = (url: string, userDeposit: string, owner: string) => callUint(url, userDeposit, '0x16a398f7', owner)
export const ethBalance = async (url: string, owner: string) => BigInt(await rpc<string>(url, 'eth_getBalance', [owner, 'latest']))
export const blockNumber = async (url: string) => BigInt(await rpc<string>(url, 'eth_blockNumber', []))

/** The devnet's faucet: sets the account's native balance (anvil only). */
export async function faucet(url: string, owner: string, wei: bigint): Promise<void> {
  await rpc(url, 'anvil_setBalance', [owner, `0x${wei.toString(16)}`])
}
