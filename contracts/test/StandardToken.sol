// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Token} from "../lib/Token.sol";

/// ERC20 with the semantics of raiden-contracts' `StandardToken`: `transfer` returns false (it does not
/// revert) on a zero value or a short balance, while `transferFrom` reverts on a zero value or a short
/// balance or allowance. The TokenNetwork wraps both in `require`, so either way a failed move stops it.
abstract contract StandardToken is Token {
    // Public, as in raiden-contracts' StandardToken (`balances(address)` is part of its ABI).
    mapping(address => uint256) public balances;
    mapping(address => mapping(address => uint256)) internal allowed;
    uint256 internal _total_supply;

    function totalSupply() public view override returns (uint256) {
        return _total_supply;
    }

    function decimals() public view virtual override returns (uint8) {
        return 18;
    }

    function balanceOf(address _owner) public view override returns (uint256) {
        return balances[_owner];
    }

    function transfer(address _to, uint256 _value) public override returns (bool) {
        if (_value == 0 || balances[msg.sender] < _value) return false;
        balances[msg.sender] -= _value;
        balances[_to] += _value;
        emit Transfer(msg.sender, _to, _value);
        return true;
    }

    function transferFrom(address _from, address _to, uint256 _value) public override returns (bool) {
        require(_value > 0, "zero value");
        require(balances[_from] >= _value, "balance too low");
        require(allowed[_from][msg.sender] >= _value, "allowance too low");
        balances[_to] += _value;
        balances[_from] -= _value;
        allowed[_from][msg.sender] -= _value;
        emit Transfer(_from, _to, _value);
        return true;
    }

    function approve(address _spender, uint256 _value) public override returns (bool) {
        allowed[msg.sender][_spender] = _value;
        emit Approval(msg.sender, _spender, _value);
        return true;
    }

    function allowance(address _owner, address _spender) public view override returns (uint256) {
        return allowed[_owner][_spender];
    }
}
