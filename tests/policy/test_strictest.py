"""A call a policy could not decide is held under one ask at least as strict as every ask the
policy might have made: no approval meets it without meeting each one's own terms."""

from __future__ import annotations

from typing import Any

import pytest
from engines import TIERED

from roomkit import HumanInputToolHandler
from roomkit.people import Directory, Person
from roomkit.policy import Ask, CedarPolicy, PolicyCall, RegoPolicy
from roomkit.policy.ruling import rule_call
from roomkit.tools.approvals import Approval, Quorum, approve, reject


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


def unknown(call: PolicyCall) -> list[dict[str, Any]]:
    """An entities function knowing nobody: Cedar cannot decide any call."""
    raise KeyError(call.actor)


async def test_a_call_cedar_cannot_decide_is_never_left_to_one_asks_approver(turn: Any) -> None:
    """An amount past 64 bits skips ``ask:huge``: dave alone, whom only the urgent memo's
    ask names, approved a payment meant for the cfo and the ceo."""
    human = HumanInputToolHandler({"Ask"}, policy=CedarPolicy(TIERED))
    arguments = {"to": "bob", "amount": 2**64, "memo": "urgent"}
    done = await turn(human, arguments, votes=[("dave", approve()), ("cfo", reject())])
    assert [event.approvers for event in done.asked] == [("cfo", "ceo", "dave")]
    assert done.paid == []
    assert done.read[1]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)


@pytest.mark.parametrize(
    ("text", "quorum", "timeout"),
    [
        # Nobody in common: every approver of either.
        (TIERED, Quorum(3, of=["cfo", "ceo", "dave"]), None),
        # Any 3 of the four hold 2 of a, b, c and one of c, d; 2 of them may be a and b.
        (
            '@id("ask:two") @approvers("a, b, c") @quorum("2") @timeout("60")\n'
            'forbid(principal, action == Action::"pay", resource);\n'
            '@id("ask:cd") @approvers("c, d") @timeout("600")\n'
            'forbid(principal, action == Action::"pay", resource);\n'
            '@id("ask:wire") @approvers("x")\n'
            'forbid(principal, action == Action::"wire", resource);\n',
            Quorum(3, of=["a", "b", "c", "d"]),
            600.0,
        ),
        # One ask alone keeps its own terms.
        (
            '@id("ask:two") @approvers("a, b, c") @quorum("2") @timeout("60")\n'
            'forbid(principal, action == Action::"pay", resource);\n',
            Quorum(2, of=["a", "b", "c"]),
            60.0,
        ),
    ],
    ids=["apart", "overlapping", "one"],
)
async def test_a_call_cedar_cannot_decide_needs_each_asks_own_quorum(
    text: str, quorum: Quorum, timeout: float | None
) -> None:
    ruling = await rule_call(CedarPolicy(text, unknown), None, call(amount=5))
    assert ruling.ask is not None
    assert (ruling.ask.quorum, ruling.ask.timeout) == (quorum, timeout)


