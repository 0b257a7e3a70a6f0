// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// Type tags for signed messages (docs/protocol.md §1.1). Each is packed as a uint256 into the signed bytes,
/// so a signature made for one kind of message can never be passed off as another kind.
library MessageType {
    enum MessageTypeId {
        None,
        BalanceProof,
        BalanceProofUpdate,
        Withdraw,
        // Kept for numbering only: cooperative settle is authorised with Withdraw signatures.
        CooperativeSettle,
        IOU,
        MSReward
    }
}
