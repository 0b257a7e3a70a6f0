import { hexToBytes, stringToBytes, toRlp, numberToHex, type Hex } from 'viem'
import { balanceHash } from '../balanceProof.ts'
import { MessageTypeId } from '../messageTypeId.ts'
import { PackedWriter } from '../packedWriter.ts'
import { CmdId } from './cmdid.ts'
import { messageHash } from './messageHash.ts'
import { locksroot } from '../locks.ts'
import type { EnvelopeMessage, FeeSchedule, Message, SyncBalanceProof } from './types.ts'

/** `uint8 cmdid || 3 zero bytes`: the head of the signed data of the non-envelope messages. */
function head(w: PackedWriter, cmdid: number): PackedWriter {
  return w.uint(BigInt(cmdid), 1).uint(0n, 3)
}

/** The 212-byte balance proof an envelope message is signed over (docs/protocol.md §2.4). */
export function packEnvelope(message: EnvelopeMessage): Uint8Array {
  return new PackedWriter(212)
    .fixed(message.token_network_address, 20)
    .uint(message.chain_id, 32)
    .uint(MessageTypeId.BalanceProof, 32)
    .uint(message.channel_identifier, 32)
    .fixed(
      balanceHash({
        transferredAmount: message.transferred_amount,
        lockedAmount: message.locked_amount,
        locksroot: message.locksroot,
      }),
      32,
    )
    .uint(message.nonce, 32)
    .fixed(messageHash(message), 32)
    .done()
}

/** RLP of the imbalance penalty curve as Python's PFS packs it: a list of [x, y] integer pairs, or 0. */
function rlpImbalancePenalty(penalty: FeeSchedule['imbalance_penalty']): Uint8Array {
  const int = (n: bigint): Hex => (n === 0n ? '0x' : numberToHex(n))
  return hexToBytes(penalty === null ? toRlp('0x') : toRlp(penalty.map(([x, y]) => [int(x), int(y)])))
}

const ZERO_SIGNATURE: Hex = `0x${'00'.repeat(65)}`

/** 202 bytes: a presence byte, then nonce, transferred, locked, locksroot, additional_hash and signature (zeros when absent). */
function syncProof(w: PackedWriter, proof: SyncBalanceProof | null): PackedWriter {
  if (!proof) return w.uint(0n, 1).uint(0n, 8).uint(0n, 32).uint(0n, 32).uint(0n, 32).uint(0n, 32).fixed(ZERO_SIGNATURE, 65)
  return w
    .uint(1n, 1)
    .uint(proof.nonce, 8)
    .uint(proof.transferred_amount, 32)
    .uint(proof.locked_amount, 32)
    .fixed(proof.locksroot, 32)
    .fixed(proof.additional_hash, 32)
    .fixed(proof.signature ?? ZERO_SIGNATURE, 65)
}

