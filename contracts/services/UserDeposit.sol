// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Token} from "../lib/Token.sol";
import {Utils} from "../lib/Utils.sol";

/// The deposit a Raiden node keeps to pay for services: pathfinding IOUs (claimed through OneToN) and
/// monitoring rewards (claimed through MonitoringService). Only those two contracts can move balances.
/// A withdrawal has to be announced `withdraw_delay` blocks ahead, so that services always get the chance
/// to claim what they are owed before the money leaves. ABI-compatible with raiden-contracts 0.40.
contract UserDeposit is Utils {
    /// Blocks between planWithdraw and the first block in which withdraw works.
    /// Decision: a constant, as in raiden-contracts 0.40, whose constructor is (token, whole_balance_limit)
    /// and exposes `withdraw_delay` as a constant getter. The 100-block delay docs/protocol.md §7 confirms
    /// is this constant; a third constructor argument would change the deployment ABI.
    uint256 public constant withdraw_delay = 100;

    Token public token;

    /// The two contracts allowed to call `transfer`, set once by `init`.
    address public msc_address;
    address public one_to_n_address;

    /// Everything ever deposited for an address (withdrawals and payments do not lower it).
    mapping(address => uint256) public total_deposit;
    /// What an address can still spend or withdraw.
    mapping(address => uint256) public balances;
    mapping(address => WithdrawPlan) public withdraw_plans;

    /// Sum of all balances, capped by `whole_balance_limit` to limit the damage of a bug.
    uint256 public whole_balance;
    uint256 public whole_balance_limit;

    struct WithdrawPlan {
        uint256 amount;
        uint256 withdraw_block; // first block in which the withdrawal is allowed
    }

    event BalanceReduced(address indexed owner, uint256 newBalance);
    event WithdrawPlanned(address indexed withdrawer, uint256 plannedBalance);

    constructor(address _token_address, uint256 _whole_balance_limit) {
        require(_token_address != address(0), "token at address zero");
        require(contractExists(_token_address), "token has no code");
        token = Token(_token_address);
        // A token with no supply is most likely not a token at all.
        require(token.totalSupply() > 0, "token has no total supply");
        require(_whole_balance_limit > 0, "whole balance limit is zero");
        whole_balance_limit = _whole_balance_limit;
    }

    /// Wires in the two service contracts. They are deployed after this one (both need its address), so this
    /// cannot happen in the constructor; it works exactly once.
    function init(address _msc_address, address _one_to_n_address) external {
        require(msc_address == address(0) && one_to_n_address == address(0), "already initialized");
        require(_msc_address != address(0), "MS contract at address zero");
        require(contractExists(_msc_address), "MS contract has no code");
        msc_address = _msc_address;
        require(_one_to_n_address != address(0), "OneToN at address zero");
        require(contractExists(_one_to_n_address), "OneToN has no code");
        one_to_n_address = _one_to_n_address;
    }

    /// Raises `beneficiary`'s total deposit to `new_total_deposit`, pulling the difference from the caller.
    /// Totals rather than increments make a resent transaction harmless.
    function deposit(address beneficiary, uint256 new_total_deposit) external {
        uint256 previous_total = total_deposit[beneficiary];
        require(new_total_deposit > previous_total, "deposit not increasing");
        uint256 added = new_total_deposit - previous_total;

        balances[beneficiary] += added;
        total_deposit[beneficiary] = new_total_deposit;
        // Checked arithmetic makes an overflow revert (panic) before the limit check.
        whole_balance += added;
        require(whole_balance <= whole_balance_limit, "too much deposit");

        require(token.transferFrom(msg.sender, address(this), added), "tokens didn't transfer");
    }

    /// Moves `amount` of `sender`'s balance to `receiver`. Only the monitoring and pathfinding contracts may
    /// call it. Returns false, without reverting, when the balance is short or the amount is zero, so that the
    /// caller decides what a failed payment means.
    function transfer(address sender, address receiver, uint256 amount) external returns (bool success) {
        require(msg.sender == msc_address || msg.sender == one_to_n_address, "unknown caller");
        require(sender != receiver, "sender == receiver");
        if (amount == 0 || balances[sender] < amount) return false;

        balances[sender] -= amount;
        balances[receiver] += amount;
        emit BalanceReduced(sender, balances[sender]);
        return true;
    }

    /// Announces a withdrawal of `amount`, possible from `withdraw_delay` blocks on. A new plan replaces the
    /// old one and restarts the delay.
    function planWithdraw(uint256 amount) external {
        require(amount > 0, "withdrawing zero");
        uint256 balance = balances[msg.sender];
        require(balance >= amount, "withdrawing too much");
        withdraw_plans[msg.sender] = WithdrawPlan({amount: amount, withdraw_block: block.number + withdraw_delay});
        emit WithdrawPlanned(msg.sender, balance - amount);
    }

    /// Withdraws up to the planned amount to the caller.
    function withdraw(uint256 amount) external {
        withdrawFromPlan(amount, msg.sender, msg.sender);
    }

    /// Withdraws up to the planned amount to another address.
    function withdrawToBeneficiary(uint256 amount, address beneficiary) external {
        withdrawFromPlan(amount, msg.sender, beneficiary);
    }

    /// The balance that services can count on: what is left once the planned withdrawal is gone.
    function effectiveBalance(address owner) external view returns (uint256 remaining_balance) {
        uint256 planned = withdraw_plans[owner].amount;
        uint256 balance = balances[owner];
        return planned > balance ? 0 : balance - planned;
    }

    function withdrawFromPlan(uint256 amount, address owner, address beneficiary) internal {
        require(beneficiary != address(0), "beneficiary is zero");
        WithdrawPlan storage plan = withdraw_plans[owner];
        require(amount <= plan.amount, "withdrawing more than planned");
        require(plan.withdraw_block <= block.number, "withdrawing too early");

        // Services may have been paid since the plan was made, so the balance can be below the plan.
        uint256 withdrawable = min(amount, balances[owner]);
        balances[owner] -= withdrawable;
        whole_balance -= withdrawable;
        emit BalanceReduced(owner, balances[owner]);
        // One plan, one withdrawal: taking less than planned still uses the plan up.
        delete withdraw_plans[owner];

        require(token.transfer(beneficiary, withdrawable), "tokens didn't transfer");
    }
}
