import { BaseError, encodeFunctionData, type Address, type ContractFunctionArgs, type Hex } from 'viem'
import { SluiceError, withCode } from '../errors.ts'
import type { TransactionRevertedError } from './errors.ts'
import { SecretRegistry, TokenNetwork } from '../contracts/index.ts'
import { ZERO_HASH, packBalanceProofCounter } from '../protocol/balanceProof.ts'
import { encodeLocks } from '../protocol/locks.ts'
import { MessageTypeId } from '../protocol/messageTypeId.ts'
import type { StateChange } from '../protocol/state/changes.ts'
import type { ChainTransaction, Transaction } from '../protocol/state/effects.ts'
import type { BalanceProofState } from '../protocol/state/types.ts'
import { packWithdraw } from '../protocol/withdrawProof.ts'
import type { ChainClient } from './chainClient.ts'
import { readParticipantInfo, type ChainReader } from './reads.ts'
import type { ChainCall, SendOptions, SentTransaction, TransactionQueue } from './transactionQueue.ts'

/** 65 zero bytes: the partner's "signature" when closing without a partner balance proof (nonce 0). */
export const EMPTY_SIGNATURE: Hex = `0x${'00'.repeat(65)}`

/** Who signs the Raiden messages a transaction carries: the node's key (not necessarily the payer). */
export type TransactionSigner = Pick<ChainClient, 'chainId' | 'address' | 'signPacked'>

export type ProtocolTransactionCallParameters = {
  signer: TransactionSigner
  /** Where registerSecret goes. */
  secretRegistry: Address
}

/**
 * The contract call that carries out a protocol `Transaction` effect, with our signatures made here:
 * - close: the partner's latest balance proof (or nonce 0, zero hashes and 65 zero bytes without one) and our
 *   closing signature over the 277-byte counter message of type BalanceProof (docs/protocol.md §2.5);
 * - update: the closer's balance proof and our non-closing counter-signature of type BalanceProofUpdate;
 * - setTotalWithdraw / cooperativeSettle: our signatures over the 200-byte withdraw messages (docs/protocol.md §2.6) beside the
 *   partner's.
 */
export function protocolTransactionCall(tx: ChainTransaction, { signer, secretRegistry }: ProtocolTransactionCallParameters): ChainCall {
  const chainId = BigInt(signer.chainId)
  switch (tx.type) {
    case 'close': {
      const bp = usableProof(tx.balanceProof)
      const proof = bp
        ? { balanceHash: bp.balanceHash, nonce: bp.nonce, additionalHash: bp.messageHash, signature: bp.signature }
        : { balanceHash: ZERO_HASH, nonce: 0n, additionalHash: ZERO_HASH, signature: EMPTY_SIGNATURE }
      const closingSignature = signer.signPacked(
        packBalanceProofCounter(
          MessageTypeId.BalanceProof,
          {
            tokenNetworkAddress: tx.tokenNetwork,
            chainId,
            channelIdentifier: tx.channelId,
            balanceHash: proof.balanceHash,
            nonce: proof.nonce,
            additionalHash: proof.additionalHash,
          },
          proof.signature,
        ),
      )
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.closeChannel(${tx.channelId})`, 'closeChannel', [
        tx.channelId,
        tx.partner,
        signer.address,
        proof.balanceHash,
        proof.nonce,
        proof.additionalHash,
        proof.signature,
        closingSignature,
      ])
    }
    case 'update': {
      const bp = usableProof(tx.balanceProof)
      if (!bp) throw new RangeError(`update of channel ${tx.channelId} needs the closer's signed balance proof with nonce > 0`)
      const nonClosingSignature = signer.signPacked(
        packBalanceProofCounter(
          MessageTypeId.BalanceProofUpdate,
          {
            tokenNetworkAddress: tx.tokenNetwork,
            chainId,
            channelIdentifier: tx.channelId,
            balanceHash: bp.balanceHash,
            nonce: bp.nonce,
            additionalHash: bp.messageHash,
          },
          bp.signature,
        ),
      )
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.updateNonClosingBalanceProof(${tx.channelId})`, 'updateNonClosingBalanceProof', [
        tx.channelId,
        tx.partner,
        signer.address,
        bp.balanceHash,
        bp.nonce,
        bp.messageHash,
        bp.signature,
        nonClosingSignature,
      ])
    }
    case 'settle': {
      const b1 = tx.participant1Balance
      const b2 = tx.participant2Balance
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.settleChannel(${tx.channelId})`, 'settleChannel', [
        tx.channelId,
        tx.participant1,
        b1.transferredAmount,
        b1.lockedAmount,
        b1.locksroot,
        tx.participant2,
        b2.transferredAmount,
        b2.lockedAmount,
        b2.locksroot,
      ])
    }
    case 'unlock':
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.unlock(${tx.channelId})`, 'unlock', [tx.channelId, tx.receiver, tx.sender, encodeLocks(tx.locks)])
    case 'registerSecret':
      return {
        to: secretRegistry,
        data: encodeFunctionData({ abi: SecretRegistry.abi, functionName: 'registerSecret', args: [tx.secret] }),
        description: `SecretRegistry.registerSecret(${tx.secrethash})`,
      }
    case 'setTotalWithdraw': {
      const ourSignature = signer.signPacked(
        packWithdraw({
          tokenNetworkAddress: tx.tokenNetwork,
          chainId,
          channelIdentifier: tx.channelId,
          participant: tx.participant,
          totalWithdraw: tx.totalWithdraw,
          expiration: tx.expiration,
        }),
      )
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.setTotalWithdraw(${tx.channelId})`, 'setTotalWithdraw', [
        tx.channelId,
        tx.participant,
        tx.totalWithdraw,
        tx.expiration,
        ourSignature,
        tx.partnerSignature,
      ])
    }
    case 'cooperativeSettle': {
      const withdraw = (participant: Address, totalWithdraw: bigint, expiration: bigint) =>
        signer.signPacked(
          packWithdraw({ tokenNetworkAddress: tx.tokenNetwork, chainId, channelIdentifier: tx.channelId, participant, totalWithdraw, expiration }),
        )
      // Each WithdrawInput carries its participant's own signature first, then the other side's.
      const ours = {
        participant: signer.address,
        total_withdraw: tx.our.totalWithdraw,
        expiration_block: tx.our.expiration,
        participant_signature: withdraw(signer.address, tx.our.totalWithdraw, tx.our.expiration),
        partner_signature: tx.our.partnerSignature,
      }
      const theirs = {
        participant: tx.partner.address,
        total_withdraw: tx.partner.totalWithdraw,
        expiration_block: tx.partner.expiration,
        participant_signature: tx.partner.partnerSignature,
        partner_signature: withdraw(tx.partner.address, tx.partner.totalWithdraw, tx.partner.expiration),
      }
      return tokenNetworkCall(tx.tokenNetwork, `TokenNetwork.cooperativeSettle(${tx.channelId})`, 'cooperativeSettle', [tx.channelId, ours, theirs])
    }
  }
}

