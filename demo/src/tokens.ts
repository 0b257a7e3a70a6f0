/**
 * The tokens the page shows amounts of: the configured test tokens and the service token of the user deposit, each
 * with its symbol and its decimals as its contract says (ERC-20 `decimals()`, `symbol()`), so that every amount
 * on the page is in the token's own units, never in base units.
 */
import { formatUnits, parseUnits } from 'viem'
import { rpc } from './chain.ts'
import type { DemoConfig } from './config.ts'

/** A token; a configured one with its token network, which names it in the monitoring service's records. */
export type Token = { address: `0x${string}`; symbol: string; decimals: number; network?: `0x${string}` }

/** What the page needs of the deployment file the configuration names. */
export type Deployment = {
  serviceToken: `0x${string}`
  contracts: { UserDeposit: { address: `0x${string}` }; TokenNetworkRegistry: { address: `0x${string}` } }
}

export async function loadDeployment(config: DemoConfig): Promise<Deployment> {
  const response = await fetch(config.deployment)
  if (!response.ok) throw new Error(`${config.deployment}: HTTP ${response.status}`)
  return (await response.json()) as Deployment
}

async function callData(url: string, to: string, selector: string): Promise<`0x${string}`> {
  return rpc<`0x${string}`>(url, 'eth_call', [{ to, data: selector }, 'latest'])
}

/**
 * The configured tokens (by the configuration's symbols, with their token networks) and the service token (by its
 * own symbol), in that order.
 */
export async function loadTokens(config: DemoConfig, deployment: Deployment): Promise<Token[]> {
  const decimals = async (token: string) => Number(BigInt(await callData(config.rpc, token, '0x313ce567')))
  // TokenNetworkRegistry.token_to_token_networks(token): the address in the word's last 20 bytes.
  const network = async (token: string) =>
    `0x${(await callData(config.rpc, deployment.contracts.TokenNetworkRegistry.address, `0x0fabd9e7${token.slice(2).toLowerCase().padStart(64, '0')}`)).slice(-40)}` as const
  // An ABI-encoded string: its offset, its length in bytes, then the bytes.
  const symbol = async (token: string) => {
    const word = (await callData(config.rpc, token, '0x95d89b41')).slice(2)
    const length = Number(BigInt(`0x${word.slice(64, 128)}`))
    const bytes = word.slice(128, 128 + 2 * length).match(/../g) ?? []
    return new TextDecoder().decode(Uint8Array.from(bytes, (b) => Number.parseInt(b, 16)))
  }
  return Promise.all([
    ...Object.entries(config.tokens).map(async ([name, address]) => ({
      address,
      symbol: name,
      decimals: await decimals(address),
      network: await network(address),
    })),
    (async () => ({ address: deployment.serviceToken, symbol: await symbol(deployment.serviceToken), decimals: await decimals(deployment.serviceToken) }))(),
  ])
}

/**
 * The network's minimum settle timeout (TokenNetworkRegistry.settlement_timeout_min()), in blocks. The contract lets a
 * monitoring service act only late in a settle window, whatever the channel's own timeout: from this minimum before
 * the window's end, plus 30 % of it (to 80 %, spread by the addresses).
 */
export async function loadSettleTimeoutMin(config: DemoConfig, deployment: Deployment): Promise<number> {
  return Number(BigInt(await callData(config.rpc, deployment.contracts.TokenNetworkRegistry.address, '0xb8378f75')))
}

/** How many blocks at the end of a settle window a monitoring service may act in, at most (the contract's rule above). */
export const monitorBlocks = (settleTimeoutMin: number) => settleTimeoutMin - Math.floor((30 * settleTimeoutMin) / 100)

/** An amount for people: at most 4 decimals, no trailing zeros. */
export function units(base: bigint | string, decimals = 18): string {
  const text = formatUnits(BigInt(base), decimals)
  const [whole, fraction = ''] = text.split('.')
  const short = fraction.slice(0, 4).replace(/0+$/, '')
  return short ? `${whole}.${short}` : whole!
}

/** What a person typed ("2.5"), in the token's base units; a clear error for what is not an amount. */
export function baseUnits(text: string, token: Token): bigint {
  const trimmed = text.trim()
  if (!/^\d+(\.\d*)?$|^\.\d+$/.test(trimmed)) throw new Error(`“${text}” is not an amount of ${token.symbol}: write it as 2 or 2.5`)
  const [, fraction = ''] = trimmed.split('.')
  if (fraction.length > token.decimals) throw new Error(`${token.symbol} has ${token.decimals} decimals: “${text}” has more`)
  return parseUnits(trimmed, token.decimals)
}
