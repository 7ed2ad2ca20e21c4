"""The same call through Allow, Deny, Ask and Abstain, enforced and in shadow, for each back
end: Cedar and Rego in process, OPA over HTTP (a stub on loopback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from engines import CASES, CEDAR, REGO, Stub, opa_stub

from roomkit import Approval, HumanInputToolHandler
from roomkit.policy import CedarPolicy, OPAPolicy, Policy, RegoPolicy, tally
from roomkit.policy._base import PolicyFailed
from roomkit.policy.decisions import Abstain, PolicyCall
from roomkit.tools.approvals import approve

ENGINES = ("cedar", "rego", "opa")


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with opa_stub() as served:
        yield served


def make(engine: str, stub: Stub, **options: Any) -> Policy:
    if engine == "cedar":
        return CedarPolicy(CEDAR, **options)
    if engine == "rego":
        return RegoPolicy(REGO, **options)
    return OPAPolicy(stub.url, "roomkit/decision", **options)


def human(policy: Policy) -> HumanInputToolHandler:
    # The static rule: carol approves every payment.
    return HumanInputToolHandler(
        {"Ask"}, policy=policy, approvals={"pay": Approval(approvers="carol")}
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(CASES))
async def test_an_enforced_policy_decides(engine: str, case: str, stub: Stub, turn: Any) -> None:
    stub.mode = "ok"
    done = await turn(human(make(engine, stub)), CASES[case], answer=approve())
    entry = await done.decided()
    assert (entry["decision"], entry["enforced"], entry["automatic"]) == (case, True, True)
    assert entry["policy"] == engine
    asked = [event.approvers for event in done.asked]
    if case == "allow":
        assert (done.paid, asked) == ([CASES[case]], [])
    elif case == "deny":
        assert (done.paid, asked) == ([], [])
        content, is_error = done.read
        assert is_error
        assert "mallory is blocked" in json.loads(content)["error"]
    elif case == "ask":
        assert (done.paid, asked) == ([CASES[case]], [("dave",)])
    else:
        assert (done.paid, asked) == ([CASES[case]], [("carol",)])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(CASES))
async def test_a_shadow_policy_is_recorded_and_counted_and_changes_nothing(
    engine: str, case: str, stub: Stub, turn: Any
) -> None:
    stub.mode = "ok"
    done = await turn(human(make(engine, stub, shadow=True)), CASES[case], answer=approve())
    assert done.paid == [CASES[case]]
    assert [event.approvers for event in done.asked] == [("carol",)]
    entry = await done.decided()
    assert (entry["decision"], entry["enforced"]) == (case, False)
    (count,) = tally.counts()
    assert (count.tool, count.decision, count.enforced, count.calls) == ("pay", case, False, 1)


@pytest.mark.parametrize("mode", ["500", "hang"])
async def test_opa_failing_asks_a_person(mode: str, stub: Stub, turn: Any) -> None:
    stub.mode = mode
    try:
        policy = OPAPolicy(stub.url, timeout=0.5)
        done = await turn(human(policy), CASES["allow"], answer=approve())
    finally:
        stub.mode = "ok"
    assert done.paid == [CASES["allow"]]
    assert [event.approvers for event in done.asked] == [("carol",)]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)


@pytest.mark.parametrize("mode", ["500", "hang", "trickle"])
async def test_opa_failing_refuses_with_on_error_deny(mode: str, stub: Stub, turn: Any) -> None:
    stub.mode = mode
    try:
        policy = OPAPolicy(stub.url, timeout=0.5, on_error="deny")
        done = await turn(human(policy), CASES["allow"], answer=approve())
    finally:
        stub.mode = "ok"
    assert (done.paid, done.asked) == ([], [])
    assert done.read[1]
    assert (await done.decided())["decision"] == "deny"


async def test_an_undefined_opa_rule_abstains(stub: Stub, turn: Any) -> None:
    stub.mode = "undefined"
    try:
        done = await turn(human(OPAPolicy(stub.url)), CASES["allow"], answer=approve())
    finally:
        stub.mode = "ok"
    assert [event.approvers for event in done.asked] == [("carol",)]
    assert (await done.decided())["decision"] == "abstain"


async def test_opa_reads_the_call_as_its_input(stub: Stub, turn: Any) -> None:
    stub.mode = "ok"
    stub.inputs.clear()
    await turn(human(OPAPolicy(stub.url)), CASES["allow"])
    (given,) = stub.inputs
    assert given["tool"] == "pay"
    assert given["arguments"] == CASES["allow"]
    assert (given["actor"], given["room"], given["channel"]) == ("alice", "r1", "agent")
    assert isinstance(given["digest"], str)


@pytest.mark.parametrize(
    ("rule", "kind"),
    [('{"decision": ["allow"]}', "list"), ('{"decision": {"allow": true}}', "dict")],
)
def test_a_decision_that_is_no_name_abstains_saying_what_it_was(rule: str, kind: str) -> None:
    """A decision of the wrong type is one of no known shape: ``Abstain``, saying so (it was
    a ``TypeError`` inside, reported as the policy failing)."""
    pytest.importorskip("regopy")
    policy = RegoPolicy(f"package roomkit\ndecision := {rule}")

    decided = policy.decide(PolicyCall("pay", {}, "digest", "alice"))

    assert decided == Abstain(f"unknown result: a decision of {kind}, not a name")


def test_an_ask_whose_approvers_are_no_list_fails_saying_so() -> None:
    """An object of approvers is not read as its keys: the ask cannot be met."""
    pytest.importorskip("regopy")
    policy = RegoPolicy('package roomkit\ndecision := {"decision": "ask", "approvers": {"bob": 1}}')

    with pytest.raises(PolicyFailed, match=r"approvers are a list of actor ids .* got dict"):
        policy.decide(PolicyCall("pay", {}, "digest", "alice"))
