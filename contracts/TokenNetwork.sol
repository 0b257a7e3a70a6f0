// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

import {Token} from "./lib/Token.sol";
import {Utils} from "./lib/Utils.sol";
import {Controllable} from "./lib/Controllable.sol";
import {ECVerify} from "./lib/ECVerify.sol";
import {MessageType} from "./lib/MessageType.sol";
import {SecretRegistry} from "./SecretRegistry.sol";

/// All payment channels of one ERC20 token, ABI- and signature-compatible with raiden-contracts 0.40
/// (docs/protocol.md §1.4). Timing is in block numbers.
///
/// Life of a channel: open -> deposits / withdraws (both signatures) -> either cooperativeSettle, or
/// close (with the partner's latest balance proof) -> the partner may update with the closer's latest
/// proof -> settle once the settle window is over -> unlock pending locks in each direction.
contract TokenNetwork is Utils, Controllable {
    enum ChannelState {
        NonExistent, // 0
        Opened, // 1
        Closed, // 2
        Settled, // 3: only reported by getChannelInfo, storage is deleted at settlement; unlocks pending
        Removed // 4: only reported by getChannelInfo; settled and nothing left to unlock
    }

    struct Participant {
        // Total ever deposited for this participant; only grows.
        uint256 deposit;
        // Total ever withdrawn by this participant while the channel was open; only grows.
        uint256 withdrawn_amount;
        bool is_the_closer;
        // keccak(transferred || locked || locksroot) of the newest balance proof this participant signed
        // that was submitted on-chain, and its nonce.
        bytes32 balance_hash;
        uint256 nonce;
    }

    struct Channel {
        // Opened: the settle timeout. Closed: the last block of the settle window (close block + timeout).
        uint256 settle_block_number;
        ChannelState state;
        mapping(address => Participant) participants;
    }

    struct UnlockData {
        bytes32 locksroot;
        uint256 locked_amount;
    }

    struct WithdrawInput {
        address participant;
        uint256 total_withdraw;
        uint256 expiration_block;
        bytes participant_signature;
        bytes partner_signature;
    }

    struct SettleInput {
        address participant;
        uint256 transferred_amount;
        uint256 locked_amount;
        bytes32 locksroot;
    }

    Token public token;
    SecretRegistry public secret_registry;
    uint256 public settlement_timeout_min;
    uint256 public settlement_timeout_max;
    uint256 public channel_participant_deposit_limit;
    uint256 public token_network_deposit_limit;
    // Channel ids are this counter's values: they start at 1 and are never reused, so signatures made
    // for one channel can never be replayed on a later channel between the same two participants.
    uint256 public channel_counter;
    bool public safety_deprecation_switch;

    mapping(uint256 => Channel) public channels;
    // keccak(lower address || higher address) => id of the pair's current channel (0: none).
    mapping(bytes32 => uint256) public participants_hash_to_channel_identifier;
    // getUnlockIdentifier(id, sender, receiver) => locks still held after settlement for sender's locks.
    mapping(bytes32 => UnlockData) private unlock_identifier_to_unlock_data;

    event ChannelOpened(
        uint256 indexed channel_identifier,
        address indexed participant1,
        address indexed participant2,
        uint256 settle_timeout
    );
    event ChannelNewDeposit(uint256 indexed channel_identifier, address indexed participant, uint256 total_deposit);
    event DeprecationSwitch(bool new_value);
    event ChannelWithdraw(uint256 indexed channel_identifier, address indexed participant, uint256 total_withdraw);
    event ChannelClosed(
        uint256 indexed channel_identifier,
        address indexed closing_participant,
        uint256 indexed nonce,
        bytes32 balance_hash
    );
    event ChannelUnlocked(
        uint256 indexed channel_identifier,
        address indexed receiver,
        address indexed sender,
        bytes32 locksroot,
        uint256 unlocked_amount,
        uint256 returned_tokens
    );
    event NonClosingBalanceProofUpdated(
        uint256 indexed channel_identifier,
        address indexed closing_participant,
        uint256 indexed nonce,
        bytes32 balance_hash
    );
    event ChannelSettled(
        uint256 indexed channel_identifier,
        address participant1,
        uint256 participant1_amount,
        bytes32 participant1_locksroot,
        address participant2,
        uint256 participant2_amount,
        bytes32 participant2_locksroot
    );

    // Deprecation only stops new money from coming in; every way out keeps working.
    modifier isSafe() {
        require(!safety_deprecation_switch, "TN: network is deprecated");
        _;
    }

    modifier isOpen(uint256 channel_identifier) {
        require(channels[channel_identifier].state == ChannelState.Opened, "TN: channel not open");
        _;
    }

    modifier settleTimeoutValid(uint256 timeout) {
        require(timeout >= settlement_timeout_min, "TN: settle timeout < min");
        require(timeout <= settlement_timeout_max, "TN: settle timeout > max");
        _;
    }

    /// Checks run in the order of the deployed 0.40 contracts (docs/protocol.md §7), so a bad deployment
    /// fails with the same reason.
    constructor(
        address _token_address,
        address _secret_registry,
        uint256 _settlement_timeout_min,
        uint256 _settlement_timeout_max,
        address _controller,
        uint256 _channel_participant_deposit_limit,
        uint256 _token_network_deposit_limit
    ) {
        require(_token_address != address(0), "TN: invalid token address");
        require(_secret_registry != address(0), "TN: invalid SR address");
        require(_controller != address(0), "TN: invalid controller address");
        require(_settlement_timeout_min > 0, "TN: invalid settle timeout min");
        require(_settlement_timeout_max > _settlement_timeout_min, "TN: invalid settle timeouts");
        require(contractExists(_token_address), "TN: invalid token contract");
        require(contractExists(_secret_registry), "TN: invalid SR contract");
        require(_channel_participant_deposit_limit > 0, "TN: invalid participant limit");
        require(_token_network_deposit_limit > 0, "TN: invalid network deposit limit");
        require(_token_network_deposit_limit >= _channel_participant_deposit_limit, "TN: invalid deposit limits");

        token = Token(_token_address);
        secret_registry = SecretRegistry(_secret_registry);
        settlement_timeout_min = _settlement_timeout_min;
        settlement_timeout_max = _settlement_timeout_max;
        // A cheap sanity check that the address is an ERC20 someone actually holds.
        require(token.totalSupply() > 0, "TN: no supply for token");
        controller = _controller;
        channel_participant_deposit_limit = _channel_participant_deposit_limit;
        token_network_deposit_limit = _token_network_deposit_limit;
    }

    // ------------------------------------------------------------------ controller

    /// Stops new channels and deposits for good.
    function deprecate() public isSafe onlyController {
        safety_deprecation_switch = true;
        emit DeprecationSwitch(true);
    }

    /// Lifts both deposit limits for good.
    function removeLimits() external onlyController {
        channel_participant_deposit_limit = MAX_SAFE_UINT256;
        token_network_deposit_limit = MAX_SAFE_UINT256;
    }

    // ------------------------------------------------------------------ open and deposit

    /// Opens a channel between two addresses; anyone may send it. Returns the new channel's id.
    function openChannel(address participant1, address participant2, uint256 settle_timeout)
        public
        isSafe
        settleTimeoutValid(settle_timeout)
        returns (uint256)
    {
        require(token.balanceOf(address(this)) < token_network_deposit_limit, "TN/open: network deposit limit reached");

        channel_counter += 1;
        uint256 channel_identifier = channel_counter;

        bytes32 pair_hash = getParticipantsHash(participant1, participant2);
        require(
            participants_hash_to_channel_identifier[pair_hash] == 0,
            "TN/open: channel exists for participants"
        );
        participants_hash_to_channel_identifier[pair_hash] = channel_identifier;

        Channel storage channel = channels[channel_identifier];
        channel.settle_block_number = settle_timeout;
        channel.state = ChannelState.Opened;

        emit ChannelOpened(channel_identifier, participant1, participant2, settle_timeout);
        return channel_identifier;
    }

    /// Opens a channel and deposits for participant1 with tokens of the caller, in one transaction.
    function openChannelWithDeposit(
        address participant1,
        address participant2,
        uint256 settle_timeout,
        uint256 participant1_total_deposit
    ) public isSafe settleTimeoutValid(settle_timeout) returns (uint256) {
        uint256 channel_identifier = openChannel(participant1, participant2, settle_timeout);
        depositFor(channel_identifier, participant1, participant1_total_deposit, participant2, msg.sender);
        return channel_identifier;
    }

    /// Raises `participant`'s deposit to `total_deposit`, pulling the difference from the caller
    /// (anyone may deposit for anyone). Total, not delta, so a resent transaction cannot pay twice.
    function setTotalDeposit(uint256 channel_identifier, address participant, uint256 total_deposit, address partner)
        public
        isSafe
        isOpen(channel_identifier)
    {
        depositFor(channel_identifier, participant, total_deposit, partner, msg.sender);
    }

    function depositFor(
        uint256 channel_identifier,
        address participant,
        uint256 total_deposit,
        address partner,
        address payer
    ) internal {
        require(channel_identifier == getChannelIdentifier(participant, partner), "TN/deposit: channel id mismatch");
        require(total_deposit > 0, "TN/deposit: total_deposit is zero");
        require(total_deposit <= channel_participant_deposit_limit, "TN/deposit: deposit limit reached");

        Channel storage channel = channels[channel_identifier];
        Participant storage participant_state = channel.participants[participant];
        uint256 added;
        // Wrapping arithmetic on purpose, as in 0.40, so each bad input fails with its own reason: a
        // lower total wraps `added` above `total_deposit`, and a wrapped network-limit sum is caught by
        // the overflow check below or by transferFrom, which must really move `added` tokens.
        unchecked {
            added = total_deposit - participant_state.deposit;
            require(added > 0, "TN/deposit: no deposit added");
            require(added <= total_deposit, "TN/deposit: deposit underflow");
            require(
                token.balanceOf(address(this)) + added <= token_network_deposit_limit,
                "TN/deposit: network limit reached"
            );
            participant_state.deposit = total_deposit;
            require(
                total_deposit + channel.participants[partner].deposit >= total_deposit,
                "TN/deposit: deposit overflow"
            );
        }

        emit ChannelNewDeposit(channel_identifier, participant, total_deposit);
        require(token.transferFrom(payer, address(this), added), "TN/deposit: transfer failed");
    }

    // ------------------------------------------------------------------ withdraw and cooperative settle

    /// Pays out `total_withdraw` minus what `participant` withdrew before, while the channel stays open.
    /// Both participants must have signed the withdraw message (docs/protocol.md §2.6); anyone may submit it.
    function setTotalWithdraw(
        uint256 channel_identifier,
        address participant,
        uint256 total_withdraw,
        uint256 expiration_block,
        bytes calldata participant_signature,
        bytes calldata partner_signature
    ) external isOpen(channel_identifier) {
        withdraw(
            channel_identifier,
            WithdrawInput(participant, total_withdraw, expiration_block, participant_signature, partner_signature)
        );
    }

    /// The same as setTotalWithdraw with its arguments in one tuple.
    function setTotalWithdraw2(uint256 channel_identifier, WithdrawInput memory withdraw_data)
        external
        isOpen(channel_identifier)
    {
        withdraw(channel_identifier, withdraw_data);
    }

    /// Ends an open channel at once, paying each side its signed total_withdraw. The two totals must add
    /// up to everything ever deposited, which leaves no room for pending locks. Anyone may submit it.
    function cooperativeSettle(uint256 channel_identifier, WithdrawInput memory data1, WithdrawInput memory data2)
        external
        isOpen(channel_identifier)
    {
        require(
            channel_identifier == getChannelIdentifier(data1.participant, data2.participant),
            "TN/coopSettle: channel id mismatch"
        );
        Channel storage channel = channels[channel_identifier];
        uint256 total_deposit = channel.participants[data1.participant].deposit +
            channel.participants[data2.participant].deposit;
        // Checked addition: absurd totals panic (0x11) before the comparison, as in 0.40.
        require(data1.total_withdraw + data2.total_withdraw == total_deposit, "TN/coopSettle: incomplete amounts");

        // A side that gets nothing needs no withdraw (and could not make one: zero totals are refused).
        if (data1.total_withdraw > 0) withdraw(channel_identifier, data1);
        if (data2.total_withdraw > 0) withdraw(channel_identifier, data2);

        removeChannelData(channel, channel_identifier, data1.participant, data2.participant);
        emit ChannelSettled(
            channel_identifier,
            data1.participant,
            data1.total_withdraw,
            bytes32(0),
            data2.participant,
            data2.total_withdraw,
            bytes32(0)
        );
    }

    function withdraw(uint256 channel_identifier, WithdrawInput memory data) internal {
        require(data.total_withdraw > 0, "TN/withdraw: total withdraw is zero");
        require(block.number < data.expiration_block, "TN/withdraw: expired");

        bytes32 digest = withdrawDigest(channel_identifier, data.participant, data.total_withdraw, data.expiration_block);
        require(
            ECVerify.ecverify(digest, data.participant_signature) == data.participant,
            "TN/withdraw: invalid participant sig"
        );
        // The partner is whoever signed second; it must be the participant's partner in this very channel.
        address partner = ECVerify.ecverify(digest, data.partner_signature);
        require(channel_identifier == getChannelIdentifier(data.participant, partner), "TN/withdraw: channel id mismatch");

        Channel storage channel = channels[channel_identifier];
        Participant storage participant_state = channel.participants[data.participant];
        Participant storage partner_state = channel.participants[partner];

        // The contract checks only that the two withdrawn totals stay within the deposits; that the
        // participant's off-chain balance covers it is what the partner's signature vouches for.
        uint256 total_deposit = participant_state.deposit + partner_state.deposit;
        require(data.total_withdraw + partner_state.withdrawn_amount <= total_deposit, "TN/withdraw: withdraw > deposit");
        // Checked: a total below the already withdrawn amount panics (0x11), like 0.40 (docs/protocol.md §7).
        // A strictly growing total makes each signed withdraw usable once.
        uint256 amount = data.total_withdraw - participant_state.withdrawn_amount;
        require(amount > 0, "TN/withdraw: amount is zero");

        emit ChannelWithdraw(channel_identifier, data.participant, data.total_withdraw);
        participant_state.withdrawn_amount = data.total_withdraw;
        require(token.transfer(data.participant, amount), "TN/withdraw: transfer failed");
    }

    // ------------------------------------------------------------------ close and update

    /// Closes the channel for `closing_participant`, submitting the newest balance proof its partner
    /// sent it. The closer authenticates by counter-signing that proof (type BalanceProof, 277 bytes),
    /// so a third party can submit the close. Nonce 0 means "no proof": only the closer's signature is
    /// checked and nothing is stored for the partner.
    function closeChannel(
        uint256 channel_identifier,
        address non_closing_participant,
        address closing_participant,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash,
        bytes calldata non_closing_signature,
        bytes calldata closing_signature
    ) external isOpen(channel_identifier) {
        require(
            channel_identifier == getChannelIdentifier(closing_participant, non_closing_participant),
            "TN/close: channel id mismatch"
        );

        Channel storage channel = channels[channel_identifier];
        channel.state = ChannelState.Closed;
        channel.participants[closing_participant].is_the_closer = true;
        // From now on this is the last block of the settle window.
        channel.settle_block_number += block.number;

        bytes32 counter_digest = balanceProofCounterDigest(
            MessageType.MessageTypeId.BalanceProof,
            channel_identifier,
            balance_hash,
            nonce,
            additional_hash,
            non_closing_signature
        );
        require(
            ECVerify.ecverify(counter_digest, closing_signature) == closing_participant,
            "TN/close: invalid closing sig"
        );

        if (nonce > 0) {
            bytes32 digest = balanceProofDigest(channel_identifier, balance_hash, nonce, additional_hash);
            require(
                ECVerify.ecverify(digest, non_closing_signature) == non_closing_participant,
                "TN/close: invalid non-closing sig"
            );
            storeBalanceProof(channel.participants[non_closing_participant], nonce, balance_hash);
        }

        emit ChannelClosed(channel_identifier, closing_participant, nonce, balance_hash);
    }

    /// After a close, stores the closer's newest balance proof on the closer's record. The non-closer
    /// authorises it by counter-signing (type BalanceProofUpdate), so a monitoring service may submit it.
    /// Allowed as long as the channel is closed, also after the settle window, until someone settles.
    function updateNonClosingBalanceProof(
        uint256 channel_identifier,
        address closing_participant,
        address non_closing_participant,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash,
        bytes calldata closing_signature,
        bytes calldata non_closing_signature
    ) external {
        require(
            channel_identifier == getChannelIdentifier(closing_participant, non_closing_participant),
            "TN/update: channel id mismatch"
        );
        require(balance_hash != bytes32(0), "TN/update: balance hash is zero");
        require(nonce > 0, "TN/update: nonce is zero");
        Channel storage channel = channels[channel_identifier];
        require(channel.state == ChannelState.Closed, "TN/update: channel not closed");

        bytes32 counter_digest = balanceProofCounterDigest(
            MessageType.MessageTypeId.BalanceProofUpdate,
            channel_identifier,
            balance_hash,
            nonce,
            additional_hash,
            closing_signature
        );
        require(
            ECVerify.ecverify(counter_digest, non_closing_signature) == non_closing_participant,
            "TN/update: invalid non-closing sig"
        );
        bytes32 digest = balanceProofDigest(channel_identifier, balance_hash, nonce, additional_hash);
        require(
            ECVerify.ecverify(digest, closing_signature) == closing_participant,
            "TN/update: invalid closing sig"
        );

        Participant storage closing_state = channel.participants[closing_participant];
        // Keeps the closer from using update to overwrite the proof its partner was given at close.
        require(closing_state.is_the_closer, "TN/update: incorrect signature order");

        storeBalanceProof(closing_state, nonce, balance_hash);
        emit NonClosingBalanceProofUpdated(channel_identifier, closing_participant, nonce, balance_hash);
    }

    function storeBalanceProof(Participant storage participant_state, uint256 nonce, bytes32 balance_hash) internal {
        // A newer proof only: also keeps a monitoring service from being rewarded twice for one proof.
        require(nonce > participant_state.nonce, "TN: nonce reused");
        participant_state.nonce = nonce;
        participant_state.balance_hash = balance_hash;
    }

    // ------------------------------------------------------------------ settle and unlock

    /// Pays out a closed channel once its settle window is over. The caller supplies the preimages of
    /// both stored balance hashes; the side with the smaller transferred + locked sum must come first.
    function settleChannel(
        uint256 channel_identifier,
        address participant1,
        uint256 participant1_transferred_amount,
        uint256 participant1_locked_amount,
        bytes32 participant1_locksroot,
        address participant2,
        uint256 participant2_transferred_amount,
        uint256 participant2_locked_amount,
        bytes32 participant2_locksroot
    ) external {
        settle(
            channel_identifier,
            SettleInput(participant1, participant1_transferred_amount, participant1_locked_amount, participant1_locksroot),
            SettleInput(participant2, participant2_transferred_amount, participant2_locked_amount, participant2_locksroot)
        );
    }

    /// The same as settleChannel with each side's data in one tuple.
    function settleChannel2(
        uint256 channel_identifier,
        SettleInput memory participant1_settlement,
        SettleInput memory participant2_settlement
    ) external {
        settle(channel_identifier, participant1_settlement, participant2_settlement);
    }

    function settle(uint256 channel_identifier, SettleInput memory p1, SettleInput memory p2) internal {
        require(
            channel_identifier == getChannelIdentifier(p1.participant, p2.participant),
            "TN/settle: channel id mismatch"
        );
        Channel storage channel = channels[channel_identifier];
        require(channel.state == ChannelState.Closed, "TN/settle: channel not closed");
        require(channel.settle_block_number < block.number, "TN/settle: settlement timeout");

        Participant storage p1_state = channel.participants[p1.participant];
        Participant storage p2_state = channel.participants[p2.participant];
        require(matchesBalanceHash(p1_state.balance_hash, p1), "TN/settle: invalid data for participant 1");
        require(matchesBalanceHash(p2_state.balance_hash, p2), "TN/settle: invalid data for participant 2");

        // Total available deposit. Withdraws were bounded by the deposits, so this cannot underflow.
        uint256 tad = p1_state.deposit + p2_state.deposit - p1_state.withdrawn_amount - p2_state.withdrawn_amount;

        // p1 may receive at most what the proofs allow, clamped to the channel's own tokens; p2 the rest.
        uint256 p1_receivable = min(
            getMaxPossibleReceivableAmount(
                p1_state.deposit,
                p1_state.withdrawn_amount,
                p1.transferred_amount,
                p1.locked_amount,
                p2.transferred_amount,
                p2.locked_amount
            ),
            tad
        );
        uint256 p2_receivable = tad - p1_receivable;
        // From each side's receivable, keep back the partner's locks (as far as it covers them): those
        // tokens are decided by unlock. p1's payout is S1, the part of L2 kept back is SL2; same for p2.
        (uint256 p1_amount, uint256 p2_locked_kept) = failsafe_subtract(p1_receivable, p2.locked_amount);
        (uint256 p2_amount, uint256 p1_locked_kept) = failsafe_subtract(p2_receivable, p1.locked_amount);
        // S1 + S2 + SL1 + SL2 == TAD holds by construction: each failsafe_subtract splits its input.

        removeChannelData(channel, channel_identifier, p1.participant, p2.participant);
        storeUnlockData(channel_identifier, p1.participant, p2.participant, p1.locksroot, p1_locked_kept);
        storeUnlockData(channel_identifier, p2.participant, p1.participant, p2.locksroot, p2_locked_kept);

        emit ChannelSettled(
            channel_identifier,
            p1.participant,
            p1_amount,
            p1.locksroot,
            p2.participant,
            p2_amount,
            p2.locksroot
        );
        if (p1_amount > 0) {
            require(token.transfer(p1.participant, p1_amount), "TN/settle: transfer for participant 1 failed");
        }
        if (p2_amount > 0) {
            require(token.transfer(p2.participant, p2_amount), "TN/settle: transfer for participant 2 failed");
        }
    }

    function matchesBalanceHash(bytes32 stored, SettleInput memory data) internal pure returns (bool) {
        // Nothing stored means no proof was submitted: only zero amounts fit (any locksroot).
        if (stored == bytes32(0) && data.transferred_amount == 0 && data.locked_amount == 0) return true;
        return stored == keccak256(abi.encodePacked(data.transferred_amount, data.locked_amount, data.locksroot));
    }

    function storeUnlockData(
        uint256 channel_identifier,
        address sender,
        address receiver,
        bytes32 locksroot,
        uint256 locked_amount
    ) internal {
        if (locked_amount == 0) return;
        unlock_identifier_to_unlock_data[getUnlockIdentifier(channel_identifier, sender, receiver)] = UnlockData(
            locksroot,
            locked_amount
        );
    }

    function removeChannelData(Channel storage channel, uint256 channel_identifier, address p1, address p2) internal {
        delete channel.participants[p1];
        delete channel.participants[p2];
        delete channels[channel_identifier];
        delete participants_hash_to_channel_identifier[getParticipantsHash(p1, p2)];
    }

    /// After settlement, releases the tokens kept back for `sender`'s pending locks to `receiver`:
    /// `locks` must be exactly the bytes whose keccak is the settled locksroot (96 bytes per lock:
    /// expiration || amount || secrethash, in order). Locks whose secret was registered in time go to
    /// the receiver (capped at what was kept back), the rest returns to the sender. Anyone may call it.
    function unlock(uint256 channel_identifier, address receiver, address sender, bytes calldata locks) external {
        require(channel_identifier != getChannelIdentifier(receiver, sender), "TN/unlock: channel id still exists");
        require(channels[channel_identifier].state == ChannelState.NonExistent, "TN/unlock: channel not settled");
        require(locks.length % 96 == 0, "TN: invalid locks size");

        bytes32 computed_locksroot = keccak256(locks);
        bytes32 unlock_key = getUnlockIdentifier(channel_identifier, sender, receiver);
        UnlockData storage unlock_data = unlock_identifier_to_unlock_data[unlock_key];
        uint256 locked_amount = unlock_data.locked_amount;
        // Also what a second unlock hits: the record is deleted below.
        require(unlock_data.locksroot == computed_locksroot, "TN/unlock: locksroot mismatch");
        // Unreachable while records are only stored with a non-zero amount; kept as a guard.
        require(locked_amount > 0, "TN/unlock: zero locked amount");

        uint256 unlocked_amount = min(claimableAmount(locks), locked_amount);
        uint256 returned_tokens = locked_amount - unlocked_amount;
        delete unlock_identifier_to_unlock_data[unlock_key];

        emit ChannelUnlocked(channel_identifier, receiver, sender, computed_locksroot, unlocked_amount, returned_tokens);
        if (unlocked_amount > 0) {
            require(token.transfer(receiver, unlocked_amount), "TN/unlock: unlocked transfer failed");
        }
        if (returned_tokens > 0) {
            require(token.transfer(sender, returned_tokens), "TN/unlock: returned transfer failed");
        }
    }

    /// Sum of the amounts of the locks whose secret was registered in a block strictly before the lock's
    /// expiration. docs/protocol.md §6: the Python node also accepts a reveal in the expiration block itself;
    /// we follow the 0.40 contract: claimable iff 0 < reveal_block < expiration.
    function claimableAmount(bytes calldata locks) internal view returns (uint256 total) {
        for (uint256 offset = 0; offset < locks.length; offset += 96) {
            uint256 expiration;
            uint256 amount;
            bytes32 secrethash;
            assembly {
                let at := add(locks.offset, offset)
                expiration := calldataload(at)
                amount := calldataload(add(at, 32))
                secrethash := calldataload(add(at, 64))
            }
            uint256 reveal_block = secret_registry.getSecretRevealBlockHeight(secrethash);
            if (reveal_block > 0 && reveal_block < expiration) {
                // Failsafe: absurd lock amounts must not make the unlock revert; the payout is capped
                // at the kept-back amount anyway.
                total = failsafe_addition(total, amount);
            }
        }
    }

    // ------------------------------------------------------------------ views

    /// The pair's current channel id, 0 if it has none.
    function getChannelIdentifier(address participant, address partner) public view returns (uint256) {
        return participants_hash_to_channel_identifier[getParticipantsHash(participant, partner)];
    }

    /// settle_block_number and state of a channel. Storage is deleted at settlement, so a missing channel
    /// with an id already issued is reported as Settled while either direction still has locks to
    /// unlock, and as Removed after that. (The contract does not remember who the participants were.)
    function getChannelInfo(uint256 channel_identifier, address participant1, address participant2)
        external
        view
        returns (uint256, ChannelState)
    {
        Channel storage channel = channels[channel_identifier];
        ChannelState state = channel.state;
        if (state == ChannelState.NonExistent && channel_identifier > 0 && channel_identifier <= channel_counter) {
            bool pending1 = unlock_identifier_to_unlock_data[
                getUnlockIdentifier(channel_identifier, participant1, participant2)
            ].locked_amount > 0;
            bool pending2 = unlock_identifier_to_unlock_data[
                getUnlockIdentifier(channel_identifier, participant2, participant1)
            ].locked_amount > 0;
            state = pending1 || pending2 ? ChannelState.Settled : ChannelState.Removed;
        }
        return (channel.settle_block_number, state);
    }

    /// deposit, withdrawn_amount, is_the_closer, balance_hash, nonce of `participant`, then the locksroot
    /// and locked amount kept back at settlement for its locks towards `partner` (zero before settlement).
    function getChannelParticipantInfo(uint256 channel_identifier, address participant, address partner)
        external
        view
        returns (uint256, uint256, bool, bytes32, uint256, bytes32, uint256)
    {
        Participant storage p = channels[channel_identifier].participants[participant];
        UnlockData storage u = unlock_identifier_to_unlock_data[
            getUnlockIdentifier(channel_identifier, participant, partner)
        ];
        return (p.deposit, p.withdrawn_amount, p.is_the_closer, p.balance_hash, p.nonce, u.locksroot, u.locked_amount);
    }

    /// keccak(lower address || higher address): the same for both argument orders.
    function getParticipantsHash(address participant, address partner) public pure returns (bytes32) {
        require(participant != address(0), "TN: participant address zero");
        require(partner != address(0), "TN: partner address zero");
        require(participant != partner, "TN: identical addresses");
        return
            participant < partner
                ? keccak256(abi.encodePacked(participant, partner))
                : keccak256(abi.encodePacked(partner, participant));
    }

    /// keccak(uint256 channel_identifier || sender || receiver): the key of sender's locks after settle.
    function getUnlockIdentifier(uint256 channel_identifier, address sender, address receiver)
        public
        pure
        returns (bytes32)
    {
        require(sender != receiver, "TN: sender/receiver mismatch");
        return keccak256(abi.encodePacked(channel_identifier, sender, receiver));
    }

    /// The most participant1 can get at settlement: (T2 + L2) - (T1 + L1) + D1 - W1, with additions
    /// saturating and the subtraction of W1 floored at 0. Requires T2 + L2 >= T1 + L1: settlement is
    /// symmetric, and fixing the order avoids an underflow case.
    function getMaxPossibleReceivableAmount(
        uint256 participant1_deposit,
        uint256 participant1_withdrawn,
        uint256 participant1_transferred,
        uint256 participant1_locked,
        uint256 participant2_transferred,
        uint256 participant2_locked
    ) public pure returns (uint256) {
        uint256 p1_max_sent = failsafe_addition(participant1_transferred, participant1_locked);
        uint256 p2_max_sent = failsafe_addition(participant2_transferred, participant2_locked);
        require(p2_max_sent >= p1_max_sent, "TN: transfers not ordered");
        uint256 p1_max_amount = failsafe_addition(p2_max_sent - p1_max_sent, participant1_deposit);
        (p1_max_amount, ) = failsafe_subtract(p1_max_amount, participant1_withdrawn);
        return p1_max_amount;
    }

    /// The chain id all signatures for this contract commit to. (0.40 declares it non-view; reading it
    /// is all it does, so `view` lets clients call it without a transaction. The selector is the same.)
    function chain_id() external view returns (uint256) {
        return block.chainid;
    }

    // ------------------------------------------------------------------ signed messages (docs/protocol.md §2)

    /// EIP-191 digest of the 212-byte balance proof: token network || chain id || 1 || channel id ||
    /// balance hash || nonce || additional hash.
    function balanceProofDigest(
        uint256 channel_identifier,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash
    ) internal view returns (bytes32) {
        return
            keccak256(
                abi.encodePacked(
                    signature_prefix,
                    "212",
                    address(this),
                    block.chainid,
                    uint256(MessageType.MessageTypeId.BalanceProof),
                    channel_identifier,
                    balance_hash,
                    nonce,
                    additional_hash
                )
            );
    }

    /// EIP-191 digest of the 277-byte counter-signature: the balance proof with `message_type` in the
    /// type field, followed by the balance proof's own 65-byte signature.
    function balanceProofCounterDigest(
        MessageType.MessageTypeId message_type,
        uint256 channel_identifier,
        bytes32 balance_hash,
        uint256 nonce,
        bytes32 additional_hash,
        bytes calldata balance_proof_signature
    ) internal view returns (bytes32) {
        return
            keccak256(
                abi.encodePacked(
                    signature_prefix,
                    "277",
                    address(this),
                    block.chainid,
                    uint256(message_type),
                    channel_identifier,
                    balance_hash,
                    nonce,
                    additional_hash,
                    balance_proof_signature
                )
            );
    }

    /// EIP-191 digest of the 200-byte withdraw message: token network || chain id || 3 || channel id ||
    /// participant || total withdraw || expiration block.
    function withdrawDigest(
        uint256 channel_identifier,
        address participant,
        uint256 total_withdraw,
        uint256 expiration_block
    ) internal view returns (bytes32) {
        return
            keccak256(
                abi.encodePacked(
                    signature_prefix,
                    "200",
                    address(this),
                    block.chainid,
                    uint256(MessageType.MessageTypeId.Withdraw),
                    channel_identifier,
                    participant,
                    total_withdraw,
                    expiration_block
                )
            );
    }
}
