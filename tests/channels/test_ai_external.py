"""Calls a provider runs itself: reported as served, or decided by the ExternalToolHandler.

A round whose every call is the provider's ends the turn: the provider reads those results
itself, so these tests read what each call came to in its ON_TOOL_CALL report.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from ai_harness import LOOKUP, Build, Harness, ask, round_of, tool_call

from roomkit import HookResult, HookTrigger, ToolDecision
from roomkit.providers.ai.base import AIToolCall, ServedCall
from roomkit.tools import ExternalToolHandler, PolicyExternalToolHandler, ToolPolicy

BEFORE = HookTrigger.BEFORE_TOOL_USE
INPUT = HookTrigger.ON_USER_INPUT_REQUIRED

Decide = Callable[[str, dict[str, Any]], Awaitable[ToolDecision]]


def error(message: str) -> str:
    return json.dumps({"error": message})


def reported(h: Harness, *call_ids: str) -> list[tuple[str, bool]]:
    """What each call came to (result, is_error), as its one ON_TOOL_CALL report says."""
    return [(str(h.report(call_id).result), h.report(call_id).is_error) for call_id in call_ids]


async def approve(name: str, arguments: dict[str, Any]) -> ToolDecision:
    return ToolDecision(approved=True, result=f"ran {name}")


async def let_run(name: str, arguments: dict[str, Any]) -> ToolDecision:
    """Approve the call for the provider to run."""
    return ToolDecision(approved=True)


class Sandbox(ExternalToolHandler):
    """An external handler that records what it is asked and told."""

    def __init__(self, decide: Decide = approve) -> None:
        self.decide = decide
        self.asked: list[tuple[str, dict[str, Any], str, str | None]] = []
        self.told: list[tuple[str, str, Any]] = []

    async def process_tool_call(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        tool_call_id: str = "",
        room_id: str | None = None,
        **kwargs: Any,
    ) -> ToolDecision:
        self.asked.append((tool_name, tool_input, tool_call_id, room_id))
        return await self.decide(tool_name, tool_input)

    async def on_tool_result(
        self, tool_name: str, tool_input: dict[str, Any], result: Any, **kwargs: Any
    ) -> None:
        self.told.append(("result", tool_name, result))
        await self._fire_on_tool_hook(
            tool_name,
            tool_input,
            result,
            is_error=kwargs["is_error"],
            tool_call_id=kwargs["tool_call_id"],
            room_id=kwargs["room_id"],
        )

    async def on_tool_refused(
        self, tool_name: str, tool_input: dict[str, Any], reason: str, **kwargs: Any
    ) -> None:
        self.told.append(("refused", tool_name, (reason, kwargs.get("detail"))))
        await super().on_tool_refused(tool_name, tool_input, reason, **kwargs)

    async def on_tool_cancelled(
        self, tool_name: str, tool_input: dict[str, Any], **kwargs: Any
    ) -> None:
        self.told.append(("cancelled", tool_name, kwargs.get("tool_call_id")))
        await super().on_tool_cancelled(tool_name, tool_input, **kwargs)


def served_call(result: str, *, is_error: bool = False, id: str = "tc-1") -> AIToolCall:
    return AIToolCall(
        id=id,
        name="Bash",
        arguments={"cmd": "ls"},
        served=ServedCall(result=result, is_error=is_error),
    )


@pytest.mark.parametrize("is_error", [False, True])
async def test_a_call_the_provider_ran_is_reported_never_gated(
    build: Build, is_error: bool
) -> None:
    sandbox = Sandbox()
    h = await build(
        round_of(served_call("a.txt", is_error=is_error)), external_tool_handler=sandbox
    )
    gated: list[Any] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> HookResult:
        gated.append(event)
        return HookResult.block("never")

    await h.say()

    assert gated == []
    assert sandbox.asked == []
    assert sandbox.told == [("result", "Bash", "a.txt")]
    assert reported(h, "tc-1") == [("a.txt", is_error)]
    assert h.report().outcome == ("failed" if is_error else "served")


async def test_a_call_the_provider_ran_is_reported_by_the_channel_without_a_handler(
    build: Build,
) -> None:
    h = await build(round_of(served_call("a.txt", is_error=True)))

    await h.say()

    assert reported(h, "tc-1") == [("a.txt", True)]
    assert h.report().outcome == "failed"
    assert len(h.provider.calls) == 1


async def test_the_channel_reports_a_ran_call_whose_on_tool_result_raises(build: Build) -> None:
    h = await build(round_of(served_call("a.txt")), external_tool_handler=FragileSandbox())

    await h.say()

    assert reported(h, "tc-1") == [("a.txt", False)]


async def test_a_round_of_provider_calls_ends_the_turn(build: Build) -> None:
    """The provider ran one call and runs the other: no model round follows, its text is the
    reply."""
    sandbox = Sandbox(let_run)
    ran = served_call("a.txt", id="tc-1")
    response = round_of(ran, tool_call("Bash", {"cmd": "make"}, id="tc-2"))
    h = await build(
        response.model_copy(update={"content": "Building."}), external_tool_handler=sandbox
    )

    result = await h.say()

    assert len(h.provider.calls) == 1
    assert [reply.content.body for reply in result.responses] == ["Building."]
    assert sandbox.told == [("result", "Bash", "a.txt"), ("result", "Bash", "")]
    assert reported(h, "tc-1", "tc-2") == [("a.txt", False), ("", False)]


async def test_a_round_with_a_call_of_the_channels_own_goes_on(build: Build) -> None:
    """The model reads every result of the round, and nothing for a call the provider runs."""
    sandbox = Sandbox(let_run)
    h = await build(
        round_of(tool_call("lookup", id="tc-1"), tool_call("Bash", id="tc-2")),
        tools=[LOOKUP],
        external_tool_handler=sandbox,
    )

    async def lookup(name: str, args: dict[str, Any]) -> str:
        return "looked up"

    h.ai.tool_handler = lookup

    result = await h.say()

    assert h.read() == [("looked up", False), ("", False)]
    assert [reply.content.body for reply in result.responses] == ["Done."]


async def test_a_result_key_in_the_arguments_is_just_an_argument(build: Build) -> None:
    sandbox = Sandbox()
    arguments = {"key": "k", "_result": "pretend it ran"}
    h = await build(
        round_of(tool_call("lookup", arguments)), tools=[LOOKUP], external_tool_handler=sandbox
    )
    gated: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []

    async def lookup(name: str, args: dict[str, Any]) -> str:
        received.append(args)
        return "looked up"

    h.ai.tool_handler = lookup

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        gated.append(event.arguments)

    await h.say()

    assert gated == [arguments]
    assert received == [arguments]
    assert h.read() == [("looked up", False)]
    assert sandbox.asked == []


async def test_a_call_the_channel_does_not_serve_goes_to_the_external_handler(
    build: Build,
) -> None:
    sandbox = Sandbox()
    h = await build(
        round_of(tool_call("Bash", {"cmd": "ls"}, id="tc-7")), external_tool_handler=sandbox
    )
    gated: list[Any] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        gated.append(event)

    await h.say()

    assert sandbox.asked == [("Bash", {"cmd": "ls"}, "tc-7", "r1")]
    assert sandbox.told == [("result", "Bash", "ran Bash")]
    assert gated == []
    assert len(h.provider.calls) == 1
    report = h.report("tc-7")
    assert (report.outcome, report.result, report.channel_id) == ("served", "ran Bash", "agent")


async def test_a_human_tool_the_channel_offers_never_reaches_the_external_handler(
    build: Build,
) -> None:
    sandbox = Sandbox()
    h = await build(round_of(ask()), external_tool_handler=sandbox)
    h.answer_from_hook("blue")

    await h.say()

    assert sandbox.asked == []
    assert h.read() == [("blue", False)]


async def test_a_channel_served_name_is_gated_even_without_a_tool_handler(build: Build) -> None:
    sandbox = Sandbox()
    h = await build(
        round_of(tool_call("lookup")), tools=[LOOKUP], human=None, external_tool_handler=sandbox
    )

    @h.kit.hook(BEFORE)
    async def deny(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("not in this room")

    await h.say()

    assert h.read() == [(error("not in this room"), True)]
    assert h.report().refused
    assert sandbox.asked == []


async def test_a_raising_decision_fails_the_call_and_the_handler_is_not_told(
    build: Build,
) -> None:
    async def crash(name: str, arguments: dict[str, Any]) -> ToolDecision:
        raise ConnectionError("sandbox unreachable")

    sandbox = Sandbox(crash)
    h = await build(round_of(tool_call("Bash")), external_tool_handler=sandbox)

    await h.say()

    assert reported(h, "tc-1") == [(error("Tool 'Bash' failed (ConnectionError)"), True)]
    report = h.report()
    assert (report.outcome, report.error_detail) == (
        "failed",
        "ConnectionError: sandbox unreachable",
    )
    assert sandbox.told == []


async def test_a_refusal_is_told_to_on_tool_refused_with_its_detail(build: Build) -> None:
    async def refuse(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return ToolDecision(approved=False, reason="not allowed", detail="policy: broken")

    sandbox = Sandbox(refuse)
    h = await build(round_of(tool_call("Bash")), external_tool_handler=sandbox)

    await h.say()

    body = error("not allowed")
    assert sandbox.told == [("refused", "Bash", (body, "policy: broken"))]
    report = h.report()
    assert (report.outcome, report.result, report.error_detail) == (
        "refused",
        body,
        "policy: broken",
    )


async def test_a_refusal_reads_a_default_reason_when_none_is_given(build: Build) -> None:
    async def refuse(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return ToolDecision(approved=False)

    h = await build(round_of(tool_call("Bash")), external_tool_handler=Sandbox(refuse))

    await h.say()

    assert reported(h, "tc-1") == [(error("Tool 'Bash' was denied"), True)]


class OldStyleSandbox(Sandbox):
    """An on_tool_refused override written before ``detail`` existed."""

    async def on_tool_refused(  # type: ignore[override]
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        reason: str,
        *,
        tool_call_id: str = "",
        job_id: str | None = None,
        room_id: str | None = None,
    ) -> None:
        self.told.append(("refused", tool_name, reason))


async def test_a_detail_is_left_out_for_an_override_that_does_not_take_it(
    build: Build, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuse(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return ToolDecision(approved=False, reason="no", detail="hook: boom")

    sandbox = OldStyleSandbox(refuse)
    h = await build(round_of(tool_call("Bash")), external_tool_handler=sandbox)

    with caplog.at_level(logging.WARNING, logger="roomkit.tools.external"):
        await h.say()

    assert sandbox.told == [("refused", "Bash", error("no"))]
    assert "OldStyleSandbox.on_tool_refused takes no 'detail'" in caplog.text


async def test_an_approval_with_a_result_is_served_and_told_to_on_tool_result(
    build: Build,
) -> None:
    async def answer(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return ToolDecision(approved=True, result="42", modified_input={"cmd": "echo 42"})

    sandbox = Sandbox(answer)
    h = await build(round_of(tool_call("Bash", {"cmd": "rm -rf /"})), external_tool_handler=sandbox)

    await h.say()

    assert reported(h, "tc-1") == [("42", False)]
    assert sandbox.told == [("result", "Bash", "42")]
    report = h.report()
    assert (report.outcome, report.arguments) == ("served", {"cmd": "echo 42"})


async def test_a_turn_cut_during_the_decision_tells_on_tool_cancelled(build: Build) -> None:
    deciding, never = asyncio.Event(), asyncio.Event()

    async def slow(name: str, arguments: dict[str, Any]) -> ToolDecision:
        deciding.set()
        await never.wait()
        return ToolDecision(approved=True)  # pragma: no cover - never reached

    sandbox = Sandbox(slow)
    h = await build(round_of(tool_call("Bash", id="tc-3")), external_tool_handler=sandbox)

    turn = asyncio.create_task(h.say())
    await deciding.wait()
    await h.ai.close()
    result = await turn

    assert result.responses == ()
    assert sandbox.told == [("cancelled", "Bash", "tc-3")]
    report = h.report("tc-3")
    assert (report.cancelled, report.is_error) == (True, True)


async def test_the_calls_a_turn_stops_at_its_round_limit_are_told_or_reported(
    build: Build,
) -> None:
    """At ``max_tool_rounds`` the response's calls run no more: one the provider ran is
    reported as it ran, and one the handler was never asked goes to ``on_tool_cancelled``."""
    sandbox = Sandbox()
    h = await build(
        round_of(tool_call("lookup")),
        round_of(served_call("42", id="tc-2"), tool_call("Bash", id="tc-3")),
        tools=[LOOKUP],
        human=None,
        max_tool_rounds=1,
        external_tool_handler=sandbox,
    )

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "again"

    h.ai.tool_handler = lookup

    await h.say()

    assert sandbox.asked == []
    assert sandbox.told == [("result", "Bash", "42"), ("cancelled", "Bash", "tc-3")]
    assert (h.report("tc-2").outcome, h.report("tc-3").outcome) == ("served", "cancelled")


async def test_a_policy_handler_runs_before_tool_use_through_the_channel(build: Build) -> None:
    sandbox = PolicyExternalToolHandler()
    h = await build(
        round_of(
            tool_call("Bash", {"cmd": "ls"}, id="tc-1"), tool_call("Rm", {"p": "/"}, id="tc-2")
        ),
        external_tool_handler=sandbox,
    )
    gated: list[tuple[str, str, str | None]] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> HookResult:
        gated.append((event.name, event.room_id, event.actor_id))
        if event.name == "Rm":
            return HookResult.block("never delete")
        return HookResult.allow(metadata={"arguments": {"cmd": "ls -la"}})

    await h.say()

    assert sorted(gated) == [("Bash", "r1", "alice"), ("Rm", "r1", "alice")]
    assert reported(h, "tc-1", "tc-2") == [("", False), (error("never delete"), True)]
    assert h.report("tc-1").arguments == {"cmd": "ls -la"}
    assert h.report("tc-2").refused
    assert sandbox.channel_id == "agent"


async def test_a_policy_handler_refuses_when_a_hook_fails_closed(build: Build) -> None:
    h = await build(round_of(tool_call("Bash")), external_tool_handler=PolicyExternalToolHandler())

    @h.kit.hook(BEFORE)
    async def broken(event: Any, ctx: Any) -> HookResult:
        raise RuntimeError("boom")

    await h.say()

    assert reported(h, "tc-1") == [(error("Tool 'Bash' denied by pre-execution hook."), True)]
    report = h.report()
    assert (report.refused, report.error_detail) == (True, "broken: boom")


async def test_a_policy_refusal_asks_no_hook(build: Build) -> None:
    sandbox = PolicyExternalToolHandler(ToolPolicy(deny=frozenset({"Bash"})))
    h = await build(round_of(tool_call("Bash")), external_tool_handler=sandbox)
    gated: list[Any] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        gated.append(event)

    await h.say()

    assert reported(h, "tc-1") == [(error("Tool 'Bash' is not permitted by policy."), True)]
    assert gated == []


class FragileSandbox(Sandbox):
    """A handler whose reports raise: the channel reports the calls itself."""

    async def on_tool_result(
        self, tool_name: str, tool_input: dict[str, Any], result: Any, **kwargs: Any
    ) -> None:
        raise RuntimeError("report sink down")

    async def on_tool_refused(
        self, tool_name: str, tool_input: dict[str, Any], reason: str, **kwargs: Any
    ) -> None:
        raise RuntimeError("report sink down")

    async def on_tool_cancelled(
        self, tool_name: str, tool_input: dict[str, Any], **kwargs: Any
    ) -> None:
        raise RuntimeError("report sink down")


async def test_the_channel_reports_a_call_whose_handler_report_raises(build: Build) -> None:
    async def decide(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return ToolDecision(approved=name == "Ok", result="fine", reason="no")

    h = await build(
        round_of(tool_call("Ok", id="tc-1"), tool_call("No", id="tc-2")),
        external_tool_handler=FragileSandbox(decide),
    )

    await h.say()

    assert reported(h, "tc-1", "tc-2") == [("fine", False), (error("no"), True)]
    assert (h.report("tc-1").outcome, h.report("tc-2").outcome) == ("served", "refused")


class StuckSandbox(Sandbox):
    """An external handler whose ``on_tool_cancelled`` never returns."""

    async def on_tool_cancelled(
        self, tool_name: str, tool_input: dict[str, Any], **kwargs: Any
    ) -> None:
        await asyncio.Event().wait()


@pytest.mark.parametrize(
    ("handler", "logged"),
    [
        (FragileSandbox, "FragileSandbox.on_tool_cancelled failed"),
        (StuckSandbox, "StuckSandbox.on_tool_cancelled did not return within 10 s"),
    ],
    ids=["raises", "never-returns"],
)
async def test_the_channel_reports_a_cut_call_whose_on_tool_cancelled_raises_or_hangs(
    build: Build, caplog: pytest.LogCaptureFixture, handler: type[Sandbox], logged: str
) -> None:
    """The channel's close goes on (a hanging handler holds it up for 10 s at most)."""
    deciding, never = asyncio.Event(), asyncio.Event()

    async def slow(name: str, arguments: dict[str, Any]) -> ToolDecision:
        deciding.set()
        await never.wait()
        return ToolDecision(approved=True)  # pragma: no cover - never reached

    h = await build(round_of(tool_call("Bash")), external_tool_handler=handler(slow))

    turn = asyncio.create_task(h.say())
    await deciding.wait()
    with caplog.at_level(logging.WARNING, logger="roomkit"):
        await h.ai.close()
    await turn

    report = h.report()
    assert report.cancelled
    assert json.loads(str(report.result))["hint"] == "The channel closed before its result."
    assert logged in caplog.text


