"""A policy written in Python decides each call: allow, deny, ask, abstain; shadow or not."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from roomkit import Approval, HumanInputToolHandler
from roomkit.people import Directory, Person, Role
from roomkit.policy import Abstain, Allow, Ask, Deny, PolicyCall, PolicyDecision
from roomkit.policy.ruling import rule_call
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

BOB = {"to": "bob", "amount": 5}


class Fixed:
    """Decides every call the same way, and keeps what it was asked."""

    def __init__(self, decision: PolicyDecision, *, shadow: bool = False) -> None:
        self.decision = decision
        self.shadow = shadow
        self.name = "fixed"
        self.calls: list[PolicyCall] = []

    async def decide(self, call: PolicyCall) -> PolicyDecision:
        self.calls.append(call)
        return self.decision


KYC = Role(["dave"])


def human(policy: Any, approvals: Any = None) -> HumanInputToolHandler:
    return HumanInputToolHandler({"Ask"}, policy=policy, approvals=approvals)


async def test_allow_runs_the_call_unasked_and_records_why(turn: Any) -> None:
    policy = Fixed(Allow("small"))
    done = await turn(human(policy, {"pay": Approval(approvers="carol")}), BOB)
    assert done.paid == [BOB]
    assert done.asked == []
    assert done.read == ("paid bob", False)
    types = await done.types()
    assert types[:2] == ["created", "policy_decided"]
    assert types[-1] == "executed"
    entry = await done.decided()
    assert (entry["decision"], entry["enforced"], entry["automatic"]) == ("allow", True, True)
    assert (entry["policy"], entry["reason"], entry["actor"]) == ("fixed", "small", "policy:fixed")
    (call,) = policy.calls
    assert (call.tool, dict(call.arguments), call.actor, call.room) == ("pay", BOB, "alice", "r1")


async def test_deny_refuses_and_the_model_reads_the_reason(turn: Any) -> None:
    done = await turn(human(Fixed(Deny("over the limit"))), BOB)
    assert done.paid == []
    assert done.asked == []
    content, is_error = done.read
    assert is_error
    assert json.loads(content)["error"] == "over the limit"
    assert (await done.decided())["decision"] == "deny"
    assert "executed" not in await done.types()


async def test_ask_holds_the_call_for_the_approvers_it_names(turn: Any) -> None:
    rule = Approval(approvers="carol", timeout=60)
    done = await turn(
        human(Fixed(Ask(approvers=["dave"])), {"pay": rule}), BOB, answer=approve(), by="dave"
    )
    (event,) = done.asked
    assert event.approvers == ("dave",)
    assert done.paid == [BOB]
    types = await done.types()
    assert types[:2] == ["created", "policy_decided"]
    assert "decided" in types
    assert types[-1] == "executed"


async def test_an_ask_naming_a_group_the_directory_lacks_asks_the_others(turn: Any) -> None:
    """A request for a role nobody has is refused: the ask fails the policy (not the turn),
    and the approvers it names that the directory has are asked."""
    handler = HumanInputHandler(directory=Directory({"dave": Person()}, roles={"kyc": KYC}))
    asking = Fixed(Ask(approvers=["role:kcy", "dave"]))
    tools = HumanInputToolHandler({"Ask"}, handler=handler, policy=asking)
    done = await turn(tools, BOB, answer=approve(), by="dave")
    (event,) = done.asked
    assert event.approvers == ("dave",)
    assert done.paid == [BOB]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)
    assert "no role 'kcy'" in entry["reason"]


async def test_ask_without_terms_takes_the_static_rules(turn: Any) -> None:
    rule = Approval(approvers="carol")
    done = await turn(human(Fixed(Ask()), {"pay": rule}), BOB, answer=approve(), by="carol")
    (event,) = done.asked
    assert event.approvers == ("carol",)
    assert done.paid == [BOB]


async def test_ask_without_a_rule_asks_the_default_approver(turn: Any) -> None:
    done = await turn(human(Fixed(Ask())), BOB, answer=approve(), by="alice", sender="alice")
    (event,) = done.asked
    assert event.approvers == ("alice",)
    assert done.paid == [BOB]


async def test_abstain_leaves_the_static_rule_in_charge(turn: Any) -> None:
    rule = Approval(approvers="carol")
    done = await turn(human(Fixed(Abstain()), {"pay": rule}), BOB, answer=approve(), by="carol")
    (event,) = done.asked
    assert event.approvers == ("carol",)
    assert (await done.decided())["decision"] == "abstain"


async def test_abstain_without_a_rule_runs_the_call_as_today(turn: Any) -> None:
    done = await turn(human(Fixed(Abstain())), BOB)
    assert done.paid == [BOB]
    assert done.asked == []
    assert (await done.decided())["decision"] == "abstain"


async def test_a_shadow_deny_is_recorded_and_the_call_is_held_as_today(turn: Any) -> None:
    rule = Approval(approvers="carol")
    policy = Fixed(Deny("would refuse"), shadow=True)
    done = await turn(human(policy, {"pay": rule}), BOB, answer=approve(), by="carol")
    assert done.paid == [BOB]
    assert len(done.asked) == 1
    entry = await done.decided()
    assert (entry["decision"], entry["enforced"]) == ("deny", False)


@pytest.mark.parametrize(
    "reason", ["quoted: " + "m" * 70_000, "caf\ud800", 123], ids=["long", "surrogate", "number"]
)
async def test_a_reason_no_history_could_keep_is_cut_and_changes_nothing(
    turn: Any, reason: Any
) -> None:
    """A policy's reason may quote the model's arguments (a 70 kB memo): kept cut and
    encodable, it never fails the turn, in shadow mode or enforced."""
    rule = Approval(approvers="carol")
    shadow = await turn(
        human(Fixed(Deny(reason), shadow=True), {"pay": rule}), BOB, answer=approve(), by="carol"
    )
    assert shadow.paid == [BOB]
    kept = (await shadow.decided())["reason"]
    assert len(kept) <= 10_000
    kept.encode("utf-8")
    enforced = await turn(human(Fixed(Deny(reason))), BOB)
    assert enforced.paid == []
    assert len(enforced.read[0]) < 11_000


@pytest.mark.parametrize("handler", ["memory", "sqlite"], indirect=True)
@pytest.mark.parametrize("reason", ["拒否" * 5000, '"' * 10_000, "\x01" * 10_000])
async def test_a_long_refusal_escaped_in_the_history_is_cut_to_fit(
    turn: Any, handler: HumanInputHandler, reason: str
) -> None:
    """A reason JSON writes as escapes (twice over in the ``decided`` entry) is cut until
    the entry fits: the call is refused and its request settled, never left pending."""
    done = await turn(
        HumanInputToolHandler({"Ask"}, handler=handler, policy=Fixed(Deny(reason))), BOB
    )
    assert done.paid == []
    content, is_error = done.read
    assert is_error
    assert json.loads(content)["error"].startswith(reason[:100])
    assert await handler.list_pending() == []
    (history,) = await done.histories()
    (decided,) = [entry for entry in history if entry["type"] == "decided"]
    assert decided["reason"] == content


async def test_a_shadow_allow_of_an_unheld_tool_runs_it_as_today(turn: Any) -> None:
    done = await turn(human(Fixed(Allow(), shadow=True)), BOB)
    assert done.paid == [BOB]
    entry = await done.decided()
    assert (entry["decision"], entry["enforced"]) == ("allow", False)


async def test_an_approvals_own_policy_wins_over_the_handlers(turn: Any) -> None:
    rule = Approval(policy=Fixed(Deny("not this tool")))
    done = await turn(human(Fixed(Allow()), {"pay": rule}), BOB)
    assert done.paid == []
    assert "not this tool" in done.read[0]


class Broken:
    name = "broken"

    def __init__(self, on_error: str = "ask") -> None:
        self.on_error = on_error

    def decide(self, call: PolicyCall) -> PolicyDecision:
        raise ConnectionError("the engine is down")


async def test_a_failing_policy_asks_a_person_by_default(turn: Any) -> None:
    done = await turn(human(Broken()), BOB, answer=approve(), by="alice")
    assert len(done.asked) == 1
    assert done.paid == [BOB]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)
    assert "the engine is down" in entry["reason"]


async def test_a_failing_policy_refuses_with_on_error_deny(turn: Any) -> None:
    done = await turn(human(Broken("deny")), BOB)
    assert done.paid == []
    assert done.asked == []
    assert done.read[1]
    assert (await done.decided())["decision"] == "deny"


class Stuck:
    """A ``decide`` that never finishes (a service called with no timeout, say)."""

    name = "stuck"
    timeout = 0.01

    def __init__(self, on_error: str = "ask") -> None:
        self.on_error = on_error

    async def decide(self, call: PolicyCall) -> PolicyDecision:
        await asyncio.Event().wait()
        raise AssertionError("never set")


async def test_a_decide_that_never_finishes_asks_a_person(turn: Any) -> None:
    done = await turn(human(Stuck()), BOB, answer=approve(), by="alice")
    assert len(done.asked) == 1
    assert done.paid == [BOB]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("ask", True)
    assert "no decision within 0.01 s" in entry["reason"]


async def test_a_decide_that_never_finishes_refuses_with_on_error_deny(turn: Any) -> None:
    done = await turn(human(Stuck("deny")), BOB)
    assert (done.paid, done.asked) == ([], [])
    assert "no decision within" in json.loads(done.read[0])["error"]


class Cancelled:
    """A ``decide`` awaiting a future of its own that something else cancelled."""

    name = "cancelled"

    def __init__(self, on_error: str = "ask", *, plain: bool = False) -> None:
        self.on_error = on_error
        self.plain = plain

    def decide(self, call: PolicyCall) -> Any:
        if self.plain:
            raise asyncio.CancelledError
        return self._decided()

    async def _decided(self) -> PolicyDecision:
        shared = asyncio.get_running_loop().create_future()
        shared.cancel()
        return await shared  # type: ignore[no-any-return]


@pytest.mark.parametrize("plain", [False, True], ids=["async", "plain"])
async def test_a_decide_raising_cancelled_error_refuses_with_on_error_deny(
    turn: Any, plain: bool
) -> None:
    """A ``CancelledError`` of the policy's own, the turn not cancelled, is its failure:
    the model reads the refusal, and the history records it."""
    done = await turn(human(Cancelled("deny", plain=plain)), BOB)
    assert (done.paid, done.asked) == ([], [])
    assert "CancelledError" in json.loads(done.read[0])["error"]
    entry = await done.decided()
    assert (entry["decision"], entry["error"]) == ("deny", True)


async def test_a_decide_raising_cancelled_error_asks_a_person_by_default(turn: Any) -> None:
    done = await turn(human(Cancelled()), BOB, answer=approve(), by="alice")
    assert len(done.asked) == 1
    assert done.paid == [BOB]


async def test_a_turn_cancelled_while_the_policy_decides_is_cancelled() -> None:
    """The cancellation of the call's own task is not taken for the policy's failure."""
    started = asyncio.Event()

    class Waiting:
        async def decide(self, call: PolicyCall) -> PolicyDecision:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("never set")

    call = PolicyCall("pay", BOB, "d", "alice")
    task = asyncio.create_task(rule_call(Waiting(), None, call))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_result_of_no_known_kind_abstains(turn: Any) -> None:
    class Odd:
        def decide(self, call: PolicyCall) -> Any:
            return "yes"

    done = await turn(human(Odd()), BOB)
    assert done.paid == [BOB]
    assert (await done.decided())["decision"] == "abstain"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("rule", [None, {"pay": Approval(approvers="carol")}])
async def test_a_number_json_cannot_carry_is_refused_to_the_model(
    number: float, rule: Any, turn: Any
) -> None:
    """The model reads what is wrong and the turn goes on; nobody is asked or paid."""
    policy = Fixed(Allow())
    done = await turn(human(policy, rule), {"to": "bob", "amount": number})
    content, is_error = done.read
    assert is_error
    assert f"not {number!r} at 'amount'" in json.loads(content)["error"]
    assert (done.paid, done.asked, policy.calls) == ([], [], [])
