// SPDX-License-Identifier: MIT
pragma solidity ^0.8.10;

/// An owner-like role that may switch off risky features (deprecate, lift limits) and hand the role on.
abstract contract Controllable {
    address public controller;

    modifier onlyController() {
        require(msg.sender == controller, "Can only be called by controller");
        _;
    }

    /// Passes the controller role to `new_controller`. Only the current controller may do this.
    function changeController(address new_controller) external onlyController {
        controller = new_controller;
    }
}
