// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Token} from "../lib/Token.sol";
import {Utils} from "../lib/Utils.sol";
import {ECVerify} from "../lib/ECVerify.sol";
import {MessageType} from "../lib/MessageType.sol";
import {IMonitoredTokenNetwork, ITokenNetworkDirectory} from "../interfaces/MonitoredTokenNetwork.sol";
import {UserDeposit} from "./UserDeposit.sol";
import {ServiceRegistry} from "./ServiceRegistry.sol";

/// Lets registered monitoring services (MS) submit a node's latest balance proof when its partner closed a
/// channel while the node was offline, and pays them the reward the node signed, from its user deposit,
/// once the settle window is over. ABI-compatible with raiden-contracts 0.40 (plus a public `rewards`).
contract MonitoringService is Utils {
    Token public token;
    ServiceRegistry public service_registry;
    UserDeposit public user_deposit;
    ITokenNetworkDirectory public token_network_registry;

    struct Reward {
        uint256 reward_amount;
        /// Nonce of the balance proof behind the reward; only a higher one replaces it.
        uint256 nonce;
        /// The monitored node, who pays.
        address reward_sender_address;
        /// The MS that submitted the newest balance proof, who gets paid.
        address monitoring_service_address;
    }

    /// keccak256(uint256 channel_identifier || token_network_address) => reward.
    /// Internal in 0.40; public here so nodes and services can read what is owed (an added getter only).
    mapping(bytes32 => Reward) public rewards;

    event NewBalanceProofReceived(
        address token_network_address,
        uint256 channel_identifier,
        uint256 reward_amount,
        uint256 indexed nonce,
        address indexed ms_address,
        address indexed raiden_node_address
    );
    event RewardClaimed(address indexed ms_address, uint256 amount, bytes32 indexed reward_identifier);

    constructor(
        address _token_address,
        address _service_registry_address,
        address _udc_address,
        address _token_network_registry_address
    ) {
        require(_token_address != address(0), "Token at address zero");
        require(_service_registry_address != address(0), "ServiceRegistry at address zero");
        require(_udc_address != address(0), "UDC at address zero");
        require(contractExists(_token_address), "token has no code");
        require(contractExists(_service_registry_address), "ServiceRegistry has no code");
        require(contractExists(_udc_address), "UDC has no code");
        require(contractExists(_token_network_registry_address), "TokenNetworkRegistry has no code");

        token = Token(_token_address);
        service_registry = ServiceRegistry(_service_registry_address);
        user_deposit = UserDeposit(_udc_address);
        token_network_registry = ITokenNetworkDirectory(_token_network_registry_address);
        require(token.totalSupply() > 0, "Token with zero total supply");
    }

    /// Called by a registered MS with the closer's balance proof and the non-closer's counter-signature and
    /// reward proof. Records the reward for the caller (a newer nonce takes it over from an earlier MS), then,
    /// if the caller's turn has come, passes the proof to TokenNetwork.updateNonClosingBalanceProof.
    function monitor(
        address closing_participant,
        address non_closing_participant,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash,
        bytes memory closing_signature,
        bytes memory non_closing_signature,
        uint256 reward_amount,
        address token_network_address,
        bytes memory reward_proof_signature
    ) public {
        // Bookkeeping first. Its first call goes to the unverified token network, but any state a re-entry
        // could leave behind is reverted by the registry check that follows it.
        IMonitoredTokenNetwork token_network = IMonitoredTokenNetwork(token_network_address);
        require(
            token_network_registry.token_to_token_networks(token_network.token()) == token_network_address,
            "Unknown TokenNetwork"
        );
        uint256 channel_identifier = token_network.getChannelIdentifier(closing_participant, non_closing_participant);
        recordReward(
            channel_identifier,
            token_network_address,
            non_closing_participant,
            non_closing_signature,
            reward_amount,
            nonce,
            reward_proof_signature
        );

        require(
            block.number >=
                firstBlockAllowedToMonitorChannel(
                    token_network, channel_identifier, closing_participant, non_closing_participant, msg.sender
                ),
            "not allowed to monitor"
        );

        token_network.updateNonClosingBalanceProof(
            channel_identifier,
            closing_participant,
            non_closing_participant,
            balance_hash,
            nonce,
            additional_hash,
            closing_signature,
            non_closing_signature
        );

        emit NewBalanceProofReceived(
            token_network_address, channel_identifier, reward_amount, nonce, msg.sender, non_closing_participant
        );
    }

    function recordReward(
        uint256 channel_identifier,
        address token_network_address,
        address non_closing_participant,
        bytes memory non_closing_signature,
        uint256 reward_amount,
        uint256 nonce,
        bytes memory reward_proof_signature
    ) internal {
        address signer = recoverRewardProofSigner(
            token_network_address, non_closing_participant, non_closing_signature, reward_amount, reward_proof_signature
        );
        // 0.40 also has a "Bad reward proof" check after this one; it can never fail, so it is left out.
        require(signer == non_closing_participant, "Reward proof with wrong non_closing_participant");

        bytes32 reward_identifier = keccak256(abi.encodePacked(channel_identifier, token_network_address));
        require(rewards[reward_identifier].nonce < nonce, "stale nonce");
        rewards[reward_identifier] = Reward({
            reward_amount: reward_amount,
            nonce: nonce,
            reward_sender_address: non_closing_participant,
            monitoring_service_address: msg.sender
        });
    }

    /// The first block in which `monitoring_service_address` may monitor this closed channel. The contract
    /// does not know the close block, so it assumes the channel used the shortest settle timeout the network
    /// allows; the guess is never earlier than the real close block.
    function firstBlockAllowedToMonitorChannel(
        IMonitoredTokenNetwork token_network,
        uint256 channel_identifier,
        address closing_participant,
        address non_closing_participant,
        address monitoring_service_address
    ) public view returns (uint256) {
        require(service_registry.hasValidRegistration(monitoring_service_address), "service not registered");

        (uint256 settle_block_number, IMonitoredTokenNetwork.ChannelState state) =
            token_network.getChannelInfo(channel_identifier, closing_participant, non_closing_participant);
        require(state == IMonitoredTokenNetwork.ChannelState.Closed, "channel not closed");

        uint256 assumed_settle_timeout = token_network.settlement_timeout_min();
        require(settle_block_number >= assumed_settle_timeout, "too low settle block number");
        uint256 assumed_close_block = settle_block_number - assumed_settle_timeout;

        return firstBlockAllowedToMonitor(
            assumed_close_block, assumed_settle_timeout, closing_participant, non_closing_participant, monitoring_service_address
        );
    }

    /// Spreads services over the settle window so they do not all send the same transaction: each gets a
    /// fixed offset, derived from the participants and its own address, within [30%, 80%) of the window.
    /// The 30% and the 50% range are each rounded down on their own.
    function firstBlockAllowedToMonitor(
        uint256 closed_at_block,
        uint256 settle_timeout,
        address participant1,
        address participant2,
        address monitoring_service_address
    ) public pure returns (uint256) {
        // The percentages below multiply by up to 80.
        require(settle_timeout < MAX_SAFE_UINT256 / 100, "maliciously big settle timeout");
        require(closed_at_block < MAX_SAFE_UINT256 / 100, "maliciously big closed_at_block");

        uint256 earliest = closed_at_block + (30 * settle_timeout) / 100;
        uint256 range_length = (50 * settle_timeout) / 100;
        uint256 offset = (uint256(uint160(participant1)) +
            uint256(uint160(participant2)) +
            uint256(uint160(monitoring_service_address))) % range_length;
        return earliest + offset;
    }

    /// Pays the recorded reward from the monitored node's deposit to the MS that earned it, once the settle
    /// window is over (anyone may trigger it). The reward is then deleted, so it is paid once.
    function claimReward(
        uint256 channel_identifier,
        address token_network_address,
        address closing_participant,
        address non_closing_participant
    ) public returns (bool) {
        bytes32 reward_identifier = keccak256(abi.encodePacked(channel_identifier, token_network_address));

        (uint256 settle_block_number, IMonitoredTokenNetwork.ChannelState state) = IMonitoredTokenNetwork(
            token_network_address
        ).getChannelInfo(channel_identifier, closing_participant, non_closing_participant);
        // While open, settle_block_number is only the timeout length, so nothing can be judged from it yet.
        // After settlement it is 0, which passes the next check.
        require(
            state == IMonitoredTokenNetwork.ChannelState.Closed ||
                state == IMonitoredTokenNetwork.ChannelState.Settled ||
                state == IMonitoredTokenNetwork.ChannelState.Removed,
            "too early channel state"
        );
        require(settle_block_number < block.number, "channel not settled yet");

        Reward memory reward = rewards[reward_identifier];
        require(reward.reward_sender_address != address(0), "reward_sender is zero");
        require(
            user_deposit.transfer(reward.reward_sender_address, reward.monitoring_service_address, reward.reward_amount),
            "UDC did not transfer"
        );
        emit RewardClaimed(reward.monitoring_service_address, reward.reward_amount, reward_identifier);
        delete rewards[reward_identifier];
        return true;
    }

    /// Signer of the 221-byte reward proof (docs/protocol.md §2.8). The chain id is block.chainid, as in 0.40.
    function recoverRewardProofSigner(
        address token_network_address,
        address non_closing_participant,
        bytes memory non_closing_signature,
        uint256 reward_amount,
        bytes memory signature
    ) internal view returns (address) {
        bytes32 digest = keccak256(
            abi.encodePacked(
                signature_prefix,
                "221", // 20 + 32 + 32 + 20 + 20 + 65 + 32
                address(this),
                block.chainid,
                uint256(MessageType.MessageTypeId.MSReward),
                token_network_address,
                non_closing_participant,
                non_closing_signature,
                reward_amount
            )
        );
        return ECVerify.ecverify(digest, signature);
    }
}
