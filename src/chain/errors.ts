import { SluiceError } from '../errors.ts'
import type { Address, Hex } from 'viem'

/**
 * Base of every error the chain layer throws: a short message, optional details and the cause (usually a viem
 * error). The REST layer maps each `code` to a status (InsufficientFundsForGasError and
 * InsufficientTokenBalanceError to 402).
 */
export class ChainError extends SluiceError {
  override name: string = 'ChainError'
  override readonly code: string = 'CHAIN'
}

/** The RPC endpoint serves another chain than the node was configured for. */
export class ChainIdMismatchError extends ChainError {
  override name = 'ChainIdMismatchError' as const
  override readonly code = 'CHAIN_ID_MISMATCH' as const
  /** `endpoint`: which one, as logs show it (scheme and host), when the node has several. */
  constructor(
    readonly expected: number,
    readonly actual: number,
    readonly endpoint?: string,
  ) {
    super(`the RPC endpoint ${endpoint ? `${endpoint} ` : ''}serves chain ${actual}, not the configured chain ${expected}`)
  }
}

/** The RPC endpoint failed (unreachable, refused the request, or answered with an error we cannot act on). */
export class ChainRpcError extends ChainError {
  override name = 'ChainRpcError' as const
  override readonly code = 'CHAIN_RPC' as const
  constructor(
    readonly method: string,
    cause: unknown,
  ) {
    super(`${method} failed: ${describeCause(cause)}`, { cause })
  }
}

/**
 * The contract refused the call: found by gas estimation before sending, or by a mined receipt with status
 * `reverted`. `reason` is the require string (or `panic 0x11`, or a custom error name) when the node gave it.
 */
export class TransactionRevertedError extends ChainError {
  override name = 'TransactionRevertedError' as const
  override readonly code = 'TRANSACTION_REVERTED' as const
  constructor(
    readonly description: string,
    readonly reason: string | undefined,
    readonly hash?: Hex,
    cause?: unknown,
  ) {
    super(`${description} reverted${reason ? `: ${reason}` : ''}`, { cause, ...(hash ? { details: `transaction ${hash}` } : {}) })
  }
}

/** The account cannot pay for gas (and value): REST answers 402. */
export class InsufficientFundsForGasError extends ChainError {
  override name = 'InsufficientFundsForGasError' as const
  override readonly code = 'INSUFFICIENT_FUNDS_FOR_GAS' as const
  constructor(
    readonly address: Address,
    readonly balance: bigint | undefined,
    readonly required: bigint | undefined,
    cause?: unknown,
  ) {
    super(`insufficient ETH for gas: ${address} has ${balance ?? 'too little'}${required !== undefined ? `, needs ${required} wei` : ''}`, { cause })
  }
}

/** The account holds fewer tokens than a deposit needs: REST answers 402. */
export class InsufficientTokenBalanceError extends ChainError {
  override name = 'InsufficientTokenBalanceError' as const
  override readonly code = 'INSUFFICIENT_TOKEN_BALANCE' as const
  constructor(
    readonly token: Address,
    readonly address: Address,
    readonly balance: bigint,
    readonly required: bigint,
  ) {
    super(`insufficient token balance: ${address} has ${balance} of ${token}, needs ${required}`)
  }
}

/** None of the known mint functions works on this token. */
export class TokenNotMintableError extends ChainError {
  override name = 'TokenNotMintableError' as const
  override readonly code = 'TOKEN_NOT_MINTABLE' as const
  constructor(
    readonly token: Address,
    cause?: unknown,
  ) {
    super(`token ${token} has no mint(address,uint256), mintFor(uint256,address) or increaseSupply(uint256,address) that we may call`, { cause })
  }
}

/** A mined transaction lacks the event that says what it did (e.g. no ChannelOpened after openChannel). */
export class MissingEventError extends ChainError {
  override name = 'MissingEventError' as const
  override readonly code = 'MISSING_EVENT' as const
  constructor(
    readonly eventName: string,
    readonly hash: Hex,
  ) {
    super(`transaction ${hash} emitted no ${eventName} event`)
  }
}

export type ChainErrorType =
  | ChainIdMismatchError
  | ChainRpcError
  | TransactionRevertedError
  | InsufficientFundsForGasError
  | InsufficientTokenBalanceError
  | TokenNotMintableError
  | MissingEventError

function describeCause(cause: unknown): string {
  if (cause && typeof cause === 'object') {
    const { shortMessage, message } = cause as { shortMessage?: unknown; message?: unknown }
    if (typeof shortMessage === 'string') return shortMessage
    if (typeof message === 'string') return message.split('\n')[0] ?? message
  }
  return String(cause)
}
