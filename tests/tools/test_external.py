"""External tool handlers: default reports, the detail rule, and the policy handler."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from roomkit.models.enums import ChannelType
from roomkit.models.tool_call import ToolCallEvent
from roomkit.tools.context import tool_turn_context
from roomkit.tools.external import (
    BeforeToolDecision,
    BeforeToolHook,
    ExternalToolHandler,
    PolicyExternalToolHandler,
    ToolDecision,
    call_on_tool_refused,
)
from roomkit.tools.policy import ToolPolicy, policy_refusal

LOGGER = "roomkit.tools.external"


class Wired(ExternalToolHandler):
    """The kit's side of an external handler, for handlers built on it: the channel id and
    the hooks the kit sets when the channel registers, and the hook calls subclasses make."""

    def wire(
        self, channel_id: str = "agent", *, before: BeforeToolHook | None = None
    ) -> list[ToolCallEvent]:
        """Wire this handler as the kit would, collecting its ON_TOOL_CALL reports."""
        reports: list[ToolCallEvent] = []

        async def on_tool(event: ToolCallEvent) -> None:
            reports.append(event)

        self._channel_id = channel_id
        self._on_tool_hook = on_tool
        if before is not None:
            self._before_tool_hook = before
        return reports

    async def before_hook(self, name: str, args: dict[str, Any], **call: Any) -> BeforeToolDecision:
        """Run BEFORE_TOOL_USE as a subclass does before it decides a call."""
        return await self._fire_before_hook(name, args, **call)


class Approving(Wired):
    """Approves everything and keeps the default reports."""

    async def process_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], **kwargs: Any
    ) -> ToolDecision:
        return ToolDecision(approved=True)

    async def on_tool_result(
        self, tool_name: str, tool_input: dict[str, Any], result: Any, **kwargs: Any
    ) -> None:
        return None


class Policy(Wired, PolicyExternalToolHandler):
    """The policy handler, wired by the test as the kit wires it."""


def gate(decision: BeforeToolDecision, calls: list[tuple[Any, ...]]) -> Any:
    async def before(
        name: str, args: dict[str, Any], call_id: str, room_id: str | None
    ) -> BeforeToolDecision:
        calls.append((name, args, call_id, room_id))
        return decision

    return before


# -- default reports ----------------------------------------------------------------------


async def test_a_cancelled_call_is_reported_once_as_cancelled() -> None:
    handler = Approving()
    reports = handler.wire()

    await handler.on_tool_cancelled("Ask", {"q": "?"}, tool_call_id="tc1", room_id="room1")

    [event] = reports
    assert (event.channel_id, event.channel_type) == ("agent", ChannelType.AI)
    assert (event.name, event.arguments, event.tool_call_id, event.room_id) == (
        "Ask",
        {"q": "?"},
        "tc1",
        "room1",
    )
    assert json.loads(str(event.result)) == {
        "error": "Tool call cancelled",
        "tool": "Ask",
        "hint": "The turn ended before its result.",
    }
    assert (event.is_error, event.cancelled, event.refused) == (True, True, False)


async def test_a_refused_call_is_reported_with_its_reason_and_detail() -> None:
    handler = Approving()
    reports = handler.wire()

    await handler.on_tool_refused(
        "Ask", {}, '{"error": "no"}', tool_call_id="tc2", room_id="room1", detail="gate: crashed"
    )

    [event] = reports
    assert event.result == '{"error": "no"}'
    assert (event.is_error, event.refused, event.cancelled) == (True, True, False)
    assert event.error_detail == "gate: crashed"
    assert event.tool_call_id == "tc2"


async def test_a_report_names_the_turns_actor() -> None:
    handler = Approving()
    reports = handler.wire()

    with tool_turn_context(room_id="room1", actor_id="alice"):
        await handler.on_tool_refused("Ask", {}, "no", room_id="room1")

    assert reports[0].actor_id == "alice"


async def test_an_unwired_handler_allows_and_reports_nowhere() -> None:
    handler = Approving()

    decision = await handler.before_hook("Ask", {}, tool_call_id="tc1", room_id="r")
    await handler.on_tool_cancelled("Ask", {})
    await handler.start()
    await handler.stop()

    assert decision
    assert decision == BeforeToolDecision(allowed=True)
    assert handler.channel_id == ""


async def test_the_before_hook_is_called_with_the_call_positionally() -> None:
    handler = Approving()
    calls: list[tuple[Any, ...]] = []
    handler.wire(before=gate(BeforeToolDecision(allowed=False, reason="no"), calls))

    decision = await handler.before_hook("Ask", {"q": 1}, tool_call_id="tc1", room_id="r")

    assert calls == [("Ask", {"q": 1}, "tc1", "r")]
    assert not decision
    assert decision.reason == "no"


# -- passing detail to overrides ----------------------------------------------------------


async def test_detail_reaches_an_override_that_takes_kwargs() -> None:
    received: list[dict[str, Any]] = []

    class Modern(Approving):
        async def on_tool_refused(
            self, tool_name: str, tool_input: dict[str, Any], reason: str, **kwargs: Any
        ) -> None:
            received.append(kwargs)

    await call_on_tool_refused(
        Modern(), "Ask", {}, "no", tool_call_id="tc1", room_id="r", detail="x: failed"
    )

    assert received == [{"tool_call_id": "tc1", "room_id": "r", "detail": "x: failed"}]


async def test_detail_reaches_an_override_that_names_it() -> None:
    received: list[str | None] = []

    class Named(Approving):
        async def on_tool_refused(
            self,
            tool_name: str,
            tool_input: dict[str, Any],
            reason: str,
            *,
            tool_call_id: str = "",
            job_id: str | None = None,
            room_id: str | None = None,
            detail: str | None = None,
        ) -> None:
            received.append(detail)

    await call_on_tool_refused(
        Named(), "Ask", {}, "no", tool_call_id="tc1", room_id="r", detail="x: failed"
    )

    assert received == ["x: failed"]


async def test_no_detail_is_passed_when_there_is_none() -> None:
    received: list[dict[str, Any]] = []

    class Modern(Approving):
        async def on_tool_refused(
            self, tool_name: str, tool_input: dict[str, Any], reason: str, **kwargs: Any
        ) -> None:
            received.append(kwargs)

    await call_on_tool_refused(Modern(), "Ask", {}, "no", tool_call_id="tc1", room_id="r")

    assert received == [{"tool_call_id": "tc1", "room_id": "r"}]


async def test_an_old_override_keeps_working_and_warns_once_per_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []

    class Legacy(Approving):
        async def on_tool_refused(  # type: ignore[override]
            self,
            tool_name: str,
            tool_input: dict[str, Any],
            reason: str,
            *,
            tool_call_id: str = "",
            room_id: str | None = None,
        ) -> None:
            received.append(reason)

    class OtherLegacy(Legacy):
        pass

    for handler in (Legacy(), Legacy(), OtherLegacy()):
        await call_on_tool_refused(
            handler, "Ask", {}, "no", tool_call_id="tc1", room_id="r", detail="x: failed"
        )

    assert received == ["no", "no", "no"]
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert warnings == [
        "Legacy.on_tool_refused takes no 'detail': accept **kwargs to receive it",
        "OtherLegacy.on_tool_refused takes no 'detail': accept **kwargs to receive it",
    ]


async def test_an_old_override_logs_nothing_when_there_is_no_detail_to_drop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []

    class Legacy(Approving):
        async def on_tool_refused(  # type: ignore[override]
            self,
            tool_name: str,
            tool_input: dict[str, Any],
            reason: str,
            *,
            tool_call_id: str = "",
            room_id: str | None = None,
        ) -> None:
            received.append(reason)

    await call_on_tool_refused(Legacy(), "Ask", {}, "no", tool_call_id="tc1", room_id="r")

    assert received == ["no"]
    assert [r for r in caplog.records if r.name == LOGGER] == []


async def test_the_default_refusal_report_receives_the_detail() -> None:
    handler = Approving()
    reports = handler.wire()

    await call_on_tool_refused(handler, "Ask", {}, "no", tool_call_id="t", room_id="r", detail="d")

    assert reports[0].error_detail == "d"


# -- the policy handler -------------------------------------------------------------------


async def test_a_policy_denial_refuses_without_asking_the_hooks() -> None:
    handler = Policy(ToolPolicy(deny=frozenset({"Bash"})))
    calls: list[tuple[Any, ...]] = []
    handler.wire(before=gate(BeforeToolDecision(allowed=True), calls))

    decision = await handler.process_tool_call("Bash", {"cmd": "ls"}, tool_call_id="tc1")

    assert decision == ToolDecision(
        approved=False, reason="Tool 'Bash' is not permitted by policy."
    )
    assert calls == []


async def test_a_hook_block_refuses_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    handler = Policy()
    calls: list[tuple[Any, ...]] = []
    handler.wire(before=gate(BeforeToolDecision(allowed=False, reason="rate limited"), calls))

    decision = await handler.process_tool_call("Ask", {}, tool_call_id="tc1", room_id="r")

    assert decision == ToolDecision(approved=False, reason="rate limited")
    assert calls == [("Ask", {}, "tc1", "r")]
    assert [r for r in caplog.records if r.name == LOGGER] == []


async def test_a_hook_that_failed_closed_refuses_with_the_default_text_and_detail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = Policy()
    failed = BeforeToolDecision(allowed=False, detail="boom: hook crashed")
    handler.wire(before=gate(failed, []))

    decision = await handler.process_tool_call("Ask", {})

    assert decision.approved is False
    assert decision.reason == "Tool 'Ask' denied by pre-execution hook."
    assert decision.detail == "boom: hook crashed"
    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.WARNING
    assert "boom: hook crashed" in record.getMessage()


async def test_a_hook_rewrite_becomes_the_modified_input() -> None:
    handler = Policy(ToolPolicy(allow=frozenset({"Ask"})))
    rewrite = BeforeToolDecision(allowed=True, arguments={"q": "safe"})
    handler.wire(before=gate(rewrite, []))

    decision = await handler.process_tool_call("Ask", {"q": "raw"})

    assert decision == ToolDecision(approved=True, modified_input={"q": "safe"})


async def test_an_unwired_policy_handler_approves_permitted_calls() -> None:
    decision = await Policy().process_tool_call("Anything", {"a": 1})

    assert decision == ToolDecision(approved=True)


async def test_the_policy_handler_forwards_results_to_on_tool_call() -> None:
    handler = Policy()
    reports = handler.wire("sandbox")

    await handler.on_tool_result(
        "Bash",
        {"cmd": "ls"},
        "boom",
        is_error=True,
        tool_call_id="tc9",
        room_id="r",
        refused_but_ran=True,
        error_detail="OSError: gone",
    )

    [event] = reports
    assert (event.channel_id, event.name, event.result, event.room_id) == (
        "sandbox",
        "Bash",
        "boom",
        "r",
    )
    assert (event.is_error, event.refused, event.cancelled) == (True, False, False)
    assert (event.refused_but_ran, event.error_detail) == (True, "OSError: gone")


# -- the policy ---------------------------------------------------------------------------


def test_deny_wins_over_allow() -> None:
    policy = ToolPolicy(allow=frozenset({"Ask", "Bash"}), deny=frozenset({"Bash"}))

    assert policy.permits("Ask")
    assert not policy.permits("Bash")
    assert not policy.permits("Other")


def test_no_allow_list_permits_every_name_not_denied() -> None:
    assert ToolPolicy().permits("Anything")
    assert not ToolPolicy(deny=frozenset({"Bash"})).permits("Bash")


def test_a_policy_freezes_the_names_it_is_given() -> None:
    policy = ToolPolicy(allow={"Ask"}, deny=["Bash"])  # type: ignore[arg-type]

    assert policy.allow == frozenset({"Ask"})
    assert policy.deny == frozenset({"Bash"})
    with pytest.raises(TypeError, match="collection of names"):
        ToolPolicy(deny="Bash")  # type: ignore[arg-type]


def test_policy_refusal_names_the_tool() -> None:
    assert policy_refusal("Bash") == "Tool 'Bash' is not permitted by policy."
