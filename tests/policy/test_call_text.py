"""Rego and OPA read a call's text as it is written: a rule naming non-ASCII text applies to
it, an actor or a tool holding a lone surrogate is refused saying which, and a lone
surrogate elsewhere in the call is read as ``?``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engines import Stub, opa_stub

from roomkit.core.exceptions import InvalidTextError
from roomkit.policy import Abstain, Allow, Deny, OPAPolicy, PolicyCall, RegoPolicy

TEXT = """
package roomkit

import rego.v1

default decision := {"decision": "not-applicable"}

decision := {"decision": "deny", "reason": "blocked"} if {
    input.arguments.to in {"José", "b?b"}
} else := {"decision": "deny", "reason": "listed"} if {
    input.arguments.to in data.listed
} else := {"decision": "allow"} if {
    input.actor == "zoë"
}
"""


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with opa_stub() as served:
        yield served


def call(to: str, *, actor: str = "alice", tool: str = "pay") -> PolicyCall:
    return PolicyCall(tool, {"to": to, "amount": 5}, "digest", actor, "r1", "agent")


def test_a_rego_rule_naming_non_ascii_text_applies_to_it() -> None:
    policy = RegoPolicy(TEXT, data={"listed": ["Ørjan"]})
    assert policy.decide(call("José")) == Deny("blocked")
    assert policy.decide(call("Ørjan")) == Deny("listed")
    assert isinstance(policy.decide(call("bob", actor="zoë")), Allow)
    assert isinstance(policy.decide(call("bob", actor="zoe")), Abstain)


def test_rego_reads_a_lone_surrogate_in_the_arguments_as_a_question_mark() -> None:
    assert RegoPolicy(TEXT).decide(call("b\ud800b")) == Deny("blocked")


@pytest.mark.parametrize("field", ["actor", "tool"])
def test_a_rego_actor_or_tool_holding_a_lone_surrogate_is_refused_naming_it(field: str) -> None:
    names = {"actor": "alice", "tool": "pay", field: "b\ud800"}
    with pytest.raises(InvalidTextError, match=rf"^a Rego call's {field} .* lone surrogate"):
        RegoPolicy(TEXT).decide(call("bob", actor=names["actor"], tool=names["tool"]))


@pytest.mark.parametrize("field", ["actor", "tool"])
async def test_an_opa_actor_or_tool_holding_a_lone_surrogate_is_refused_naming_it(
    field: str, stub: Stub
) -> None:
    """Refused before anything is sent: a lone surrogate made ``?`` could name another."""
    stub.mode, sent = "ok", len(stub.inputs)
    names = {"actor": "alice", "tool": "pay", field: "b\ud800"}
    async with OPAPolicy(stub.url) as policy:
        with pytest.raises(InvalidTextError, match=rf"^an OPA call's {field} .* lone surrogate"):
            await policy.decide(call("bob", actor=names["actor"], tool=names["tool"]))
    assert len(stub.inputs) == sent


async def test_opa_is_sent_a_lone_surrogate_in_the_arguments_as_a_question_mark(
    stub: Stub,
) -> None:
    stub.mode = "ok"
    async with OPAPolicy(stub.url) as policy:
        decision = await policy.decide(call("b\ud800b é"))
    assert isinstance(decision, Allow)
    assert stub.inputs[-1]["arguments"] == {"to": "b?b é", "amount": 5}
