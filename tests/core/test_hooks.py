"""HookEngine: chain order, verdicts, failures under fail-open and fail-closed, observers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pydantic
import pytest

from roomkit.core.hooks import HookEngine, HookFn
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import (
    HookExecution,
    HookResult,
    HookTrigger,
    RoomContext,
)
from roomkit.models.tool_call import ToolCallEvent

BEFORE = HookTrigger.BEFORE_TOOL_USE
ON_CALL = HookTrigger.ON_TOOL_CALL
ON_INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
CTX = RoomContext(room=None)
LOGGER = "roomkit.hooks"


@pytest.fixture
async def engine() -> AsyncIterator[HookEngine]:
    engine = HookEngine()
    yield engine
    await engine.close()


def returning(calls: list[str], name: str, result: Any = None) -> HookFn:
    """A hook that records its name (and the event it saw) and returns ``result``."""

    async def hook(event: Any, ctx: RoomContext) -> Any:
        calls.append(name)
        return result

    hook.__name__ = name
    return hook


def raising(name: str, error: Exception) -> HookFn:
    async def hook(event: Any, ctx: RoomContext) -> HookResult | None:
        raise error

    hook.__name__ = name
    return hook


def stuck(name: str, started: asyncio.Event | None = None) -> HookFn:
    """A hook that waits for an event nobody sets: only its timeout or a cancel ends it."""
    never = asyncio.Event()

    async def hook(event: Any, ctx: RoomContext) -> HookResult | None:
        if started is not None:
            started.set()
        await never.wait()
        return None

    hook.__name__ = name
    return hook


def tool_event(channel_type: ChannelType = ChannelType.AI, channel_id: str = "agent") -> Any:
    return ToolCallEvent(channel_id, channel_type, "tc1", "Ask", {"q": "?"}, None, "room1")


# -- order and verdicts -------------------------------------------------------------------


async def test_sync_hooks_run_lowest_priority_first(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, returning(calls, "late"), priority=10)
    engine.register(ON_CALL, returning(calls, "early"), priority=-5)
    engine.register(ON_CALL, returning(calls, "middle"))

    outcome = await engine.run_sync(ON_CALL, "event", CTX)

    assert calls == ["early", "middle", "late"]
    assert outcome.allowed
    assert outcome.errors == ()


async def test_priority_ties_run_in_registration_order(engine: HookEngine) -> None:
    calls: list[str] = []
    for name in ("first", "second", "third"):
        engine.register(ON_CALL, returning(calls, name), priority=1)

    await engine.run_sync(ON_CALL, "event", CTX)

    assert calls == ["first", "second", "third"]


async def test_block_stops_the_chain_and_names_the_hook(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(BEFORE, returning(calls, "limiter", HookResult.block("rate limited")))
    engine.register(BEFORE, returning(calls, "after"), priority=1)

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert not outcome.allowed
    assert outcome.reason == "rate limited"
    assert outcome.blocked_by == "limiter"
    assert outcome.detail is None
    assert calls == ["limiter"]


async def test_modify_hands_the_next_hook_the_new_event(engine: HookEngine) -> None:
    seen: list[Any] = []

    async def rewrite(event: Any, ctx: RoomContext) -> HookResult:
        return HookResult.modify(event + "!")

    async def look(event: Any, ctx: RoomContext) -> None:
        seen.append(event)

    engine.register(ON_CALL, rewrite)
    engine.register(ON_CALL, look, priority=1)

    outcome = await engine.run_sync(ON_CALL, "hi", CTX)

    assert seen == ["hi!"]
    assert outcome.event == "hi!"


async def test_metadata_of_later_hooks_overrides_earlier_keys(engine: HookEngine) -> None:
    calls: list[str] = []
    first = HookResult.allow(metadata={"arguments": {"q": "a"}, "tag": 1})
    second = HookResult.allow(metadata={"arguments": {"q": "b"}})
    engine.register(BEFORE, returning(calls, "one", first))
    engine.register(BEFORE, returning(calls, "two", second))

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert outcome.metadata == {"arguments": {"q": "b"}, "tag": 1}


@pytest.mark.parametrize("trigger", list(HookTrigger))
async def test_none_counts_as_allow_without_a_log_line(
    engine: HookEngine, trigger: HookTrigger, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    calls: list[str] = []
    engine.register(trigger, returning(calls, "quiet"))
    engine.register(trigger, returning(calls, "next"))

    outcome = await engine.run_sync(trigger, "event", CTX)

    assert outcome.allowed
    assert outcome.errors == ()
    assert calls == ["quiet", "next"]
    assert [r for r in caplog.records if r.name == LOGGER] == []


async def test_an_empty_chain_allows_the_event_unchanged(engine: HookEngine) -> None:
    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert outcome.allowed
    assert outcome.event == "event"
    assert outcome.metadata == {}


# -- failures -----------------------------------------------------------------------------


async def test_a_raising_hook_refuses_before_tool_use_with_a_detail(
    engine: HookEngine, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    engine.register(BEFORE, raising("boom", RuntimeError("hook crashed")))
    engine.register(BEFORE, returning(calls, "after"), priority=1)

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert not outcome.allowed
    assert outcome.reason is None
    assert outcome.detail == "boom: hook crashed"
    assert outcome.errors == ("boom: hook crashed",)
    assert calls == []
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "boom" in warnings[0].getMessage()


@pytest.mark.parametrize("trigger", [ON_CALL, ON_INPUT])
async def test_a_raising_hook_is_skipped_on_fail_open_triggers(
    engine: HookEngine, trigger: HookTrigger, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    engine.register(trigger, raising("boom", RuntimeError("hook crashed")))
    engine.register(trigger, returning(calls, "after"), priority=1)

    outcome = await engine.run_sync(trigger, "event", CTX)

    assert outcome.allowed
    assert outcome.detail is None
    assert outcome.errors == ("boom: hook crashed",)
    assert calls == ["after"]
    assert any(r.name == LOGGER and r.levelno == logging.WARNING for r in caplog.records)


async def test_a_timed_out_hook_fails_closed_with_its_budget_in_the_detail(
    engine: HookEngine,
) -> None:
    engine.register(BEFORE, stuck("slow"), timeout=0.01)

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert not outcome.allowed
    assert outcome.detail == "slow: timed out after 0.01 s"


async def test_a_timed_out_hook_is_skipped_on_a_fail_open_trigger(
    engine: HookEngine, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    engine.register(ON_INPUT, stuck("slow"), timeout=0.01)
    engine.register(ON_INPUT, returning(calls, "after"), priority=1)

    outcome = await engine.run_sync(ON_INPUT, "event", CTX)

    assert outcome.allowed
    assert outcome.errors == ("slow: timed out after 0.01 s",)
    assert calls == ["after"]
    assert any("slow" in r.getMessage() for r in caplog.records if r.name == LOGGER)


async def test_a_timeout_error_the_hook_raises_itself_is_not_its_budget(
    engine: HookEngine,
) -> None:
    engine.register(BEFORE, raising("remote", TimeoutError("backend slow")))

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert outcome.detail == "remote: backend slow"


async def test_a_return_that_is_not_a_hook_result_is_a_failure(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(BEFORE, returning(calls, "odd", "yes"))

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert not outcome.allowed
    assert outcome.detail == "odd: returned str instead of HookResult"


async def test_a_hook_can_fail_open_on_before_tool_use(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(BEFORE, raising("lenient", ValueError("bad")), fail_closed=False)
    engine.register(BEFORE, returning(calls, "after"), priority=1)

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert outcome.allowed
    assert outcome.errors == ("lenient: bad",)
    assert calls == ["after"]


async def test_a_hook_can_fail_closed_on_a_fail_open_trigger(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_INPUT, returning(calls, "before"))
    engine.register(ON_INPUT, raising("strict", ValueError("bad")), priority=1, fail_closed=True)
    engine.register(ON_INPUT, returning(calls, "after"), priority=2)

    outcome = await engine.run_sync(ON_INPUT, "event", CTX)

    assert not outcome.allowed
    assert outcome.detail == "strict: bad"
    assert calls == ["before"]


async def test_errors_of_skipped_hooks_are_kept_when_a_later_hook_blocks(
    engine: HookEngine,
) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, raising("flaky", KeyError("x")))
    engine.register(ON_CALL, returning(calls, "gate", HookResult.block("no")), priority=1)

    outcome = await engine.run_sync(ON_CALL, "event", CTX)

    assert (outcome.allowed, outcome.reason, outcome.errors) == (False, "no", ("flaky: 'x'",))


async def test_cancellation_propagates_out_of_the_chain(engine: HookEngine) -> None:
    started = asyncio.Event()
    engine.register(BEFORE, stuck("waiting", started))
    run = asyncio.create_task(engine.run_sync(BEFORE, "event", CTX))
    await started.wait()

    run.cancel()

    with pytest.raises(asyncio.CancelledError):
        await run


async def awaits_a_cancelled_future(event: Any, ctx: RoomContext) -> HookResult | None:
    """A hook whose own work was cancelled by someone else: awaiting it raises."""
    work = asyncio.get_running_loop().create_future()
    work.cancel()
    await work
    return None


async def test_a_cancelled_error_the_hook_raises_itself_is_a_failure(
    engine: HookEngine,
) -> None:
    """It refuses on a fail-closed trigger, and is skipped on a fail-open one."""
    calls: list[str] = []
    engine.register(BEFORE, awaits_a_cancelled_future)
    engine.register(ON_CALL, awaits_a_cancelled_future)
    engine.register(ON_CALL, returning(calls, "after"), priority=1)

    refused = await engine.run_sync(BEFORE, "event", CTX)
    skipped = await engine.run_sync(ON_CALL, "event", CTX)

    assert not refused.allowed
    assert refused.detail == (
        "awaits_a_cancelled_future: raised CancelledError, though nothing cancelled it"
    )
    assert skipped.allowed
    assert calls == ["after"]


async def test_a_cancelled_error_an_observer_raises_itself_is_logged(
    engine: HookEngine, caplog: pytest.LogCaptureFixture
) -> None:
    engine.register(ON_CALL, awaits_a_cancelled_future, execution=HookExecution.ASYNC)

    engine.run_async(ON_CALL, "event", CTX)
    await engine.drain()

    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("awaits_a_cancelled_future" in m and "CancelledError" in m for m in messages)


# -- channel filters ----------------------------------------------------------------------


async def test_a_channel_type_filter_is_read_from_the_event(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(BEFORE, returning(calls, "voice"), channel_types={ChannelType.REALTIME_VOICE})
    engine.register(BEFORE, returning(calls, "any"))

    await engine.run_sync(BEFORE, tool_event(ChannelType.AI), CTX)
    await engine.run_sync(BEFORE, tool_event(ChannelType.REALTIME_VOICE), CTX)

    assert calls == ["any", "voice", "any"]


async def test_explicit_channel_arguments_win_over_the_event(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, returning(calls, "conf"), channel_types=[ChannelType.CONFERENCE])

    await engine.run_sync(ON_CALL, tool_event(), CTX, channel_type=ChannelType.CONFERENCE)

    assert calls == ["conf"]


async def test_a_channel_id_filter_admits_only_its_channels(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, returning(calls, "agent-only"), channel_ids={"agent"})

    await engine.run_sync(ON_CALL, tool_event(channel_id="other"), CTX)
    await engine.run_sync(ON_CALL, "no channel", CTX)
    await engine.run_sync(ON_CALL, "no channel", CTX, channel_id="agent")

    assert calls == ["agent-only"]


async def test_has_hooks_narrows_by_execution_and_channel(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, returning(calls, "voice"), channel_types={ChannelType.REALTIME_VOICE})
    engine.register(ON_CALL, returning(calls, "obs"), execution=HookExecution.ASYNC)

    assert engine.has_hooks(ON_CALL)
    assert not engine.has_hooks(BEFORE)
    assert engine.has_hooks(ON_CALL, execution=HookExecution.SYNC)
    assert engine.has_hooks(ON_CALL, execution=HookExecution.SYNC, channel_id="any")
    assert not engine.has_hooks(ON_CALL, execution=HookExecution.SYNC, channel_type=ChannelType.AI)
    assert engine.has_hooks(ON_CALL, channel_type=ChannelType.AI)


# -- observers ----------------------------------------------------------------------------


async def test_observers_run_only_when_started_and_see_the_event(engine: HookEngine) -> None:
    seen: list[Any] = []

    async def observe(event: Any, ctx: RoomContext) -> None:
        seen.append((event, ctx))

    engine.register(ON_CALL, observe, execution=HookExecution.ASYNC)

    outcome = await engine.run_sync(ON_CALL, "event", CTX)
    await engine.drain()
    assert outcome.allowed
    assert seen == []

    engine.run_async(ON_CALL, "event", CTX)
    await engine.drain()

    assert seen == [("event", CTX)]


async def test_observer_failures_are_logged_and_do_not_stop_others(
    engine: HookEngine, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, raising("broken", RuntimeError("oops")), execution=HookExecution.ASYNC)
    engine.register(ON_CALL, stuck("sleepy"), execution=HookExecution.ASYNC, timeout=0.01)
    engine.register(ON_CALL, returning(calls, "fine"), execution=HookExecution.ASYNC)

    engine.run_async(ON_CALL, "event", CTX)
    await engine.drain()

    assert calls == ["fine"]
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("broken" in m and "oops" in m for m in messages)
    assert any("sleepy" in m and "timed out after 0.01 s" in m for m in messages)


async def test_drain_waits_for_observers_started_by_observers(engine: HookEngine) -> None:
    calls: list[str] = []
    engine.register(ON_CALL, returning(calls, "nested"), execution=HookExecution.ASYNC)

    async def chain(event: Any, ctx: RoomContext) -> None:
        engine.run_async(ON_CALL, "inner", ctx)

    engine.register(ON_INPUT, chain, execution=HookExecution.ASYNC)

    engine.run_async(ON_INPUT, "outer", CTX)
    await engine.drain()

    assert calls == ["nested"]


async def test_close_cancels_running_observers_and_starts_no_more() -> None:
    engine = HookEngine()
    started = asyncio.Event()
    cancelled: list[bool] = []
    never = asyncio.Event()

    async def waiting(event: Any, ctx: RoomContext) -> None:
        started.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    engine.register(ON_CALL, waiting, execution=HookExecution.ASYNC)
    engine.run_async(ON_CALL, "event", CTX)
    await started.wait()

    await engine.close()
    engine.run_async(ON_CALL, "event", CTX)
    await engine.drain()

    assert cancelled == [True]
    assert engine.has_hooks(ON_CALL)


# -- registration -------------------------------------------------------------------------


async def test_the_decorator_returns_the_function_and_registers_it(engine: HookEngine) -> None:
    async def notify(event: Any, ctx: RoomContext) -> None:
        return None

    decorated = engine.hook(ON_INPUT, priority=3)(notify)

    assert decorated is notify
    assert engine.has_hooks(ON_INPUT, execution=HookExecution.SYNC)


async def test_register_names_the_hook_after_its_function(engine: HookEngine) -> None:
    async def notify_user(event: Any, ctx: RoomContext) -> None:
        return None

    registration = engine.register(ON_INPUT, notify_user)
    named = engine.register(ON_INPUT, notify_user, name="custom")

    assert registration.name == "notify_user"
    assert named.name == "custom"
    assert registration.fail_closed is None
    assert registration.timeout == 30.0


async def test_unregister_removes_the_hook_once(engine: HookEngine) -> None:
    calls: list[str] = []
    registration = engine.register(ON_CALL, returning(calls, "gone"))

    assert engine.unregister(registration)
    assert not engine.unregister(registration)
    await engine.run_sync(ON_CALL, "event", CTX)
    assert calls == []


async def test_an_object_with_an_async_call_is_a_hook(engine: HookEngine) -> None:
    class Gate:
        async def __call__(self, event: Any, ctx: RoomContext) -> HookResult:
            return HookResult.block("closed")

    engine.register(BEFORE, Gate())

    outcome = await engine.run_sync(BEFORE, "event", CTX)

    assert (outcome.reason, outcome.blocked_by) == ("closed", "Gate")


def test_register_refuses_a_plain_function() -> None:
    def not_async(event: Any, ctx: RoomContext) -> None:
        return None

    with pytest.raises(TypeError, match="must be an async function"):
        HookEngine().register(ON_CALL, not_async)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_register_refuses_a_timeout_that_is_not_positive(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        HookEngine().register(ON_CALL, returning([], "h"), timeout=timeout)


def test_register_refuses_a_timeout_too_large_for_a_float_and_takes_infinity() -> None:
    """Each run adds the timeout to the loop's clock: a run would fail on ``10**400``."""
    engine = HookEngine()
    with pytest.raises(ValueError, match=r"math\.inf"):
        engine.register(ON_CALL, returning([], "h"), timeout=10**400)
    assert engine.register(ON_CALL, returning([], "h"), timeout=float("inf")).timeout > 0


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("channel_ids", [None], TypeError),
        ("channel_ids", ["agent", 7], TypeError),
        ("channel_ids", b"agent", TypeError),
        ("channel_ids", 5, TypeError),
        ("channel_types", ["nope"], ValueError),
        ("channel_types", ChannelType.AI, TypeError),
    ],
)
def test_a_channel_filter_of_the_wrong_kind_is_refused(
    option: str, value: Any, error: type[Exception]
) -> None:
    """Nothing is converted into a filter no channel matches (``[None]`` into ``"None"``)."""
    with pytest.raises(error, match=option):
        HookEngine().register(ON_CALL, returning([], "h"), **{option: value})


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("priority", "high"),
        ("priority", 1.5),
        ("priority", None),
        ("timeout", "30"),
        ("name", 5),
        ("fail_closed", "no"),
        ("fail_closed", 0),
    ],
)
def test_a_bad_option_is_refused_and_leaves_the_trigger_usable(option: str, value: Any) -> None:
    """A refused registration adds nothing: later hooks for the trigger still register."""
    engine = HookEngine()
    with pytest.raises(TypeError, match=option):
        engine.register(ON_CALL, returning([], "bad"), **{option: value})
    engine.register(ON_CALL, returning([], "good"), priority=1)
    assert engine.has_hooks(ON_CALL)


def test_an_async_hook_cannot_fail_closed() -> None:
    with pytest.raises(ValueError, match="cannot fail closed"):
        HookEngine().register(
            ON_CALL, returning([], "h"), execution=HookExecution.ASYNC, fail_closed=True
        )


def test_a_channel_filter_given_as_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match="collection"):
        HookEngine().register(ON_CALL, returning([], "h"), channel_ids="agent")


# -- data ---------------------------------------------------------------------------------


def test_hook_result_requires_an_event_to_modify_and_a_reason_to_block() -> None:
    with pytest.raises(pydantic.ValidationError):
        HookResult(action="modify")
    with pytest.raises(pydantic.ValidationError):
        HookResult(action="block")
    assert HookResult.block("").reason == ""
    assert HookResult.allow().action == "allow"
    assert HookResult.allow(metadata={"k": 1}).metadata == {"k": 1}


def test_room_context_lists_participant_ids() -> None:
    class Person:
        def __init__(self, id: str) -> None:
            self.id = id

    ctx = RoomContext(room="r", participants=(Person("alice"), Person("bob")))

    assert ctx.participant_ids == frozenset({"alice", "bob"})
    assert ctx.metadata == {}
