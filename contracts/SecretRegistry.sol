// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// Public record of when each hash-time-lock secret first became known on-chain. TokenNetwork.unlock
/// pays a lock only if its secret was recorded here in a block before the lock's expiration.
contract SecretRegistry {
    // sha256(secret) => number of the block in which the secret was first registered (0: never).
    mapping(bytes32 => uint256) private reveal_block_of;

    event SecretRevealed(bytes32 indexed secrethash, bytes32 secret);

    /// Records `secret` (any 32 bytes, the zero secret included) at the current block. Returns false and
    /// changes nothing when it is already recorded, so the first block stays the one that counts.
    function registerSecret(bytes32 secret) public returns (bool) {
        bytes32 secrethash = sha256(abi.encodePacked(secret));
        if (reveal_block_of[secrethash] != 0) return false;
        reveal_block_of[secrethash] = block.number;
        emit SecretRevealed(secrethash, secret);
        return true;
    }

    /// Registers every secret; true only if all of them were new. Known ones do not stop the others.
    function registerSecretBatch(bytes32[] memory secrets) public returns (bool) {
        bool all_new = true;
        for (uint256 i = 0; i < secrets.length; i++) {
            if (!registerSecret(secrets[i])) all_new = false;
        }
        return all_new;
    }

    /// The block in which the secret of `secrethash` (its sha256) was registered, or 0.
    function getSecretRevealBlockHeight(bytes32 secrethash) public view returns (uint256) {
        return reveal_block_of[secrethash];
    }
}
