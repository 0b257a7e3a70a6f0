// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// The part of TokenNetwork (docs/protocol.md §1.4) that MonitoringService uses. Declared here so the service
/// compiles on its own; the ABI matches contracts/TokenNetwork.sol.
interface IMonitoredTokenNetwork {
    /// Same order as TokenNetwork's ChannelState: the ABI carries it as a uint8.
    enum ChannelState {
        NonExistent,
        Opened,
        Closed,
        Settled,
        Removed
    }

    function token() external view returns (address);

    function settlement_timeout_min() external view returns (uint256);

    function getChannelIdentifier(address participant, address partner) external view returns (uint256);

    /// While open `settle_block_number` is the settle timeout; once closed, the close block plus the timeout;
    /// after settlement 0.
    function getChannelInfo(uint256 channel_identifier, address participant1, address participant2)
        external
        view
        returns (uint256 settle_block_number, ChannelState state);

    function updateNonClosingBalanceProof(
        uint256 channel_identifier,
        address closing_participant,
        address non_closing_participant,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash,
        bytes calldata closing_signature,
        bytes calldata non_closing_signature
    ) external;
}

/// The lookup of TokenNetworkRegistry (docs/protocol.md §1.3) that tells a genuine TokenNetwork from a lookalike.
interface ITokenNetworkDirectory {
    function token_to_token_networks(address token) external view returns (address);
}
