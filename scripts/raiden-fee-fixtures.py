#!/usr/bin/env python3
"""Writes the fee fixtures of test/unit/protocol/fees/raiden.test.ts from Raiden's own code.

Run by hand with a checkout of raiden-network/raiden (the numbers pinned were made from commit 90cd5a6cc):

    python3 scripts/raiden-fee-fixtures.py /path/to/raiden > test/fixtures/fees/raiden.json

It loads Raiden's fee functions from their source files (mediation_fee.py whole; find_intersection and
get_amount_without_fees from mediator.py; calculate_fee_margin and calculate_safe_amount_with_fee from initiator.py;
ppm_fee_per_channel; get_amount_with_fees and get_initial_amount_for_amount_after_fees from tests/utils), with stand-ins
for the rest of Raiden they import (the channel state is reduced to the balances these functions read), and records
what they answer for seeded random schedules, balances and amounts. Nothing of Raiden is copied into Sluice.
"""
import ast
import json
import math
import operator
import os
import random
import sys
import types
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, List, Optional, Tuple

ROOT = sys.argv[1]


def read(rel: str) -> str:
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


class UndefinedMediationFee(Exception):
    pass


def stub_module(name: str, **names: Any) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(names)
    sys.modules[name] = module


def identity(x: Any) -> Any:
    return x


TYPES = {
    name: identity
    for name in [
        "Balance",
        "FeeAmount",
        "PaymentWithFeeAmount",
        "ProportionalFeeAmount",
        "TokenAmount",
        "PaymentAmount",
    ]
}
stub_module("raiden")
stub_module("raiden.exceptions", UndefinedMediationFee=UndefinedMediationFee)
stub_module("raiden.transfer")
stub_module("raiden.transfer.architecture", State=object)
stub_module("raiden.utils")
stub_module("raiden.utils.typing", typecheck=lambda value, kind: None, **TYPES)

fee_module = types.ModuleType("mediation_fee")
exec(compile(read("raiden/transfer/mediated_transfer/mediation_fee.py"), "mediation_fee.py", "exec"), fee_module.__dict__)
FeeScheduleState = fee_module.FeeScheduleState


def constants(rel: str, names: List[str]) -> dict:
    found = {}
    for node in ast.parse(read(rel)).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id in names:
            found[target.id] = eval(compile(ast.Expression(node.value), rel, "eval"))
    return found


@dataclass
class End:
    balance: int


@dataclass
class Channel:
    our_state: End
    partner_state: End
    our_total_deposit: int
    partner_total_deposit: int
    fee_schedule: Any


NAMESPACE: dict = {
    **TYPES,
    "Fraction": Fraction,
    "Interpolate": fee_module.Interpolate,
    "FeeScheduleState": FeeScheduleState,
    "UndefinedMediationFee": UndefinedMediationFee,
    "operator": operator,
    "ceil": math.ceil,
    "Callable": Callable,
    "Optional": Optional,
    "List": List,
    "Tuple": Tuple,
    "NamedTuple": __import__("typing").NamedTuple,
    "NettingChannelState": Channel,
    "get_balance": lambda sender, receiver: sender.balance,
    **constants("raiden/settings.py", ["DEFAULT_MEDIATION_FEE_MARGIN", "PAYMENT_AMOUNT_BASED_FEE_MARGIN"]),
}


def load(rel: str, names: List[str]) -> None:
    tree = ast.parse(read(rel))
    nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    missing = set(names) - {n.name for n in nodes}
    assert not missing, f"{rel} has no {missing}"
    exec(compile(ast.Module(body=nodes, type_ignores=[]), rel, "exec"), NAMESPACE)


load("raiden/transfer/mediated_transfer/mediator.py", ["find_intersection", "get_amount_without_fees"])
load("raiden/transfer/mediated_transfer/initiator.py", ["calculate_fee_margin", "calculate_safe_amount_with_fee"])
load("raiden/utils/mediation_fees.py", ["ppm_fee_per_channel"])
load("raiden/tests/utils/mediation_fees.py", ["FeesCalculation", "get_amount_with_fees", "get_initial_amount_for_amount_after_fees"])

rng = random.Random(30)


def magnitude() -> int:
    return rng.choice([30, 10_000, 10**9, 10**18, 10**22])


