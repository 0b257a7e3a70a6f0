import { amountWithFees } from '../protocol/fees/index.ts'
import type { MediationFee } from './routeFees.ts'

/**
 * The fee model the service estimates routes with: Raiden's (src/protocol/fees/, docs/decisions/0069), the same a
 * Sluice mediator charges with. A mediator's fee for forwarding `amountOut` is what it must be sent for it, less
 * `amountOut`; undefined where the model has no answer (too little capacity, a penalty curve that does not reach).
 */
export const serviceMediationFee: MediationFee = (channels, amountOut) => {
  const amountIn = amountWithFees(amountOut, channels)
  return amountIn === undefined ? undefined : amountIn - amountOut
}
