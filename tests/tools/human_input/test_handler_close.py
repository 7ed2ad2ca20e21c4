"""close(): globally or for one channel, it withdraws open work and refuses later creates."""

from __future__ import annotations

import asyncio

import pytest

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputRejectedError,
    RequestWithdrawnError,
)
from roomkit.models.pending_input import PendingInputEvent, PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

HANDLER_CLOSED = "Human input handler closed"


class Blocked:
    """A callback that never returns on its own; it records being cancelled."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.gate = asyncio.Event()
        self._progress = asyncio.Event()

    async def until_started(self, count: int) -> None:
        while len(self.started) < count:
            self._progress.clear()
            await self._progress.wait()

    async def __call__(self, event: PendingInputEvent) -> bool:
        self.started.append(event.pending_id)
        self._progress.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.append(event.pending_id)
            raise
        return True


def notification_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("human-input-notify-")]


async def test_close_withdraws_every_unanswered_request(handler: HumanInputHandler) -> None:
    first = await handler.create("Ask", {}, channel_id="a")
    second = await handler.create_detached("Ask", {}, channel_id="b")
    waiters = [asyncio.create_task(handler.wait(p.pending_id)) for p in (first, second)]
    await asyncio.sleep(0)

    await handler.close()

    outcomes = await asyncio.gather(*waiters, return_exceptions=True)
    for outcome in outcomes:
        assert type(outcome) is RequestWithdrawnError
        assert str(outcome) == HANDLER_CLOSED
        assert isinstance(outcome, RuntimeError)
        assert not isinstance(outcome, HumanInputRejectedError)
    assert handler.pending == {}
    assert handler.closed is True
    assert all(p.status is PendingInputStatus.REJECTED and p.withdrawn for p in (first, second))
    assert handler.resolve(first.pending_id, "late") is False


async def test_close_retires_an_answered_request_and_keeps_its_answer(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, "kept")

    await handler.close()

    assert handler.pending == {}
    assert pending.status is PendingInputStatus.RESOLVED
    assert await handler.wait(pending.pending_id) == "kept"


async def test_a_closed_handler_refuses_create(handler: HumanInputHandler) -> None:
    await handler.close()

    for create in (handler.create, handler.create_detached):
        with pytest.raises(HandlerClosedError) as caught:
            await create("Ask", {}, channel_id="a")
        assert str(caught.value) == "Human input handler is closed"
        assert isinstance(caught.value, RuntimeError)
        assert not isinstance(caught.value, HumanInputRejectedError)
    assert handler.pending == {}


async def test_the_app_callback_survives_a_global_close_but_create_is_refused(
    handler: HumanInputHandler,
) -> None:
    callback = Blocked()
    handler.on_input_required = callback

    await handler.close()

    assert handler.on_input_required is callback
    with pytest.raises(HandlerClosedError):
        await handler.create("Ask", {})
    assert callback.started == []


async def test_closing_one_channel_leaves_other_channels_alone(
    handler: HumanInputHandler,
) -> None:
    closing = await handler.create("Ask", {}, channel_id="a")
    other = await handler.create("Ask", {}, channel_id="b")
    unscoped = await handler.create("Ask", {})
    cut = asyncio.create_task(handler.wait(closing.pending_id))
    kept = asyncio.create_task(handler.wait(other.pending_id))
    await asyncio.sleep(0)

    await handler.close(channel_id="a")

    with pytest.raises(RequestWithdrawnError, match=f"^{HANDLER_CLOSED}$"):
        await cut
    assert handler.pending == {other.pending_id: other, unscoped.pending_id: unscoped}
    assert handler.resolve(other.pending_id, "still open") is True
    assert await kept == "still open"
    assert handler.closed is False
    assert (await handler.create("Ask", {}, channel_id="b")).channel_id == "b"


async def test_a_closed_channel_refuses_create_with_its_own_message(
    handler: HumanInputHandler,
) -> None:
    await handler.close(channel_id="a")

    with pytest.raises(HandlerClosedError) as caught:
        await handler.create_detached("Ask", {}, channel_id="a")
    assert str(caught.value) == "Human input handler is closed for channel a"
    assert handler.is_closed_for("a") is True
    assert handler.is_closed_for("b") is False
    assert (await handler.create("Ask", {})).channel_id == ""


async def test_closing_a_channel_forgets_its_callback(handler: HumanInputHandler) -> None:
    """With one channel callback left, a request without channel goes to it, not to the app."""
    closing, staying, app = Blocked(), Blocked(), Blocked()
    handler.on_input_required = app
    handler.set_on_input_required("a", closing)
    handler.set_on_input_required("b", staying)

    await handler.close(channel_id="a")
    pending = await handler.create("Ask", {})
    await staying.until_started(1)

    assert (closing.started, staying.started, app.started) == ([], [pending.pending_id], [])
    await handler.close()


async def test_close_cancels_notification_tasks(handler: HumanInputHandler) -> None:
    callback = Blocked()
    handler.on_input_required = callback
    pending = await handler.create("Ask", {})
    await callback.until_started(1)
    assert callback.started == [pending.pending_id]

    await handler.close()

    assert callback.cancelled == [pending.pending_id]
    assert notification_tasks() == []


async def test_closing_a_channel_cancels_only_its_notifications(
    handler: HumanInputHandler,
) -> None:
    callback = Blocked()
    handler.set_on_input_required("a", callback)
    handler.set_on_input_required("b", callback)
    closing = await handler.create("Ask", {}, channel_id="a")
    staying = await handler.create("Ask", {}, channel_id="b")
    await callback.until_started(2)

    await handler.close(channel_id="a")

    assert callback.cancelled == [closing.pending_id]
    [task] = notification_tasks()
    assert task.get_name() == f"human-input-notify-{staying.pending_id}"
    callback.gate.set()
    await task
    assert staying.status is PendingInputStatus.PENDING


async def test_a_callback_may_close_the_handler_it_serves(handler: HumanInputHandler) -> None:
    closed = asyncio.Event()

    async def shut_down(event: PendingInputEvent) -> bool:
        await handler.close()
        closed.set()
        return True

    handler.on_input_required = shut_down
    pending = await handler.create("Ask", {})

    await closed.wait()

    with pytest.raises(RequestWithdrawnError, match=f"^{HANDLER_CLOSED}$"):
        await handler.wait(pending.pending_id)


async def test_closing_twice_is_harmless(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    await handler.close()

    await handler.close()
    await handler.close(channel_id="a")

    assert handler.closed is True
    with pytest.raises(RequestWithdrawnError):
        await handler.wait(pending.pending_id)
