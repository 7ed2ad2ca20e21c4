"""Cedar reads every call's arguments: a null, a fraction or a huge integer is held as Cedar
can hold it, and a call Cedar still cannot decide is put to the approvers the policy names."""

from __future__ import annotations

from typing import Any

import pytest
from engines import CEDAR, TIERED

from roomkit import HumanInputToolHandler
from roomkit.policy import Allow, Ask, CedarPolicy, Deny, PolicyCall, PolicyError
from roomkit.policy._base import PolicyFailed
from roomkit.policy.ruling import rule_call
from roomkit.tools.approvals import approve


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


@pytest.mark.parametrize(
    "arguments",
    [
        {"amount": 5.5},
        {"amount": 5, "memo": None},
        {"amount": 2**63},
        {"amount": 1e-7},
        {"amount": float("nan")},
        {"amount": 5, "tags": [None, 1.25, "x"]},
        {"amount": 5, "memo": "\ud800"},
    ],
)
def test_a_cedar_forbid_holds_whatever_the_arguments_hold(arguments: dict[str, Any]) -> None:
    policy = CedarPolicy(CEDAR)
    assert policy.decide(call(to="mallory", **arguments)) == Deny("no-mallory: mallory is blocked")


def test_cedar_reads_a_fraction_as_a_decimal_and_leaves_a_null_out() -> None:
    policy = CedarPolicy("""
    permit(principal, action, resource)
    when { context.arguments.amount.lessThan(decimal("10.0")) && !(context.arguments has memo) };
    """)
    assert isinstance(policy.decide(call(amount=5.5, memo=None)), Allow)
    assert not isinstance(policy.decide(call(amount=10.5, memo=None)), Allow)


def test_arguments_never_name_a_cedar_entity() -> None:
    """An object holding Cedar's ``__entity`` escape is text, not the entity."""
    policy = CedarPolicy("""
    permit(principal, action, resource) when { context.arguments.who == User::"admin" };
    """)
    forged = {"__entity": {"type": "User", "id": "admin"}}
    assert not isinstance(policy.decide(call(who=forged)), Allow)


async def test_a_call_cedar_cannot_decide_asks_the_approvers_the_policy_names(
    turn: Any,
) -> None:
    """Not the turn's own actor, whom the default approver would be."""
    human = HumanInputToolHandler({"Ask"}, policy=CedarPolicy(CEDAR))
    done = await turn(human, {"to": "bob", "amount": 5.5}, answer=approve())
    assert [event.approvers for event in done.asked] == [("dave",)]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)


def test_arguments_nested_past_the_stack_fail_with_the_approvers_the_policy_names() -> None:
    """A list nested deeper than Python's stack is a ``PolicyFailed`` whose fallback asks
    ``dave``, as any call Cedar cannot read: never a bare ``RecursionError``, whose fallback
    would be the call's own actor."""
    nested: Any = 1
    for _ in range(2000):
        nested = [nested]
    policy = CedarPolicy(CEDAR)
    with pytest.raises(PolicyFailed, match="nest") as failed:
        policy.decide(call(to="bob", amount=5000, memo=nested))
    assert failed.value.fallback == (Ask(["dave"], reason="ask:large-payments"),)


@pytest.mark.parametrize(
    ("terms", "refusal"),
    [
        ('@quorum("two")', 'has @quorum\\("two"\\)'),
        ('@timeout("10 minutes")', 'has @timeout\\("10 minutes"\\)'),
        ('@timeout("0")', "timeout must be a positive number"),
        ('@quorum("2")', "a quorum of 2 of 1 approvers"),
    ],
)
def test_an_ask_policy_naming_terms_no_ask_meets_is_refused_when_built(
    terms: str, refusal: str
) -> None:
    text = f"""
    @id("ask:large") @approvers("dave") {terms}
    forbid(principal, action == Action::"pay", resource) when {{ context.arguments.amount > 9 }};
    permit(principal, action, resource);
    """
    with pytest.raises(
        PolicyError, match=rf'^<text>: the Cedar policy @id\("ask:large"\) .*{refusal}'
    ):
        CedarPolicy(text)


