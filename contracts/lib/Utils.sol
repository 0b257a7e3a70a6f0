// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// Helpers shared by the channel contracts and the services: code checks, the EIP-191 prefix, and
/// arithmetic that clamps instead of reverting, which settlement needs so that it can never be blocked.
abstract contract Utils {
    uint256 public constant MAX_SAFE_UINT256 = type(uint256).max;

    /// Prefix of every signed Raiden message; the decimal length of the payload follows it.
    string public constant signature_prefix = "\x19Ethereum Signed Message:\n";

    /// True if `contract_address` holds code (false during its own constructor, and for EOAs).
    function contractExists(address contract_address) public view returns (bool) {
        return contract_address.code.length > 0;
    }

    function min(uint256 a, uint256 b) public pure returns (uint256) {
        return a < b ? a : b;
    }

    function max(uint256 a, uint256 b) public pure returns (uint256) {
        return a < b ? b : a;
    }

    /// `a - b` floored at zero; the second value is how much of `b` could actually be taken from `a`.
    function failsafe_subtract(uint256 a, uint256 b) public pure returns (uint256, uint256) {
        if (a > b) return (a - b, b);
        return (0, a);
    }

    /// `a + b`, or MAX_SAFE_UINT256 if the sum does not fit.
    function failsafe_addition(uint256 a, uint256 b) public pure returns (uint256) {
        unchecked {
            uint256 sum = a + b;
            return sum < a ? MAX_SAFE_UINT256 : sum;
        }
    }
}
