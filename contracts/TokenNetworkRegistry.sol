// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Utils} from "./lib/Utils.sol";
import {Controllable} from "./lib/Controllable.sol";
import {TokenNetwork} from "./TokenNetwork.sol";

/// Deploys one TokenNetwork per ERC20 token, all sharing one SecretRegistry and one range of allowed
/// settle timeouts (docs/protocol.md §1.3). The deployer is the controller of the registry and of every
/// TokenNetwork it creates.
contract TokenNetworkRegistry is Utils, Controllable {
    address public secret_registry_address;
    uint256 public settlement_timeout_min;
    uint256 public settlement_timeout_max;
    // How many token networks may be created; MAX_SAFE_UINT256 once the controller lifts the limit.
    uint256 public max_token_networks;
    uint256 public token_network_created;

    mapping(address => address) public token_to_token_networks;

    event TokenNetworkCreated(address indexed token_address, address indexed token_network_address);

    modifier canCreateTokenNetwork() {
        require(token_network_created < max_token_networks, "TNR: registry full");
        _;
    }

    constructor(
        address _secret_registry_address,
        uint256 _settlement_timeout_min,
        uint256 _settlement_timeout_max,
        uint256 _max_token_networks
    ) {
        require(_settlement_timeout_min > 0, "TNR: invalid settle timeout min");
        require(_settlement_timeout_max > 0, "TNR: invalid settle timeout max");
        require(_settlement_timeout_max > _settlement_timeout_min, "TNR: invalid settle timeouts");
        require(_secret_registry_address != address(0), "TNR: invalid SR address");
        require(contractExists(_secret_registry_address), "TNR: invalid SR");
        require(_max_token_networks > 0, "TNR: invalid TN limit");
        secret_registry_address = _secret_registry_address;
        settlement_timeout_min = _settlement_timeout_min;
        settlement_timeout_max = _settlement_timeout_max;
        max_token_networks = _max_token_networks;
        controller = msg.sender;
    }

    /// Creates the TokenNetwork of `_token_address` with the given deposit limits. The token itself is
    /// checked by the TokenNetwork constructor, whose revert reason passes through.
    function createERC20TokenNetwork(
        address _token_address,
        uint256 _channel_participant_deposit_limit,
        uint256 _token_network_deposit_limit
    ) public canCreateTokenNetwork returns (address token_network_address) {
        // Once the registry is unlimited, new networks must be unlimited too.
        if (max_token_networks == MAX_SAFE_UINT256) {
            require(
                _channel_participant_deposit_limit == MAX_SAFE_UINT256 &&
                    _token_network_deposit_limit == MAX_SAFE_UINT256,
                "TNR: limits must be set to MAX_INT"
            );
        }
        require(token_to_token_networks[_token_address] == address(0), "TNR: token already registered");

        token_network_created += 1;
        token_network_address = address(
            new TokenNetwork(
                _token_address,
                secret_registry_address,
                settlement_timeout_min,
                settlement_timeout_max,
                controller,
                _channel_participant_deposit_limit,
                _token_network_deposit_limit
            )
        );
        token_to_token_networks[_token_address] = token_network_address;
        emit TokenNetworkCreated(_token_address, token_network_address);
    }

    function createERC20TokenNetworkWithoutLimits(address _token_address)
        external
        returns (address token_network_address)
    {
        return createERC20TokenNetwork(_token_address, MAX_SAFE_UINT256, MAX_SAFE_UINT256);
    }

    /// Lifts the limit on the number of token networks. Only the controller may do this.
    function removeLimits() external onlyController {
        max_token_networks = MAX_SAFE_UINT256;
    }
}
