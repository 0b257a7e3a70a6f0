// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Token} from "../lib/Token.sol";
import {Utils} from "../lib/Utils.sol";
import {Controllable} from "../lib/Controllable.sol";

/// The price of a registration slot and the knobs the controller may turn. Time is in seconds (block
/// timestamps), even in the block-based 0.40 contracts. After each deposit the price jumps by
/// `price_bump_numerator / price_bump_denominator` and then decays roughly like exp(-t / decay_constant),
/// never below `min_price`. Abstract: it only exists as the base of ServiceRegistry.
abstract contract ServiceRegistryConfigurableParameters is Controllable {
    /// The price at `set_price_at`; the current price decays from there.
    uint256 public set_price;
    uint256 public set_price_at;

    // Defaults as in raiden-contracts 0.40. They matter: the constructor refreshes the price once with them
    // before it installs its own parameters (see changeParametersInternal).
    uint256 public decay_constant = 200 days;
    uint256 public min_price = 1000;
    uint256 public price_bump_numerator = 1;
    uint256 public price_bump_denominator = 1;
    /// Seconds of registration one deposit buys.
    uint256 public registration_duration = 180 days;

    /// Once set, no new deposits are taken and every Deposit can be withdrawn at once.
    bool public deprecated = false;

    function setDeprecationSwitch() public onlyController returns (bool _success) {
        deprecated = true;
        return true;
    }

    function changeParameters(
        uint256 _price_bump_numerator,
        uint256 _price_bump_denominator,
        uint256 _decay_constant,
        uint256 _min_price,
        uint256 _registration_duration
    ) public onlyController returns (bool _success) {
        changeParametersInternal(
            _price_bump_numerator, _price_bump_denominator, _decay_constant, _min_price, _registration_duration
        );
        return true;
    }

    function changeParametersInternal(
        uint256 _price_bump_numerator,
        uint256 _price_bump_denominator,
        uint256 _decay_constant,
        uint256 _min_price,
        uint256 _registration_duration
    ) internal {
        // Fix the price reached so far under the old decay before the rules change, so a new decay constant
        // only affects the future.
        set_price = currentPrice();
        set_price_at = block.timestamp;

        require(_price_bump_denominator > 0, "divide by zero");
        require(_price_bump_numerator >= _price_bump_denominator, "price dump instead of bump");
        require(_price_bump_numerator < 2 ** 40, "price dump numerator is too big");
        price_bump_numerator = _price_bump_numerator;
        price_bump_denominator = _price_bump_denominator;

        // Any minimum, zero included; a set_price below it simply reads as min_price.
        min_price = _min_price;

        // The bound keeps decayedPrice's polynomial inside 256 bits.
        require(_decay_constant > 0, "attempt to set zero decay constant");
        require(_decay_constant < 2 ** 40, "too big decay constant");
        decay_constant = _decay_constant;

        // Any duration; zero makes every new deposit fail.
        registration_duration = _registration_duration;
    }

    /// What a deposit costs now. It can change between sending a deposit and its execution, hence the
    /// caller's limit in ServiceRegistry.deposit.
    function currentPrice() public view returns (uint256) {
        require(block.timestamp >= set_price_at, "An underflow in price computation");
        return decayedPrice(set_price, block.timestamp - set_price_at);
    }

    /// `_set_price` after `_seconds_passed` seconds of decay: exp(-X/A) approximated by P / Q with
    /// P = 24·A^4 and Q = 24·A^4 + 24·A^3·X + 12·A^2·X^2 + 4·A·X^3 + X^4 (the inverse of the Taylor series of
    /// exp(X/A) up to X^4), floored at min_price. From X = 2^40 on the terms could overflow, and the price is
    /// long at its minimum anyway.
    function decayedPrice(uint256 _set_price, uint256 _seconds_passed) public view returns (uint256) {
        uint256 x = _seconds_passed;
        if (x >= 2 ** 40) return min_price;

        uint256 a = decay_constant;
        uint256 p = 24 * a ** 4;
        uint256 q = p + 24 * a ** 3 * x + 12 * a ** 2 * x ** 2 + 4 * a * x ** 3 + x ** 4;
        uint256 price = (_set_price * p) / q;
        return price < min_price ? min_price : price;
    }
}