def penalty_for(capacity: int) -> Optional[list]:
    kind = rng.random()
    if kind < 0.45:
        return None
    if kind < 0.75:
        return fee_module.calculate_imbalance_fees(capacity, rng.randint(0, 50_000))
    # A penalty announced by hand: a few points over [0, capacity], any shape.
    xs = sorted(set([0, capacity] + [rng.randint(0, capacity) for _ in range(rng.randint(0, 3))]))
    top = max(1, capacity // 10)
    return [(x, rng.randint(0, top)) for x in xs]


def schedule(cap_fees: bool, scale: int, capacity: int) -> Any:
    flat = rng.choice([0, rng.randint(0, max(1, scale // 1000)), rng.randint(0, 100)])
    per_hop = rng.choice([0, rng.randint(0, 20_000), rng.randint(0, 1_000_000)])
    return FeeScheduleState(
        cap_fees=cap_fees, flat=flat, proportional=NAMESPACE["ppm_fee_per_channel"](per_hop), imbalance_penalty=penalty_for(capacity)
    )


def schedule_json(s: Any) -> dict:
    return {
        "cap_fees": s.cap_fees,
        "flat": str(s.flat),
        "proportional": str(s.proportional),
        "imbalance_penalty": None if not s.imbalance_penalty else [[str(x), str(y)] for x, y in s.imbalance_penalty],
    }


def attempt(f: Callable[[], Any]) -> Any:
    try:
        result = f()
        return None if result is None else str(result)
    except (UndefinedMediationFee, ZeroDivisionError, ValueError, AssertionError) as e:
        return {"raises": type(e).__name__}


def mediation() -> dict:
    scale = magnitude()
    cap_fees = rng.random() < 0.6
    capacity_in = rng.randint(1, scale)
    capacity_out = rng.randint(1, scale)
    balance_in = rng.randint(0, capacity_in)
    balance_out = rng.randint(0, capacity_out)
    receivable = capacity_in - balance_in
    schedule_in = schedule(cap_fees, scale, capacity_in)
    schedule_out = schedule(cap_fees, scale, capacity_out)
    # Mostly what both channels can carry; now and then more, which no mediation can.
    room = max(1, min(receivable, balance_out))
    amount = rng.randint(1, room if rng.random() < 0.85 else max(room, capacity_in))
    # get_amount_without_fees reads the balances from channel states: ours are reduced to what it reads.
    channel_in = Channel(End(balance_in), End(receivable), capacity_in, 0, schedule_in)
    channel_out = Channel(End(balance_out), End(0), capacity_out, 0, schedule_out)
    return {
        "payer": {"balance": str(balance_in), "receivable": str(receivable), "schedule": schedule_json(schedule_in)},
        "payee": {"balance": str(balance_out), "schedule": schedule_json(schedule_out)},
        "amount": str(amount),
        "amountWithoutFees": attempt(lambda: NAMESPACE["get_amount_without_fees"](amount, channel_in, channel_out)),
        "amountWithFees": attempt(
            lambda: NAMESPACE["get_amount_with_fees"](amount, balance_in, balance_out, schedule_in, schedule_out, receivable)
        ),
        "_channels": (channel_in, channel_out),
    }


def route() -> dict:
    hops = [mediation() for _ in range(rng.randint(1, 3))]
    amount = rng.randint(1, max(1, min(int(h["payee"]["balance"]) for h in hops) // 2))
    try:
        found = NAMESPACE["get_initial_amount_for_amount_after_fees"](amount, [h["_channels"] for h in hops])
        answer = None if found is None else {"amount": str(found.total_amount), "fees": [str(f) for f in reversed(found.mediation_fees)]}
    except (UndefinedMediationFee, ZeroDivisionError, ValueError, AssertionError) as e:
        answer = {"raises": type(e).__name__}
    return {"mediations": [{k: v for k, v in h.items() if k in ("payer", "payee")} for h in hops], "amount": str(amount), "answer": answer}


def curve() -> dict:
    capacity = rng.choice([rng.randint(1, 40), rng.randint(1, 10**4), rng.randint(1, 10**12), rng.randint(10**15, 10**24)])
    ppm = rng.choice([rng.randint(1, 50_000), rng.randint(1, 5_000), rng.randint(5_000, 50_000)])
    points = fee_module.calculate_imbalance_fees(capacity, ppm)
    return {"capacity": str(capacity), "ppm": str(ppm), "points": [[str(x), str(y)] for x, y in points]}


def margin() -> dict:
    amount = rng.choice([rng.randint(1, 10**4), rng.randint(1, 10**18), rng.randint(1, 10**26)])
    fee = rng.choice([0, rng.randint(-(10**3), 10**3), rng.randint(0, amount), rng.randint(-amount, amount)])
    return {"amount": str(amount), "fee": str(fee), "safe": str(NAMESPACE["calculate_safe_amount_with_fee"](amount, fee))}


mediations = [mediation() for _ in range(200)]
for m in mediations:
    del m["_channels"]
json.dump(
    {
        "raidenCommit": "90cd5a6cc27e31088a39fd35c0dccf89871dfa88",
        "ppmFeePerChannel": [[str(p), str(NAMESPACE["ppm_fee_per_channel"](p))] for p in [0, 1, 2, 1000, 4000, 4990, 10_000, 500_000, 999_999, 1_000_000]]
        + [[str(p), str(NAMESPACE["ppm_fee_per_channel"](p))] for p in (rng.randint(0, 1_000_000) for _ in range(40))],
        "curves": [curve() for _ in range(150)],
        "mediations": mediations,
        "routes": [route() for _ in range(40)],
        "margins": [margin() for _ in range(200)],
    },
    sys.stdout,
    indent=None,
    separators=(",", ":"),
)
print()