export type SendProtocolTransactionParameters = ProtocolTransactionCallParameters & { queue: TransactionQueue } & Omit<SendOptions, 'deadline'>

/** Builds the call of a protocol `Transaction` effect and sends it through the account's queue, with its deadline. */
export function sendProtocolTransaction(
  tx: ChainTransaction,
  { queue, onSubmitted, key, confirmations, timeoutMs, ...parameters }: SendProtocolTransactionParameters,
): Promise<SentTransaction> {
  const deadline = 'deadline' in tx ? tx.deadline : undefined
  return queue.send(protocolTransactionCall(tx, parameters), {
    ...(onSubmitted ? { onSubmitted } : {}),
    ...(key !== undefined ? { key } : {}),
    ...(confirmations !== undefined ? { confirmations } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(deadline !== undefined ? { deadline } : {}),
  })
}

/**
 * Whether the chain already holds the closer's proof an update carries, or a newer one: a monitoring service submitted
 * it while the node was away (docs/decisions/0035), and sending it again would revert ("nonce reused").
 */
export async function updateOnChainAlready(chain: ChainReader, tx: Extract<ChainTransaction, { type: 'update' }>): Promise<boolean> {
  const bp = usableProof(tx.balanceProof)
  if (!bp) return false
  const closer = await readParticipantInfo(chain, { tokenNetwork: tx.tokenNetwork, channelId: tx.channelId, participant: tx.partner, partner: chain.address })
  return closer.nonce >= bp.nonce
}

/**
 * The state change that tells the protocol core a transaction effect failed (it then reverts the channel's
 * transitional state, e.g. closing -> opened). The reason is the contract's revert string when there is one.
 */
export function transactionFailedChange(tx: Transaction, error: unknown): Extract<StateChange, { type: 'transactionFailed' }> {
  const reason =
    withCode<TransactionRevertedError>(error, 'TRANSACTION_REVERTED')?.reason ||
    (error instanceof SluiceError || error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : String(error))
  return {
    type: 'transactionFailed',
    transaction: tx.type === 'settleWithHistory' ? 'settle' : tx.type === 'unlockWithHistory' ? 'unlock' : tx.type,
    ...('tokenNetwork' in tx ? { tokenNetwork: tx.tokenNetwork, channelId: tx.channelId } : {}),
    ...(tx.type === 'registerSecret' ? { secrethash: tx.secrethash } : {}),
    reason,
  }
}

/** A proof the contract can use: signed and with nonce > 0 (nonce 0 means "no proof" to closeChannel). */
function usableProof(bp: BalanceProofState | null): (BalanceProofState & { signature: Hex }) | undefined {
  return bp?.signature && bp.nonce > 0n ? (bp as BalanceProofState & { signature: Hex }) : undefined
}

type TokenNetworkWrite = 'closeChannel' | 'updateNonClosingBalanceProof' | 'settleChannel' | 'unlock' | 'setTotalWithdraw' | 'cooperativeSettle'

function tokenNetworkCall<F extends TokenNetworkWrite>(
  to: Address,
  description: string,
  functionName: F,
  args: ContractFunctionArgs<typeof TokenNetwork.abi, 'nonpayable', F>,
): ChainCall {
  return { to, description, data: encodeFunctionData({ abi: TokenNetwork.abi, functionName, args } as never) }
}
