/** The one-byte command ids that start the signed data of most messages (docs/protocol.md §3.2). */
export const CmdId = {
  Processed: 0,
  SecretRequest: 3,
  Unlock: 4,
  LockedTransfer: 7,
  RefundTransfer: 8,
  RevealSecret: 11,
  Delivered: 12,
  LockExpired: 13,
  WithdrawRequest: 15,
  WithdrawConfirmation: 16,
  WithdrawExpired: 17,
} as const