/** The exact bytes a message's `signature` is over (docs/protocol.md §3.3), before the EIP-191 prefix. */
export function packMessage(message: Message): Uint8Array {
  switch (message.type) {
    case 'Processed':
      return head(new PackedWriter(12), CmdId.Processed).uint(message.message_identifier, 8).done()
    case 'Delivered':
      return head(new PackedWriter(12), CmdId.Delivered).uint(message.delivered_message_identifier, 8).done()
    case 'SecretRequest':
      return head(new PackedWriter(116), CmdId.SecretRequest)
        .uint(message.message_identifier, 8)
        .uint(message.payment_identifier, 8)
        .fixed(message.secrethash, 32)
        .uint(message.amount, 32)
        .uint(message.expiration, 32)
        .done()
    case 'RevealSecret':
      return head(new PackedWriter(44), CmdId.RevealSecret).uint(message.message_identifier, 8).fixed(message.secret, 32).done()
    case 'LockedTransfer':
    case 'RefundTransfer':
    case 'Unlock':
    case 'LockExpired':
      return packEnvelope(message)
    case 'WithdrawRequest':
    case 'WithdrawConfirmation':
      // The on-chain withdraw message (docs/protocol.md §2.6): the same signature is what setTotalWithdraw checks.
      return new PackedWriter(200)
        .fixed(message.token_network_address, 20)
        .uint(message.chain_id, 32)
        .uint(MessageTypeId.Withdraw, 32)
        .uint(message.channel_identifier, 32)
        .fixed(message.participant, 20)
        .uint(message.total_withdraw, 32)
        .uint(message.expiration, 32)
        .done()
    case 'WithdrawExpired':
      return head(new PackedWriter(244), CmdId.WithdrawExpired)
        .uint(message.nonce, 32)
        .uint(message.message_identifier, 8)
        .fixed(message.token_network_address, 20)
        .uint(message.chain_id, 32)
        .uint(MessageTypeId.Withdraw, 32)
        .uint(message.channel_identifier, 32)
        .fixed(message.participant, 20)
        .uint(message.total_withdraw, 32)
        .uint(message.expiration, 32)
        .done()
    case 'PFSCapacityUpdate':
      return new PackedWriter(236)
        .uint(message.canonical_identifier.chain_identifier, 32)
        .fixed(message.canonical_identifier.token_network_address, 20)
        .uint(message.canonical_identifier.channel_identifier, 32)
        .fixed(message.updating_participant, 20)
        .fixed(message.other_participant, 20)
        .uint(message.updating_nonce, 8)
        .uint(message.other_nonce, 8)
        .uint(message.updating_capacity, 32)
        .uint(message.other_capacity, 32)
        .uint(message.reveal_timeout, 32)
        .done()
    case 'PFSFeeUpdate': {
      const rlp = rlpImbalancePenalty(message.fee_schedule.imbalance_penalty)
      const timestamp = stringToBytes(message.timestamp)
      return new PackedWriter(32 + 20 + 32 + 20 + 1 + 32 + 32 + rlp.length + timestamp.length)
        .uint(message.canonical_identifier.chain_identifier, 32)
        .fixed(message.canonical_identifier.token_network_address, 20)
        .uint(message.canonical_identifier.channel_identifier, 32)
        .fixed(message.updating_participant, 20)
        .uint(message.fee_schedule.cap_fees ? 1n : 0n, 1)
        .uint(message.fee_schedule.flat, 32)
        .uint(message.fee_schedule.proportional, 32)
        .raw(rlp)
        .raw(timestamp)
        .done()
    }
    case 'RequestMonitoring':
      // The reward proof (docs/protocol.md §2.8): what MonitoringService.monitor checks.
      return new PackedWriter(221)
        .fixed(message.monitoring_service_contract_address, 20)
        .uint(message.balance_proof.chain_id, 32)
        .uint(MessageTypeId.MSReward, 32)
        .fixed(message.balance_proof.token_network_address, 20)
        .fixed(message.non_closing_participant, 20)
        .fixed(message.non_closing_signature, 65)
        .uint(message.reward_amount, 32)
        .done()
    case 'ChannelSyncRequest':
      return head(new PackedWriter(96), CmdId.ChannelSyncRequest)
        .uint(message.message_identifier, 8)
        .uint(message.chain_id, 32)
        .fixed(message.token_network_address, 20)
        .uint(message.channel_identifier, 32)
        .done()
    case 'ChannelSync': {
      // Each side's locks are covered by their locksroot (keccak256 of their encoding): 96 + 2 * (8 + 202 + 32) bytes.
      const w = head(new PackedWriter(580), CmdId.ChannelSync)
        .uint(message.message_identifier, 8)
        .uint(message.chain_id, 32)
        .fixed(message.token_network_address, 20)
        .uint(message.channel_identifier, 32)
        .uint(message.requester_nonce, 8)
      syncProof(w, message.requester_balance_proof).fixed(locksroot(message.requester_locks), 32).uint(message.sender_nonce, 8)
      return syncProof(w, message.sender_balance_proof).fixed(locksroot(message.sender_locks), 32).done()
    }
  }
}
