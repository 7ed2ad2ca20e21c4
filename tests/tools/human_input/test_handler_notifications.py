"""The notification callback: it runs alongside the wait, can deny, fails open, is routed."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import weakref
from datetime import timedelta

import pytest

from roomkit.core.exceptions import HandlerClosedError, HumanInputRejectedError
from roomkit.core.ports import announcing_to
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInputEvent, PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"


class Recorder:
    """A callback that records its events and answers with a fixed verdict."""

    def __init__(self, verdict: bool | None = True) -> None:
        self.verdict = verdict
        self.events: list[PendingInputEvent] = []
        self.seen = asyncio.Event()

    async def __call__(self, event: PendingInputEvent) -> bool | None:
        self.events.append(event)
        self.seen.set()
        return self.verdict


class Gated:
    """A callback that blocks until released, then answers with ``verdict``."""

    def __init__(self, verdict: bool | None) -> None:
        self.verdict = verdict
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.returned = asyncio.Event()
        self.cancelled = False
        self.task_name = ""

    async def __call__(self, event: PendingInputEvent) -> bool | None:
        current = asyncio.current_task()
        self.task_name = current.get_name() if current is not None else ""
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.returned.set()
        return self.verdict


def notification_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("human-input-notify-")]


async def test_create_schedules_the_callback_without_waiting_for_it(
    handler: HumanInputHandler,
) -> None:
    callback = Gated(verdict=True)
    handler.on_input_required = callback

    pending = await handler.create("Ask", {})

    assert pending.status is PendingInputStatus.PENDING
    await callback.started.wait()
    assert callback.task_name == f"human-input-notify-{pending.pending_id}"
    assert not callback.returned.is_set()
    callback.gate.set()
    await callback.returned.wait()


async def test_the_event_carries_the_request(handler: HumanInputHandler) -> None:
    callback = Recorder()
    handler.on_input_required = callback

    pending = await handler.create(
        "AskUserQuestion",
        {"questions": ["Color?"]},
        room_id="r1",
        tool_call_id="tc1",
        channel_id="voice",
        channel_type=ChannelType.REALTIME_VOICE,
        actor_id="alice",
    )
    await callback.seen.wait()

    [event] = callback.events
    assert event.pending_id == pending.pending_id
    assert (event.tool_name, event.arguments) == ("AskUserQuestion", {"questions": ["Color?"]})
    assert (event.room_id, event.tool_call_id, event.channel_id) == ("r1", "tc1", "voice")
    assert event.channel_type is ChannelType.REALTIME_VOICE
    assert event.actor_id == "alice"
    assert event.timestamp.utcoffset() == timedelta(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.actor_id = "mallory"  # type: ignore[misc]


async def test_an_authorless_request_announces_no_actor(handler: HumanInputHandler) -> None:
    callback = Recorder()
    handler.on_input_required = callback

    await handler.create("Ask", {}, room_id="r")
    await callback.seen.wait()

    assert callback.events[0].actor_id is None


async def test_an_answer_given_while_the_callback_is_blocked_is_taken(
    handler: HumanInputHandler,
) -> None:
    callback = Gated(verdict=True)
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await callback.started.wait()

    assert handler.resolve(pending.pending_id, "blue") is True

    assert await waiter == "blue"
    assert not callback.returned.is_set()
    callback.gate.set()
    await callback.returned.wait()


async def test_a_denial_rejects_a_wait_already_blocked(handler: HumanInputHandler) -> None:
    callback = Gated(verdict=False)
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await callback.started.wait()
    await asyncio.sleep(0)
    assert not waiter.done()

    callback.gate.set()

    with pytest.raises(HumanInputRejectedError) as caught:
        await waiter
    assert str(caught.value) == DENIED
    assert pending.status is PendingInputStatus.REJECTED
    assert pending.withdrawn is False


async def test_a_denial_before_anyone_waits_is_replayed(handler: HumanInputHandler) -> None:
    callback = Recorder(verdict=False)
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    await callback.seen.wait()

    with pytest.raises(HumanInputRejectedError, match=f"^{DENIED}$"):
        await handler.wait(pending.pending_id)
    assert handler.resolve(pending.pending_id, "too late") is False


async def test_a_denial_after_an_answer_does_nothing(handler: HumanInputHandler) -> None:
    callback = Gated(verdict=False)
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    await callback.started.wait()
    handler.resolve(pending.pending_id, "blue")

    callback.gate.set()
    await callback.returned.wait()
    await asyncio.sleep(0)

    assert pending.status is PendingInputStatus.RESOLVED
    assert await handler.wait(pending.pending_id) == "blue"


@pytest.mark.parametrize("verdict", [True, None])
async def test_a_callback_that_does_not_return_false_allows_the_request(
    handler: HumanInputHandler, verdict: bool | None
) -> None:
    callback = Recorder(verdict=verdict)
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    await callback.seen.wait()
    await asyncio.sleep(0)

    assert pending.status is PendingInputStatus.PENDING
    assert handler.resolve(pending.pending_id, "ok") is True
    assert await handler.wait(pending.pending_id) == "ok"


async def test_a_raising_callback_is_logged_and_the_request_stays_answerable(
    handler: HumanInputHandler, caplog: pytest.LogCaptureFixture
) -> None:
    raised = asyncio.Event()

    async def broken(event: PendingInputEvent) -> bool:
        raised.set()
        raise ConnectionError("websocket gone")

    handler.on_input_required = broken
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))

    with caplog.at_level(logging.ERROR, logger="roomkit.tools.human_input"):
        await raised.wait()
        await asyncio.sleep(0)

    [record] = caplog.records
    assert record.name == "roomkit.tools.human_input"
    assert record.getMessage() == (
        f"_on_input_required callback failed for pending {pending.pending_id}"
    )
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ConnectionError)
    assert pending.status is PendingInputStatus.PENDING
    assert handler.resolve(pending.pending_id, "still here") is True
    assert await waiter == "still here"


async def test_a_detached_request_is_announced_too(handler: HumanInputHandler) -> None:
    callback = Recorder()
    handler.on_input_required = callback

    pending = await handler.create_detached("Ask", {})
    await callback.seen.wait()

    assert [event.pending_id for event in callback.events] == [pending.pending_id]
    handler.release(pending.pending_id)


async def test_a_request_goes_to_its_own_channel_callback(handler: HumanInputHandler) -> None:
    app, first, second = Recorder(), Recorder(), Recorder()
    handler.on_input_required = app
    handler.set_on_input_required("a", first)
    handler.set_on_input_required("b", second)

    await handler.create("Ask", {}, channel_id="b")
    await second.seen.wait()
    await asyncio.sleep(0)

    assert [len(app.events), len(first.events), len(second.events)] == [0, 0, 1]


async def test_a_request_without_channel_goes_to_the_only_channel_callback(
    handler: HumanInputHandler,
) -> None:
    app, only = Recorder(), Recorder()
    handler.on_input_required = app
    handler.set_on_input_required("a", only)

    await handler.create("Ask", {})
    await only.seen.wait()

    assert (len(app.events), len(only.events)) == (0, 1)


async def test_a_request_without_channel_goes_to_the_app_callback_among_several_channels(
    handler: HumanInputHandler,
) -> None:
    app, first, second = Recorder(), Recorder(), Recorder()
    handler.on_input_required = app
    handler.set_on_input_required("a", first)
    handler.set_on_input_required("b", second)

    await handler.create("Ask", {})
    await app.seen.wait()
    await asyncio.sleep(0)

    assert [len(app.events), len(first.events), len(second.events)] == [1, 0, 0]


async def test_a_request_of_an_unregistered_channel_goes_to_the_app_callback(
    handler: HumanInputHandler,
) -> None:
    app, registered = Recorder(), Recorder()
    handler.on_input_required = app
    handler.set_on_input_required("a", registered)

    await handler.create("Ask", {}, channel_id="elsewhere")
    await app.seen.wait()
    await asyncio.sleep(0)

    assert (len(app.events), len(registered.events)) == (1, 0)


async def test_without_any_callback_no_notification_is_scheduled(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {}, channel_id="a")

    assert notification_tasks() == []
    assert handler.resolve(pending.pending_id, "fine") is True


async def test_the_app_callback_is_a_readable_property(handler: HumanInputHandler) -> None:
    callback = Recorder()
    assert handler.on_input_required is None

    handler.on_input_required = callback
    assert handler.on_input_required is callback

    handler.on_input_required = None
    assert handler.on_input_required is None


async def test_registration_tokens_count_up_per_channel(handler: HumanInputHandler) -> None:
    callback = Recorder()

    tokens = [handler.set_on_input_required(channel, callback) for channel in "aab"]

    assert tokens == [1, 2, 1]


async def test_a_displaced_owner_closing_leaves_the_live_owner_alone(
    handler: HumanInputHandler,
) -> None:
    old, live = Recorder(), Recorder()
    stale = handler.set_on_input_required("a", old)
    current = handler.set_on_input_required("a", live)
    open_request = await handler.create("Ask", {}, channel_id="a")
    await live.seen.wait()

    await handler.close(channel_id="a", registration=stale)

    assert open_request.status is PendingInputStatus.PENDING
    assert handler.pending == {open_request.pending_id: open_request}
    second = await handler.create("Ask", {}, channel_id="a")
    await asyncio.sleep(0)
    assert [event.pending_id for event in live.events] == [
        open_request.pending_id,
        second.pending_id,
    ]
    assert old.events == []

    await handler.close(channel_id="a", registration=current)
    assert handler.is_closed_for("a")
    assert handler.pending == {}


async def test_registering_reopens_a_closed_channel_scope(handler: HumanInputHandler) -> None:
    await handler.close(channel_id="a")
    with pytest.raises(HandlerClosedError):
        await handler.create("Ask", {}, channel_id="a")

    callback = Recorder()
    token = handler.set_on_input_required("a", callback)
    pending = await handler.create("Ask", {}, channel_id="a")
    await callback.seen.wait()

    assert token == 1
    assert not handler.is_closed_for("a")
    assert callback.events[0].pending_id == pending.pending_id


async def test_registering_on_a_closed_handler_raises(handler: HumanInputHandler) -> None:
    await handler.close()

    with pytest.raises(HandlerClosedError) as caught:
        handler.set_on_input_required("a", Recorder())
    assert str(caught.value) == "Human input handler is closed"


async def test_the_framework_registration_alias_is_the_same_method() -> None:
    alias = HumanInputHandler._set_on_input_required
    assert alias is HumanInputHandler.set_on_input_required


async def test_registering_a_non_callable_raises_type_error(handler: HumanInputHandler) -> None:
    with pytest.raises(TypeError, match="callback"):
        handler.set_on_input_required("a", "not a callback")  # type: ignore[arg-type]


async def test_a_notification_whose_scope_closed_first_never_calls_back(
    handler: HumanInputHandler,
) -> None:
    callback = Recorder()
    handler.set_on_input_required("a", callback)
    await handler.create("Ask", {}, channel_id="a")

    await handler.close(channel_id="a")
    await asyncio.sleep(0)

    assert callback.events == []
    assert notification_tasks() == []


class Owner:
    """An object whose method is a channel's callback, as a kit's ON_USER_INPUT_REQUIRED is."""

    def __init__(self, inner: Recorder | Gated | None = None) -> None:
        self.inner = inner if inner is not None else Recorder()

    async def hear(self, event: PendingInputEvent) -> bool | None:
        return await self.inner(event)


async def test_an_earlier_owner_hears_the_requests_made_in_its_turn(
    handler: HumanInputHandler,
) -> None:
    """Two owners' methods route one channel id: a request made inside ``announcing_to``
    the earlier one goes to it, any other to the later one; the earlier one leaving keeps
    the scope open to the later one."""
    heard_earlier, heard_later = Recorder(), Recorder()
    earlier, later = Owner(heard_earlier), Owner(heard_later)
    earlier_token = handler.set_on_input_required("a", earlier.hear)
    handler.set_on_input_required("a", later.hear)

    with announcing_to(earlier.hear):
        mine = await handler.create("Ask", {}, channel_id="a")
    theirs = await handler.create("Ask", {}, channel_id="a")
    await heard_earlier.seen.wait()
    await heard_later.seen.wait()

    assert [event.pending_id for event in heard_earlier.events] == [mine.pending_id]
    assert [event.pending_id for event in heard_later.events] == [theirs.pending_id]
    await handler.close(channel_id="a", registration=earlier_token)
    assert not handler.is_closed_for("a")
    assert handler.pending.keys() == {mine.pending_id, theirs.pending_id}
    heard_later.seen.clear()
    with announcing_to(earlier.hear):  # no owner any more: the channel's current one hears
        late = await handler.create("Ask", {}, channel_id="a")
    await heard_later.seen.wait()
    assert heard_later.events[-1].pending_id == late.pending_id


async def test_an_owner_leaving_stops_only_its_own_notifications(
    handler: HumanInputHandler,
) -> None:
    gated_earlier, gated_later = Gated(True), Gated(True)
    earlier, later = Owner(gated_earlier), Owner(gated_later)
    handler.set_on_input_required("a", earlier.hear)
    later_token = handler.set_on_input_required("a", later.hear)
    with announcing_to(earlier.hear):
        await handler.create("Ask", {}, channel_id="a")
    await handler.create("Ask", {}, channel_id="a")
    await gated_earlier.started.wait()
    await gated_later.started.wait()

    await handler.close(channel_id="a", registration=later_token)

    assert gated_later.cancelled
    assert not gated_earlier.cancelled
    assert not handler.is_closed_for("a")
    gated_earlier.gate.set()
    await gated_earlier.returned.wait()


async def test_an_earlier_owner_that_is_gone_keeps_no_scope_open(
    handler: HumanInputHandler,
) -> None:
    """Once the object of an earlier owner's method is gone, the last owner's close closes
    the channel's scope."""
    earlier, later = Owner(), Owner()
    handler.set_on_input_required("a", earlier.hear)
    token = handler.set_on_input_required("a", later.hear)
    gone = weakref.ref(earlier)
    # Nothing but the name holds it (no cycle): it goes with the name, without a full
    # collection, which walks every object of a worker and takes seconds in a full run.
    del earlier
    assert gone() is None

    await handler.close(channel_id="a", registration=token)

    assert handler.is_closed_for("a")


async def test_a_callback_that_edits_the_events_arguments_leaves_the_request_alone() -> None:
    """A notification that trims what it broadcasts changes neither the request nor the call."""
    handler = HumanInputHandler()
    edited = asyncio.Event()

    async def redact(event: PendingInputEvent) -> bool:
        event.arguments.pop("secret")
        event.arguments["options"].append("injected")
        edited.set()
        return True

    handler.on_input_required = redact
    arguments = {"question": "Deploy?", "secret": "s3", "options": ["yes", "no"]}
    pending = await handler.create("ask_user", arguments)
    await edited.wait()

    expected = {"question": "Deploy?", "secret": "s3", "options": ["yes", "no"]}
    assert handler.pending[pending.pending_id].arguments == expected
    assert arguments == expected
    handler.release(pending.pending_id)
