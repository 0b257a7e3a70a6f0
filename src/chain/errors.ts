import { SluiceError } from '../errors.ts'
import { formatGwei, type Address, type Hex } from 'viem'

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

/**
 * The chain asks more per gas than the operator's cap (`--max-fee-per-gas`) allows: nothing was sent. REST answers 503:
 * try again when fees fall, or raise the cap.
 */
export class FeesAboveCapError extends ChainError {
  override name = 'FeesAboveCapError' as const
  override readonly code = 'FEES_ABOVE_CAP' as const
  constructor(
    readonly description: string,
    /** The least price per gas that gets it mined now (next base fee and tip, or the gas price), in wei. */
    readonly asked: bigint,
    readonly cap: bigint,
    detail?: string,
  ) {
    super(`${description} was not sent: the chain asks ${formatGwei(asked)} gwei per gas, above the cap of ${formatGwei(cap)} gwei (--max-fee-per-gas)`, {
      ...(detail ? { details: detail } : {}),
    })
  }
}

/** The nonce of a transaction under way was mined by a transaction the queue never signed: another program uses the key. */
export class NonceTakenError extends ChainError {
  override name = 'NonceTakenError' as const
  override readonly code = 'NONCE_TAKEN' as const
  constructor(
    readonly nonce: number,
    readonly description: string,
  ) {
    super(`${description} was not mined: its nonce ${nonce} was used by a transaction this node did not send (is another program using this key?)`)
  }
}

/**
 * The transaction queue stopped before the transaction was mined: `journaled`, its journal keeps it and the next start
 * sends it again; otherwise nothing of it was signed or sent.
 */
export class TransactionQueueStoppedError extends ChainError {
  override name = 'TransactionQueueStoppedError' as const
  override readonly code = 'TRANSACTION_QUEUE_STOPPED' as const
  constructor(readonly journaled: boolean) {
    super(
      journaled
        ? 'the node stopped before the transaction was mined; it is sent again at the next start'
        : 'the node is stopping: the transaction was not sent',
    )
  }
}

/**
 * A transaction was not mined, or its block did not reach the confirmation depth, in time: the chain stopped making
 * blocks (a local chain that mines only when a transaction comes), its fees rose past the offer, or the node cannot
 * follow it. The transaction stands (the queue keeps raising its fee and sending it); its effect shows once it is
 * mined and deep enough. REST answers 503.
 */
export class ConfirmationTimeoutError extends ChainError {
  override name = 'ConfirmationTimeoutError' as const
  override readonly code = 'CONFIRMATION_TIMEOUT' as const
  constructor(
    /** Its block, once mined; undefined when it was not mined in time. */
    readonly blockNumber: bigint | undefined,
    /** How far the node got: the block it synced to, or the chain's head. */
    readonly reachedBlock: bigint,
    timeoutMs: number,
  ) {
    super(
      blockNumber === undefined
        ? `the transaction was not mined within ${timeoutMs / 1000} s (the chain is at block ${reachedBlock}); it stays under way: the node raises its fee ` +
            'within --max-fee-per-gas and sends it again until it is mined, and its effect shows then (GET /notifications says if it is at risk)'
        : `the transaction was mined in block ${blockNumber}, which is not confirmed after ${timeoutMs / 1000} s (the node has reached block ${reachedBlock}); ` +
            'it will count once the chain is deeper. A chain that mines only when a transaction comes needs blocks mined (sluice chain mines one a second) or a node with --confirmations 0',
    )
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
  | FeesAboveCapError
  | ConfirmationTimeoutError
  | NonceTakenError
  | TransactionQueueStoppedError

function describeCause(cause: unknown): string {
  if (cause && typeof cause === 'object') {
    const { shortMessage, message } = cause as { shortMessage?: unknown; message?: unknown }
    if (typeof shortMessage === 'string') return shortMessage
    if (typeof message === 'string') return message.split('\n')[0] ?? message
  }
  return String(cause)
}
