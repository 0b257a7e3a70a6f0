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
  /** Sluice's own (docs/decisions/0034): outside the range Raiden uses. */
  ChannelSyncRequest: 64,
  ChannelSync: 65,
} as const
