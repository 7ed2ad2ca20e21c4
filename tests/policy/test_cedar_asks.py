"""Several ``ask:`` policies of a Cedar set applying to one call: the call meets each of them,
whichever is written first."""

from __future__ import annotations

from typing import Any

import pytest
from engines import TIERED

from roomkit import HumanInputToolHandler
from roomkit.policy import Ask, CedarPolicy, PolicyCall
from roomkit.policy.ruling import rule_call
from roomkit.tools.approvals import Approval, Quorum, approve, reject

URGENT_FIRST = """
permit(principal, action, resource);

@id("ask:urgent") @approvers("dave")
forbid(principal, action == Action::"pay", resource)
when { context.arguments has memo && context.arguments.memo like "*urgent*" };

@id("ask:huge") @approvers("cfo, ceo")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 10000 };
"""
""":data:`TIERED`'s asks written the other way round."""

HUGE_URGENT = {"to": "bob", "amount": 50_000, "memo": "urgent"}

ORDERS = pytest.mark.parametrize(
    ("text", "reason"),
    [(TIERED, "ask:huge; ask:urgent"), (URGENT_FIRST, "ask:urgent; ask:huge")],
    ids=["huge first", "urgent first"],
)


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


@ORDERS
async def test_a_call_several_asks_apply_to_needs_each_ones_approvers(
    text: str, reason: str
) -> None:
    """The first written set the ask: dave alone, written first, approved a huge payment."""
    ruling = await rule_call(CedarPolicy(text), None, call(**HUGE_URGENT))
    assert ruling.ask is not None
    assert ruling.ask.quorum is not None
    assert ruling.ask.quorum.n == 3
    assert sorted(ruling.ask.quorum.of) == ["ceo", "cfo", "dave"]
    assert ruling.record is not None
    assert (ruling.record.reason, ruling.record.failed) == (reason, False)


@ORDERS
def test_decide_gives_the_asks_combination(text: str, reason: str) -> None:
    decided = CedarPolicy(text).decide(call(**HUGE_URGENT))
    assert sorted(decided.approvers or ()) == ["ceo", "cfo", "dave"]
    assert (decided.quorum, decided.timeout, decided.reason) == (3, None, reason)


@ORDERS
async def test_dave_alone_cannot_approve_a_huge_urgent_payment(
    turn: Any, text: str, reason: str
) -> None:
    human = HumanInputToolHandler({"Ask"}, policy=CedarPolicy(text))
    done = await turn(human, HUGE_URGENT, votes=[("dave", approve()), ("cfo", reject())])
    assert [sorted(event.approvers) for event in done.asked] == [["ceo", "cfo", "dave"]]
    assert done.paid == []
    assert done.read[1]


@ORDERS
async def test_a_huge_urgent_payment_runs_once_all_three_approve(
    turn: Any, text: str, reason: str
) -> None:
    human = HumanInputToolHandler({"Ask"}, policy=CedarPolicy(text))
    votes = [("dave", approve()), ("cfo", approve()), ("ceo", approve())]
    done = await turn(human, HUGE_URGENT, votes=votes)
    assert done.paid == [HUGE_URGENT]


def test_several_asks_applying_are_read_in_the_order_they_are_written() -> None:
    """Cedar hands the policies that applied in an order that differs from one process to
    the next: the approvers asked, and the reason, keep the order written."""
    names = "abcdefgh"
    policy = CedarPolicy(
        "permit(principal, action, resource);\n"
        + "".join(
            f'@id("ask:{name}") @approvers("{name}x")\n'
            'forbid(principal, action == Action::"pay", resource);\n'
            for name in names
        )
    )
    decided = policy.decide(call(amount=5))
    assert decided.approvers == tuple(f"{name}x" for name in names)
    assert decided.quorum == len(names)
    assert decided.reason == "; ".join(f"ask:{name}" for name in names)


ASKS = """
@id("ask:two") @quorum("2")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 1000 };

@id("ask:large") @approvers("cfo, ceo") @quorum("2")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 5000 };

@id("ask:dave") @approvers("dave") @timeout("60")
forbid(principal, action == Action::"pay", resource);
"""


def test_one_ask_applying_asks_on_its_own_terms() -> None:
    assert CedarPolicy(ASKS).decide(call(amount=5)) == Ask(["dave"], None, 60.0, "ask:dave")


@pytest.mark.parametrize(
    ("amount", "approvers", "quorum", "timeout"),
    [
        (5, ["dave"], None, 60.0),
        (2000, ["carol", "erin", "dave"], 3, 900.0),
        (9000, ["carol", "erin", "cfo", "ceo", "dave"], 5, 900.0),
    ],
)
async def test_an_ask_naming_nobody_stands_for_the_rules_approvers(
    amount: int, approvers: list[str], quorum: int | None, timeout: float
) -> None:
    """``ask:two`` asks 2 of the rule's carol and erin, ``ask:dave`` dave: the first written
    set the ask, so dave, whom the second names, was never asked."""
    rule = Approval(approvers=["carol", "erin"], timeout=900)
    ruling = await rule_call(CedarPolicy(ASKS), rule, call(amount=amount))
    assert ruling.ask is not None
    assert ruling.ask.approvers == tuple(approvers)
    assert ruling.ask.quorum == (Quorum(quorum, of=approvers) if quorum else None)
    assert ruling.ask.timeout == timeout
    assert ruling.record is not None
    assert not ruling.record.failed


async def test_asks_one_of_which_cannot_be_met_under_the_rule_fail_the_policy() -> None:
    """A quorum of 2 of nobody, as it alone would: ``on_error`` decides, here a refusal."""
    text = (
        '@id("ask:two") @quorum("2")\n'
        'forbid(principal, action == Action::"pay", resource);\n'
        '@id("ask:dave") @approvers("dave")\n'
        'forbid(principal, action == Action::"pay", resource);\n'
    )
    ruling = await rule_call(CedarPolicy(text, on_error="deny"), None, call(amount=5))
    assert ruling.ask is None
    assert ruling.refusal is not None
    assert ruling.record is not None
    assert ruling.record.failed


async def test_asks_naming_more_approvers_than_a_request_holds_refuse_the_call() -> None:
    """Two asks of 60 approvers each name 120 together, more than a request lists: the
    rule's carol, whom neither names, does not approve in their place; the call is refused."""
    text = "".join(
        f'@id("ask:{team}") @approvers("{", ".join(f"{team}{n}" for n in range(60))}")\n'
        'forbid(principal, action == Action::"pay", resource);\n'
        for team in ("a", "b")
    )
    rule = Approval(approvers=["carol"])
    ruling = await rule_call(CedarPolicy(text), rule, call(amount=5))
    assert (ruling.ask, ruling.refusal is not None) == (None, True)
    assert ruling.record is not None
    assert ruling.record.decision == "deny"
    assert ruling.record.failed