def test_an_ask_policy_naming_one_approver_twice_counts_them_once() -> None:
    """A quorum of 2 of "dave, dave" is one no ask meets (dave approves once): refused when
    built, as a quorum above the approvers named is."""
    text = '@id("ask:large") @approvers("dave, dave") @quorum("2")\n'
    text += "forbid(principal, action, resource);"
    with pytest.raises(PolicyError, match="a quorum of 2 of 1 approvers"):
        CedarPolicy(text)


def test_an_ask_policy_naming_terms_an_ask_meets_asks_on_them() -> None:
    policy = CedarPolicy("""
    @id("ask:large") @approvers("dave, erin") @quorum("2") @timeout("600")
    forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 9 };
    permit(principal, action, resource);
    """)
    assert policy.decide(call(amount=50)) == Ask(["dave", "erin"], 2, 600.0, "ask:large")


GUARDED = """
permit(principal, action, resource);

@id("ask:large") @approvers("dave")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 999 };

@id("risky")
forbid(principal, action == Action::"pay", resource) when { context.arguments.risk > 5 };
"""


@pytest.mark.parametrize(
    "arguments",
    [{"amount": 2**64}, {"amount": 1e20}, {"amount": 5000.5}, {"amount": "5000"}, {}],
)
def test_a_forbid_cedar_cannot_evaluate_never_lets_a_permit_allow(
    arguments: dict[str, Any],
) -> None:
    """Cedar skips a policy that errs: an amount held as a string (or none at all) would
    pass the forbid and be allowed by the permit; it fails, asking the approvers named."""
    policy = CedarPolicy(GUARDED)
    with pytest.raises(PolicyFailed, match=r"a forbid policy .* may refuse it") as failed:
        policy.decide(call(risk=0, **arguments))
    assert failed.value.fallback == (Ask(["dave"], reason="ask:large"),)


def test_a_forbid_cedar_cannot_evaluate_never_makes_a_refusal_an_ask() -> None:
    """Only the ``ask:`` policy applied; the refusing one erred: no person is asked."""
    policy = CedarPolicy(GUARDED)
    with pytest.raises(PolicyFailed, match="may refuse it"):
        policy.decide(call(amount=5000))
    assert policy.decide(call(amount=5000, risk=0)) == Ask(["dave"], reason="ask:large")
    assert policy.decide(call(amount=5.5, risk=9)) == Deny("risky")


async def test_an_entities_function_failing_asks_the_approvers_the_policy_names() -> None:
    """A function that knows no entity for the caller raised in it: the default approver,
    the caller, was asked to approve their own call."""
    known = {"bob": {"uid": {"type": "User", "id": "bob"}, "attrs": {}, "parents": []}}
    policy = CedarPolicy(CEDAR, lambda call: [known[call.actor or ""]])
    mallory = PolicyCall("pay", {"to": "bob", "amount": 5000}, "digest", "mallory")
    ruling = await rule_call(policy, None, mallory)
    assert ruling.ask is not None
    assert ruling.ask.approvers == ("dave",)
    with pytest.raises(PolicyFailed, match=r"entities function failed on the call \(KeyError"):
        policy.decide(mallory)


def test_an_ask_policy_cedar_cannot_evaluate_never_leaves_the_call_to_another_ask() -> None:
    """An amount past 64 bits (a string in Cedar) skipped the ask naming the cfo and the ceo:
    the call went to dave alone, whom only the urgent memo names."""
    policy = CedarPolicy(TIERED)
    assert policy.decide(call(amount=50_000)) == Ask(["cfo", "ceo"], reason="ask:huge")
    with pytest.raises(PolicyFailed, match="may refuse it or ask others") as failed:
        policy.decide(call(amount=2**64, memo="urgent"))
    huge, urgent = Ask(["cfo", "ceo"], reason="ask:huge"), Ask(["dave"], reason="ask:urgent")
    assert failed.value.fallback == (huge, urgent)
