// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// Recovers the signer of a 65-byte `r || s || v` signature over a digest.
library ECVerify {
    /// Reverts without a reason on a malformed signature (length other than 65, v outside {0, 1, 27, 28})
    /// or when ecrecover yields no address. Like Raiden's, it does not reject high-s signatures: every
    /// message it guards carries its own replay protection (nonce, total amounts, channel id).
    function ecverify(bytes32 hash, bytes memory signature) internal pure returns (address signer) {
        if (signature.length != 65) revert();
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            // A `bytes memory` starts with its 32-byte length word.
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        // Some signers produce the recovery id (0/1) instead of the Ethereum form (27/28).
        if (v < 27) v += 27;
        if (v != 27 && v != 28) revert();
        signer = ecrecover(hash, v, r, s);
        if (signer == address(0)) revert();
    }
}
