"""``handler._on_input_required = callback``, as RoomKit 0.109's code and tests write it: the
callback for requests of every channel with no callback of its own."""

from __future__ import annotations

import asyncio

import pytest

from roomkit import HumanInputHandler, HumanInputRejectedError, PendingInputEvent
from roomkit.tools.human_input import OnInputRequiredCallback

DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"


async def notification(pending_id: str) -> None:
    """Return once the notification task of the request has ended (if it still runs)."""
    name = f"human-input-notify-{pending_id}"
    for task in [task for task in asyncio.all_tasks() if task.get_name() == name]:
        await task


async def test_the_callback_runs_alongside_the_wait() -> None:
    handler = HumanInputHandler()
    started = asyncio.Event()
    gate = asyncio.Event()
    events: list[PendingInputEvent] = []

    async def on_input(event: PendingInputEvent) -> bool:
        events.append(event)
        started.set()
        await gate.wait()
        return True

    handler._on_input_required = on_input
    assert handler._on_input_required is on_input
    assert handler.on_input_required is on_input

    pending = await handler.create("ask_user", {"question": "Colour?"}, room_id="r1")
    waiting = asyncio.create_task(handler.wait(pending.pending_id, timeout=60))
    await started.wait()
    # The callback is still running: the request is answerable all the same.
    assert handler.resolve(pending.pending_id, "blue")
    assert await waiting == "blue"
    gate.set()
    assert [event.pending_id for event in events] == [pending.pending_id]


async def test_a_false_from_the_callback_rejects_a_wait_already_parked() -> None:
    handler = HumanInputHandler()
    gate = asyncio.Event()

    async def deny(event: PendingInputEvent) -> bool:
        await gate.wait()
        return False

    handler._on_input_required = deny
    pending = await handler.create("ask_user", {"question": "?"})
    waiting = asyncio.create_task(handler.wait(pending.pending_id, timeout=60))
    await asyncio.sleep(0)  # the wait's task runs up to its park
    assert handler.statistics().parked_waits == 1
    gate.set()
    with pytest.raises(HumanInputRejectedError, match=DENIED):
        await waiting


async def test_a_false_from_the_callback_rejects_a_wait_that_comes_later() -> None:
    handler = HumanInputHandler()
    denied = asyncio.Event()

    async def deny(event: PendingInputEvent) -> bool:
        denied.set()
        return False

    handler._on_input_required = deny
    pending = await handler.create("ask_user", {"question": "?"})
    await denied.wait()
    await notification(pending.pending_id)
    with pytest.raises(HumanInputRejectedError, match=DENIED):
        await handler.wait(pending.pending_id, timeout=60)


async def test_the_event_carries_the_actor() -> None:
    handler = HumanInputHandler()
    seen: asyncio.Future[PendingInputEvent] = asyncio.get_running_loop().create_future()

    async def on_input(event: PendingInputEvent) -> bool:
        seen.set_result(event)
        return True

    handler._on_input_required = on_input
    pending = await handler.create("ask_user", {"question": "?"}, actor_id="bob", room_id="r1")
    event = await seen
    assert (event.pending_id, event.actor_id, event.room_id) == (pending.pending_id, "bob", "r1")
    handler.release(pending.pending_id)


async def test_closing_one_channel_leaves_another_channels_callback_alone() -> None:
    handler = HumanInputHandler()
    heard: dict[str, asyncio.Event] = {name: asyncio.Event() for name in ("a", "b", "app")}

    def hears(name: str) -> OnInputRequiredCallback:
        async def callback(event: PendingInputEvent) -> bool:
            heard[name].set()
            return True

        return callback

    handler._on_input_required = hears("app")
    handler._set_on_input_required("a", hears("a"))
    handler._set_on_input_required("b", hears("b"))
    await handler.close(channel_id="a")

    with pytest.raises(RuntimeError, match="closed for channel a"):
        await handler.create("ask_user", {"question": "?"}, channel_id="a")
    on_b = await handler.create("ask_user", {"question": "?"}, channel_id="b")
    await heard["b"].wait()
    elsewhere = await handler.create("ask_user", {"question": "?"}, channel_id="c")
    await heard["app"].wait()
    assert not heard["a"].is_set()
    for pending in (on_b, elsewhere):
        handler.release(pending.pending_id)


async def test_none_clears_the_callback() -> None:
    handler = HumanInputHandler()
    calls: list[PendingInputEvent] = []

    async def on_input(event: PendingInputEvent) -> bool:
        calls.append(event)
        return True

    handler._on_input_required = on_input
    handler._on_input_required = None
    assert handler._on_input_required is None
    pending = await handler.create("ask_user", {"question": "?"})
    assert handler.statistics().running_notifications == 0
    handler.release(pending.pending_id)
    assert calls == []


def test_a_callback_that_cannot_be_called_is_refused() -> None:
    handler = HumanInputHandler()
    with pytest.raises(TypeError, match="must be an async function"):
        handler._on_input_required = "notify"  # type: ignore[assignment]


def test_a_plain_function_is_refused_where_it_is_given() -> None:
    """A callback written without ``async`` is refused when set, not failed at each request
    (where its ``False`` would not deny)."""
    handler = HumanInputHandler()

    def deny(event: PendingInputEvent) -> bool:
        return False

    with pytest.raises(TypeError, match=r"async def deny\(event\)"):
        handler._on_input_required = deny  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"async def deny\(event\)"):
        handler.set_on_input_required("agent", deny)  # type: ignore[arg-type]
    assert handler._on_input_required is None