async def test_an_ask_naming_nobody_stands_for_the_rules_approvers_in_a_fallback() -> None:
    """``ask:two`` asks 2 of the rule's carol and erin: the fallback asked dave alone, whom
    only another ask names."""
    text = (
        '@id("ask:two") @quorum("2")\n'
        'forbid(principal, action == Action::"pay", resource);\n'
        '@id("ask:dave") @approvers("dave") @timeout("60")\n'
        'forbid(principal, action == Action::"pay", resource);\n'
    )
    rule = Approval(approvers=["carol", "erin"], timeout=900)
    ruling = await rule_call(CedarPolicy(text, unknown), rule, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.quorum == Quorum(3, of=["carol", "erin", "dave"])
    assert ruling.ask.timeout == 900


async def test_an_ask_naming_fewer_than_the_rules_quorum_stands_for_the_rule_in_a_fallback() -> (
    None
):
    """Decided, ``ask:dave`` is held under the rule's two of x, y and z (one approver cannot
    meet a quorum of two); its fallback asked dave alone."""
    text = '@id("ask:dave") @approvers("dave")\nforbid(principal, action, resource);'
    rule = Approval(approvers=Quorum(2, of=["x", "y", "z"]))
    decided = await rule_call(CedarPolicy(text), rule, call(amount=5))
    failed = await rule_call(CedarPolicy(text, unknown), rule, call(amount=5))
    assert decided.ask is not None
    assert failed.ask is not None
    assert decided.ask.quorum == failed.ask.quorum == Quorum(2, of=["x", "y", "z"])


async def test_a_fallback_for_one_ask_of_any_one_approver_asks_any_one() -> None:
    text = '@id("ask:d") @approvers("dave, erin")\nforbid(principal, action, resource);'
    ruling = await rule_call(CedarPolicy(text, unknown), None, call(amount=5))
    assert ruling.ask is not None
    assert (ruling.ask.approvers, ruling.ask.quorum) == (("dave", "erin"), None)


@pytest.mark.parametrize(
    ("terms", "quorum"),
    [('"quorum": 2, "timeout": -5', 2), ('"quorum": "2"', 3), ('"quorum": 9', 3)],
    ids=["bad timeout", "quorum as text", "quorum above them"],
)
async def test_a_rego_ask_no_ask_can_meet_keeps_its_quorum_in_its_fallback(
    terms: str, quorum: int
) -> None:
    """The approvers it names were asked with no quorum: any one of them approved alone an
    ask for two; a quorum they cannot meet asks them all."""
    module = (
        "package roomkit\nimport rego.v1\n"
        f'decision := {{"decision": "ask", "approvers": ["s1", "s2", "s3"], {terms}}}\n'
    )
    ruling = await rule_call(RegoPolicy(module), None, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.quorum == Quorum(quorum, of=["s1", "s2", "s3"])


async def test_an_ask_naming_a_role_the_directory_lacks_keeps_its_quorum() -> None:
    """Of 2 of kcy, dave and erin, the role nobody has is dropped: 2 of dave and erin, not
    either alone."""

    class Asking:
        def decide(self, call: PolicyCall) -> Ask:
            return Ask(["role:kcy", "dave", "erin"], quorum=2)

    people = Directory({"dave": Person(), "erin": Person()})
    ruling = await rule_call(Asking(), None, call(amount=5), directory=people)
    assert ruling.ask is not None
    assert ruling.ask.quorum == Quorum(2, of=["dave", "erin"])


def _named(prefix: str) -> str:
    return ", ".join(f"{prefix}{n}" for n in range(60))


MANY = (
    "permit(principal, action, resource);\n"
    f'@id("ask:a") @approvers("{_named("a")}") @quorum("30")\n'
    'forbid(principal, action == Action::"pay", resource);\n'
    f'@id("ask:b") @approvers("{_named("b")}") @quorum("30")\n'
    'forbid(principal, action == Action::"pay", resource);\n'
)
"""Two asks of 30 among 60 each: 120 approvers in all, more than a request lists."""


@pytest.mark.parametrize("entities", [None, unknown], ids=["both apply", "cedar failed"])
async def test_asks_naming_more_approvers_than_a_request_lists_refuse_the_call(
    entities: Any,
) -> None:
    """Their 120 approvers made no request, and the call went to its own actor alone."""
    ruling = await rule_call(CedarPolicy(MANY, entities), None, call(amount=5))
    assert ruling.ask is None
    assert ruling.refusal is not None
    assert ruling.record is not None
    assert (ruling.record.decision, ruling.record.failed) == ("deny", True)


async def test_an_ask_naming_more_approvers_than_a_request_lists_refuses_the_call() -> None:
    class Asking:
        def decide(self, call: PolicyCall) -> Ask:
            return Ask([f"p{n}" for n in range(101)], quorum=50)

    ruling = await rule_call(Asking(), Approval(approvers="ops"), call(amount=5))
    assert (ruling.ask, ruling.refusal is not None) == (None, True)


DAVE = '@id("ask:dave") @approvers("dave")\nforbid(principal, action == Action::"pay", resource);\n'
ERIN = '@id("ask:erin") @approvers("erin")\nforbid(principal, action == Action::"pay", resource);\n'


@pytest.mark.parametrize(
    ("text", "entities"),
    [(DAVE, None), (DAVE, unknown), (DAVE + ERIN, None), (DAVE + ERIN, unknown)],
    ids=["one applies", "one, cedar failed", "both apply", "both, cedar failed"],
)
async def test_an_ask_the_rules_quorum_outnumbers_keeps_the_rules_terms(
    text: str, entities: Any
) -> None:
    """Under a rule of 3 of x, y and z, an ask naming dave alone cannot be met, and the rule
    holds the call; a fallback, or a second ask, let dave (and erin) approve with fewer."""
    rule = Approval(approvers=Quorum(3, of=["x", "y", "z"]))
    ruling = await rule_call(CedarPolicy(text, entities), rule, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.quorum == Quorum(3, of=["x", "y", "z"])
