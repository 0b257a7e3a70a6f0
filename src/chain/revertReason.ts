import { BaseError, decodeErrorResult, ExecutionRevertedError, type Hex } from 'viem'

/**
 * The revert reason carried by a viem error: a require string, `panic 0x..`, a custom error's selector, or
 * the node's own text when it gave no revert data.
 */
export function revertReason(e: unknown): string | undefined {
  if (!(e instanceof BaseError)) return undefined
  const withData = e.walk((c) => typeof (c as { data?: unknown }).data === 'string') as { data?: Hex } | null
  const data = withData?.data
  if (data && data !== '0x') {
    try {
      const decoded = decodeErrorResult({ abi: [], data })
      if (decoded.errorName === 'Error') return decoded.args[0] as string
      if (decoded.errorName === 'Panic') return `panic 0x${(decoded.args[0] as bigint).toString(16)}`
    } catch {
      return `custom error ${data.slice(0, 10)}`
    }
  }
  const reverted = e.walk((c) => c instanceof ExecutionRevertedError) as BaseError | null
  const details = reverted?.details
  return details ? details.replace(/^execution reverted:?\s*/i, '') || undefined : undefined
}
