// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {StandardToken} from "./StandardToken.sol";

/// A mintable test token, ABI-compatible with raiden-contracts' `CustomToken`.
/// Anyone may mint: it exists for test networks only. Besides Raiden's `mint(uint256)` and
/// `mintFor(uint256,address)` it has `mint(address,uint256)`, the form the REST `_testing` endpoint tries first.
contract CustomToken is StandardToken {
    string public name;
    string public symbol;
    string public version = "H0.1";
    // `_decimals` and `multiplier` are public getters of raiden-contracts' CustomToken too.
    uint8 public _decimals;
    uint256 public multiplier;
    address public owner_address;

    event Minted(address indexed _to, uint256 indexed _num);

    constructor(uint256 initial_supply, uint8 decimal_units, string memory token_name, string memory token_symbol) {
        _decimals = decimal_units;
        multiplier = 10 ** uint256(decimal_units);
        name = token_name;
        symbol = token_symbol;
        owner_address = msg.sender;
        _mint(msg.sender, initial_supply);
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    /// Mints `num` tokens to the caller.
    function mint(uint256 num) public {
        _mint(msg.sender, num);
    }

    /// Mints `num` tokens to `target`.
    function mintFor(uint256 num, address target) public {
        _mint(target, num);
    }

    /// Mints `num` tokens to `target` (OpenZeppelin-style argument order).
    function mint(address target, uint256 num) public {
        _mint(target, num);
    }

    /// Lets the owner take out ether sent to the token by mistake.
    function transferFunds() public {
        require(msg.sender == owner_address, "only owner");
        (bool ok, ) = payable(owner_address).call{value: address(this).balance}("");
        require(ok, "transfer failed");
    }

    // Zero is allowed, as in raiden-contracts: a token with no supply is how tests exercise the
    // contracts' "no total supply" checks.
    function _mint(address to, uint256 num) internal {
        balances[to] += num;
        _total_supply += num;
        emit Minted(to, num);
        emit Transfer(address(0), to, num);
    }
}
