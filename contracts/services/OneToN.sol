// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Utils} from "../lib/Utils.sol";
import {ECVerify} from "../lib/ECVerify.sol";
import {MessageType} from "../lib/MessageType.sol";
import {UserDeposit} from "./UserDeposit.sol";
import {ServiceRegistry} from "./ServiceRegistry.sol";

/// Pays pathfinding services from their clients' user deposits. A client (the sender) signs IOUs with a
/// growing amount to one service (the receiver) for one session, identified by its expiration block; the
/// service claims the latest IOU once, before it expires. ABI-compatible with raiden-contracts 0.40.
contract OneToN is Utils {
    UserDeposit public deposit_contract;
    ServiceRegistry public service_registry_contract;

    /// Part of every signed IOU. A constructor argument in 0.40 (not block.chainid), kept that way.
    uint256 public chain_id;

    /// keccak256(receiver || sender || uint256 expiration_block) => the session's expiration block once it
    /// has been paid (0 while it has not).
    mapping(bytes32 => uint256) public settled_sessions;

    event Claimed(address sender, address indexed receiver, uint256 expiration_block, uint256 transferred);

    // No argument checks, like 0.40: a wrong address makes every claim fail rather than pay someone else.
    constructor(address _deposit_contract, uint256 _chain_id, address _service_registry_contract) {
        deposit_contract = UserDeposit(_deposit_contract);
        chain_id = _chain_id;
        service_registry_contract = ServiceRegistry(_service_registry_contract);
    }

    /// Pays the IOU `sender` signed for `receiver`, as far as the sender's deposit allows, and returns what was
    /// paid. A session is closed only by a payment above zero: with an empty deposit nothing is recorded and the
    /// same IOU can be claimed again later.
    function claim(
        address sender,
        address receiver,
        uint256 amount,
        uint256 expiration_block,
        bytes memory signature
    ) public returns (uint256) {
        require(service_registry_contract.hasValidRegistration(receiver), "receiver not registered");
        require(block.number <= expiration_block, "IOU expired");
        require(recoverIouSigner(sender, receiver, amount, expiration_block, signature) == sender, "Signature mismatch");

        bytes32 session = keccak256(abi.encodePacked(receiver, sender, expiration_block));
        require(settled_sessions[session] == 0, "Already settled session");

        uint256 transferable = min(amount, deposit_contract.balances(sender));
        if (transferable == 0) return 0;

        // expiration_block >= block.number > 0 here, so a paid session never reads as unpaid.
        settled_sessions[session] = expiration_block;
        emit Claimed(sender, receiver, expiration_block, transferable);
        require(deposit_contract.transfer(sender, receiver, transferable), "deposit did not transfer");
        return transferable;
    }

    /// Claims several IOUs in one transaction and returns the sum paid. `signatures` is the 65-byte
    /// signatures concatenated in order. Any failing claim reverts the whole batch.
    function bulkClaim(
        address[] calldata senders,
        address[] calldata receivers,
        uint256[] calldata amounts,
        uint256[] calldata expiration_blocks,
        bytes calldata signatures
    ) external returns (uint256) {
        uint256 count = senders.length;
        require(
            count == receivers.length && count == amounts.length && count == expiration_blocks.length,
            "Same number of elements required for all input parameters"
        );
        require(signatures.length == count * 65, "`signatures` should contain 65 bytes per IOU");

        uint256 total;
        for (uint256 i = 0; i < count; i++) {
            bytes memory signature = signatures[i * 65:(i + 1) * 65];
            total += claim(senders[i], receivers[i], amounts[i], expiration_blocks[i], signature);
        }
        return total;
    }

    /// Signer of the 188-byte IOU (docs/protocol.md §2.7), signed EIP-191 style.
    function recoverIouSigner(
        address sender,
        address receiver,
        uint256 amount,
        uint256 expiration_block,
        bytes memory signature
    ) internal view returns (address) {
        bytes32 digest = keccak256(
            abi.encodePacked(
                signature_prefix,
                "188", // 20 + 32 + 32 + 20 + 20 + 32 + 32
                address(this),
                chain_id,
                uint256(MessageType.MessageTypeId.IOU),
                sender,
                receiver,
                amount,
                expiration_block
            )
        );
        return ECVerify.ecverify(digest, signature);
    }
}
