import { encodeFunctionData, getAddress, type Address } from 'viem'
import { ServiceRegistry } from '../contracts/index.ts'
import type { ChainClient } from './chainClient.ts'
import { withTokenApproval } from './erc20.ts'
import { read, type ChainReader } from './reads.ts'
import type { SentTransaction, TransactionQueue } from './transactionQueue.ts'

/** A service's registration (docs/protocol.md §1.7): valid until a timestamp, with the URL it published. */
export type ServiceRegistration = {
  /** Whether the registry counts it as registered now (`block.timestamp < validTill`). */
  registered: boolean
  /** Unix seconds; 0 if it never registered. */
  validTill: bigint
  /** What setURL stored ('' if nothing). */
  url: string
}

export async function readServiceRegistration(
  chain: ChainReader,
  { serviceRegistry, service = chain.address }: { serviceRegistry: Address; service?: Address },
): Promise<ServiceRegistration> {
  const [registered, validTill, url] = await Promise.all([
    read(chain, serviceRegistry, ServiceRegistry.abi, 'hasValidRegistration', [service]),
    read(chain, serviceRegistry, ServiceRegistry.abi, 'service_valid_till', [service]),
    read(chain, serviceRegistry, ServiceRegistry.abi, 'urls', [service]),
  ])
  return { registered, validTill, url }
}

/** What a registration (or an extension by its duration) costs now, and in which token. */
export async function readRegistrationPrice(chain: ChainReader, { serviceRegistry }: { serviceRegistry: Address }): Promise<{ price: bigint; token: Address }> {
  const [price, token] = await Promise.all([
    read(chain, serviceRegistry, ServiceRegistry.abi, 'currentPrice', []),
    read(chain, serviceRegistry, ServiceRegistry.abi, 'token', []),
  ])
  return { price, token: getAddress(token) }
}

/**
 * Registers the account as a service, or extends its registration, at today's price: approves exactly that much of
 * the registry's token and deposits with the price as the limit (the price only falls with time, but another
 * registration in between raises it: the contract then refuses with "not enough limit" at the estimate, and nothing
 * is sent). InsufficientTokenBalanceError when the account holds too few tokens.
 */
export async function depositToServiceRegistry(
  chain: ChainClient,
  queue: TransactionQueue,
  { serviceRegistry }: { serviceRegistry: Address },
): Promise<SentTransaction & { price: bigint }> {
  const { price, token } = await readRegistrationPrice(chain, { serviceRegistry })
  const sent = await withTokenApproval(chain, queue, { token, spender: serviceRegistry, amount: price }, () =>
    queue.send({
      to: serviceRegistry,
      data: encodeFunctionData({ abi: ServiceRegistry.abi, functionName: 'deposit', args: [price] }),
      description: `ServiceRegistry.deposit(${price})`,
    }),
  )
  return { ...sent, price }
}

/** Publishes the service's URL (the registration must be valid). */
export function setServiceUrl(
  _chain: ChainClient,
  queue: TransactionQueue,
  { serviceRegistry, url }: { serviceRegistry: Address; url: string },
): Promise<SentTransaction> {
  return queue.send({
    to: serviceRegistry,
    data: encodeFunctionData({ abi: ServiceRegistry.abi, functionName: 'setURL', args: [url] }),
    description: `ServiceRegistry.setURL(${url})`,
  })
}

/** A service the registry counts as registered now, with the URL it published. */
export type RegisteredService = { address: Address; url: string; validTill: bigint }

/**
 * The services registered now (a valid registration), the newest `max` depositors looked at: the registry lists
 * every address that ever deposited, in order, and never forgets one. What each service does (monitoring,
 * pathfinding) the registry does not say.
 */
export async function readRegisteredServices(
  chain: ChainReader,
  { serviceRegistry, max = 256 }: { serviceRegistry: Address; max?: number },
): Promise<RegisteredService[]> {
  const count = await read(chain, serviceRegistry, ServiceRegistry.abi, 'everMadeDepositsLen', [])
  const first = count > BigInt(max) ? count - BigInt(max) : 0n
  const indexes = Array.from({ length: Number(count - first) }, (_, i) => first + BigInt(i))
  const addresses = await Promise.all(indexes.map((i) => read(chain, serviceRegistry, ServiceRegistry.abi, 'ever_made_deposits', [i])))
  const services = await Promise.all(
    addresses.map(async (address) => ({ address: getAddress(address), ...(await readServiceRegistration(chain, { serviceRegistry, service: address })) })),
  )
  return services.filter((s) => s.registered).map(({ address, url, validTill }) => ({ address, url, validTill }))
}
