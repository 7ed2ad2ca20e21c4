"""A held call whose arguments are more than a request keeps is refused to the model, which
reads why and what to send instead; the turn goes on."""

from __future__ import annotations

from typing import Any

from roomkit import Approval, HumanInputToolHandler
from roomkit.policy import Allow, PolicyCall, PolicyDecision
from roomkit.tools.approvals import approve


class AllowAll:
    """A policy allowing every call: the call is recorded, nobody asked."""

    def decide(self, call: PolicyCall) -> PolicyDecision:
        return Allow("allowed")


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


async def test_an_approval_of_arguments_nested_too_deep_is_refused_to_the_model(turn: Any) -> None:
    human = HumanInputToolHandler({"Ask"}, approvals={"pay": Approval()})
    done = await turn(human, {"to": "bob", "amount": 5, "memo": nested(30)}, answer=approve())
    content, is_error = done.read
    assert is_error
    assert "Invalid arguments for 'pay'" in content
    assert "24 levels deep" in content
    assert (done.paid, done.asked) == ([], [])


async def test_a_policy_decided_call_with_an_integer_too_long_is_refused_to_the_model(
    turn: Any,
) -> None:
    human = HumanInputToolHandler({"Ask"}, policy=AllowAll())
    done = await turn(human, {"to": "bob", "amount": 10**150})
    content, is_error = done.read
    assert is_error
    assert "Invalid arguments for 'pay'" in content
    assert "100 characters" in content
    assert done.paid == []