async def test_a_decision_that_is_not_a_tool_decision_fails_the_call(build: Build) -> None:
    async def sloppy(name: str, arguments: dict[str, Any]) -> ToolDecision:
        return True  # type: ignore[return-value]

    h = await build(round_of(tool_call("Bash")), external_tool_handler=Sandbox(sloppy))

    await h.say()

    assert reported(h, "tc-1") == [(error("Tool 'Bash' failed (TypeError)"), True)]
    assert h.report().error_detail == "TypeError: process_tool_call returned bool, not ToolDecision"


def test_one_external_handler_on_two_channels_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from roomkit import RoomKit
    from roomkit.channels.ai import AIChannel
    from roomkit.providers.ai.mock import MockAIProvider

    kit = RoomKit()
    shared = Sandbox()
    with caplog.at_level(logging.WARNING, logger="roomkit.channels.ai"):
        for name in ("a", "b"):
            kit.register_channel(
                AIChannel(name, provider=MockAIProvider(), external_tool_handler=shared)
            )

    assert "Give each channel its own handler instance" in caplog.text
    assert shared.channel_id == "b"


async def test_a_steering_stop_lets_a_pending_decision_finish(build: Build) -> None:
    from roomkit.models.steering import Cancel

    deciding, decide_now = asyncio.Event(), asyncio.Event()

    async def slow(name: str, arguments: dict[str, Any]) -> ToolDecision:
        deciding.set()
        await decide_now.wait()
        return ToolDecision(approved=True, result="ran")

    sandbox = Sandbox(slow)
    h = await build(round_of(tool_call("Bash")), external_tool_handler=sandbox)

    turn = asyncio.create_task(h.say())
    await deciding.wait()
    assert h.ai.steer(Cancel(reason="stop"), room_id="r1")
    decide_now.set()
    result = await turn

    assert sandbox.told == [("result", "Bash", "ran")]
    assert h.report().outcome == "served"
    assert len(h.provider.calls) == 1
    assert result.responses == ()


async def test_a_cut_off_call_is_refused_by_the_channel_without_asking_the_handler(
    build: Build,
) -> None:
    sandbox = Sandbox()
    partial = AIToolCall(id="tc-1", name="Bash", arguments={"cmd": "rm -"}, partial=True)
    h = await build(round_of(partial), external_tool_handler=sandbox)

    await h.say()

    [(content, is_error)] = reported(h, "tc-1")
    assert is_error
    assert "cut off" in json.loads(content)["error"]
    assert h.report().refused
    assert sandbox.asked == []
