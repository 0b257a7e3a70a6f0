import type { Address } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import { readTokenBalance } from '../chain/reads.ts'
import { depositToServiceRegistry, readRegistrationPrice, readServiceRegistration, setServiceUrl, type ServiceRegistration } from '../chain/serviceRegistry.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import { SluiceError, hasCode } from '../errors.ts'

/** The service cannot register in the ServiceRegistry (too few service tokens, or the registry refuses). */
export class RegistrationFailedError extends SluiceError {
  override name = 'RegistrationFailedError' as const
  override readonly code = 'REGISTRATION_FAILED' as const
}

/** A registration with less than this left is extended (a deposit adds the registry's duration to it). */
export const RENEW_WITHIN_SECONDS = 7n * 86_400n

export type EnsureRegisteredReturnType = ServiceRegistration & { action: 'none' | 'registered' | 'extended'; price?: bigint }

/**
 * Makes the service registered in the ServiceRegistry (docs/protocol.md §1.7), without which MonitoringService.monitor
 * refuses it: registers when it is not, extends a registration that ends within a week, and publishes `url` when the
 * registry holds another. RegistrationFailedError says why it cannot (how many service tokens it holds and needs).
 */
export async function ensureRegistered(
  chain: ChainClient,
  queue: TransactionQueue,
  { serviceRegistry, url }: { serviceRegistry: Address; url?: string | undefined },
): Promise<EnsureRegisteredReturnType> {
  let registration = await readServiceRegistration(chain, { serviceRegistry })
  const now = (await chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp
  let action: EnsureRegisteredReturnType['action'] = 'none'
  let price: bigint | undefined
  if (!registration.registered || registration.validTill - now < RENEW_WITHIN_SECONDS) {
    try {
      ;({ price } = await depositToServiceRegistry(chain, queue, { serviceRegistry }))
    } catch (error) {
      if (hasCode(error, 'INSUFFICIENT_TOKEN_BALANCE')) {
        const { token, price: needed } = await readRegistrationPrice(chain, { serviceRegistry })
        const [held, block] = await Promise.all([readTokenBalance(chain, { token }), chain.publicClient.getBlockNumber({ cacheTime: 0 })])
        throw new RegistrationFailedError(
          `the service account ${chain.address} holds ${held} of the service token ${token} (at block ${block}); registering in the ServiceRegistry costs ${needed} now`,
          { cause: error },
        )
      }
      if ((error as { code?: string }).code === 'TRANSACTION_REVERTED')
        throw new RegistrationFailedError(`the ServiceRegistry refuses the deposit: ${(error as SluiceError).shortMessage}`, { cause: error })
      throw error
    }
    action = registration.validTill === 0n || !registration.registered ? 'registered' : 'extended'
    registration = await readServiceRegistration(chain, { serviceRegistry })
  }
  if (url !== undefined && registration.url !== url) {
    await setServiceUrl(chain, queue, { serviceRegistry, url })
    registration = { ...registration, url }
  }
  return { ...registration, action, ...(price === undefined ? {} : { price }) }
}
