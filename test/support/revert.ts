import { BaseError, ContractFunctionRevertedError } from 'viem'
import { expect } from 'vitest'

/**
 * Awaits a call that must revert and checks why: `reason` is the exact require string, `{ panic: 0x11 }` a
 * Solidity panic code, or `'no reason'` for a bare revert (ECVerify and friends).
 */
export async function expectRevert(call: Promise<unknown>, reason: string | { panic: number }): Promise<void> {
  let error: unknown
  try {
    await call
  } catch (e) {
    error = e
  }
  if (error === undefined) throw new Error(`expected a revert (${JSON.stringify(reason)}), but the call succeeded`)
  if (!(error instanceof BaseError)) throw error
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null
  if (!reverted) throw error
  if (typeof reason === 'string') {
    // A revert with no data: viem then reports the node's generic message as the reason.
    if (reason === 'no reason') {
      expect(reverted.data?.errorName).toBeUndefined()
      expect(reverted.raw ?? '0x').toBe('0x')
      expect(reverted.reason).toBe('execution reverted')
    } else expect(reverted.reason).toBe(reason)
  } else {
    expect(reverted.data?.errorName).toBe('Panic')
    expect(Number(reverted.data?.args?.[0])).toBe(reason.panic)
  }
}