/// Holds one registration fee until `release_at` (or until the registry is deprecated); then only the
/// service that paid it can take it back.
contract Deposit {
    Token public token;
    // Not public in raiden-contracts 0.40 either.
    ServiceRegistryConfigurableParameters service_registry;
    address public withdrawer;
    /// Timestamp from which `withdrawer` may withdraw.
    uint256 public release_at;

    constructor(
        Token _token,
        uint256 _release_at,
        address _withdrawer,
        ServiceRegistryConfigurableParameters _service_registry
    ) {
        token = _token;
        release_at = _release_at;
        withdrawer = _withdrawer;
        service_registry = _service_registry;
    }

    /// Sends every token held here to `_to`.
    /// Decision: no selfdestruct (raiden-contracts 0.40 self-destructs here). Since Cancun (EIP-6780) it no
    /// longer removes the code, it is deprecated in solc, and this contract takes no ether; so a second call
    /// fails with "nothing to withdraw" either way.
    function withdraw(address payable _to) external {
        uint256 balance = token.balanceOf(address(this));
        require(msg.sender == withdrawer, "the caller is not the withdrawer");
        require(block.timestamp >= release_at || service_registry.deprecated(), "deposit not released yet");
        require(balance > 0, "nothing to withdraw");
        require(token.transfer(_to, balance), "token didn't transfer");
    }
}

/// Registry of services (pathfinding and monitoring): a service registers, or extends its registration, by
/// locking the current price in a new Deposit contract. OneToN and MonitoringService only pay registered
/// services. ABI-compatible with raiden-contracts 0.40.
contract ServiceRegistry is Utils, ServiceRegistryConfigurableParameters {
    Token public token;

    /// Timestamp until which (exclusive) a service counts as registered.
    mapping(address => uint256) public service_valid_till;
    /// Where a registered service is reachable over HTTP.
    mapping(address => string) public urls;
    /// Every address that ever deposited, in order of its first deposit; never shrinks.
    address[] public ever_made_deposits;

    event RegisteredService(address indexed service, uint256 valid_till, uint256 deposit_amount, Deposit deposit_contract);

    constructor(
        Token _token_for_registration,
        address _controller,
        uint256 _initial_price,
        uint256 _price_bump_numerator,
        uint256 _price_bump_denominator,
        uint256 _decay_constant,
        uint256 _min_price,
        uint256 _registration_duration
    ) {
        require(address(_token_for_registration) != address(0), "token at address zero");
        require(contractExists(address(_token_for_registration)), "token has no code");
        require(_initial_price >= _min_price, "initial price too low");
        // The misspelling is raiden-contracts 0.40's; clients may match on it.
        require(_initial_price <= 2 ** 90, "intiial price too high");
        token = _token_for_registration;
        require(token.totalSupply() > 0, "total supply zero");
        controller = _controller;

        set_price = _initial_price;
        set_price_at = block.timestamp;
        // Note: this refreshes the price under the default min_price (1000) first, so an initial price below
        // 1000 starts at 1000, exactly as in raiden-contracts 0.40.
        changeParametersInternal(
            _price_bump_numerator, _price_bump_denominator, _decay_constant, _min_price, _registration_duration
        );
    }

    /// Registers the caller, or extends its registration by `registration_duration`, for the current price,
    /// which the caller caps with `_limit_amount` (the price may rise between signing and execution).
    function deposit(uint256 _limit_amount) public returns (bool _success) {
        require(!deprecated, "this contract was deprecated");
        uint256 amount = currentPrice();
        require(_limit_amount >= amount, "not enough limit");

        uint256 previous_valid_till = service_valid_till[msg.sender];
        if (previous_valid_till == 0) ever_made_deposits.push(msg.sender);
        // An expired registration restarts from now; a live one is extended from its end.
        uint256 valid_from = previous_valid_till < block.timestamp ? block.timestamp : previous_valid_till;
        uint256 valid_till;
        unchecked {
            valid_till = valid_from + registration_duration;
        }
        // Also refuses a zero registration_duration, which would not extend anything.
        require(valid_from < valid_till, "overflow during extending the registration");
        service_valid_till[msg.sender] = valid_till;

        // Each deposit makes the next one dearer; 2^90 keeps decayedPrice's product inside 256 bits.
        uint256 bumped = (amount * price_bump_numerator) / price_bump_denominator;
        set_price = bumped > 2 ** 90 ? 2 ** 90 : bumped;
        set_price_at = block.timestamp;

        Deposit holder = new Deposit(token, valid_till, msg.sender, this);
        require(token.transferFrom(msg.sender, address(holder), amount), "Token transfer for deposit failed");

        emit RegisteredService(msg.sender, valid_till, amount, holder);
        return true;
    }

    /// Sets the caller's URL; only a currently registered service may.
    function setURL(string memory new_url) public returns (bool _success) {
        require(hasValidRegistration(msg.sender), "registration expired");
        require(bytes(new_url).length != 0, "new url is empty string");
        urls[msg.sender] = new_url;
        return true;
    }

    function everMadeDepositsLen() public view returns (uint256 _len) {
        return ever_made_deposits.length;
    }

    function hasValidRegistration(address _address) public view returns (bool _has_registration) {
        return block.timestamp < service_valid_till[_address];
    }
}
