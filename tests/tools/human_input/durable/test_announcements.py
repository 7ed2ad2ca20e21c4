"""On a durable store, every stored question is announced: once, and at least once.

A handler records in the store that a request's ON_USER_INPUT_REQUIRED callback ran. A
handler that re-attaches by key to a request stored but never announced (its process
stopped first, or had no callback) announces it; one that re-attaches to a request already
announced does not, so nobody is told twice.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.models.pending_input import PendingInputEvent, PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

pytestmark = pytest.mark.parametrize("store_kind", ["sqlite", "redis"])

KEY = "room-1:ai:call-1"


class Announcements:
    """A notification callback that records what it was told."""

    def __init__(self, *, allow: bool = True) -> None:
        self.told: list[str] = []
        self.allow = allow
        self.arrived = asyncio.Event()

    async def __call__(self, event: PendingInputEvent) -> bool:
        self.told.append(event.pending_id)
        self.arrived.set()
        return self.allow


async def announced(pending_id: str) -> None:
    """Wait until every announcement of ``pending_id`` under way has ended (its tasks are
    named after the request)."""
    name = f"human-input-notify-{pending_id}"
    running = [task for task in asyncio.all_tasks() if task.get_name() == name]
    await asyncio.gather(*running)


def listening(handler: HumanInputHandler, callback: Announcements) -> HumanInputHandler:
    handler.set_on_input_required("ai", callback)
    return handler


async def ask(handler: HumanInputHandler) -> str:
    request = await handler.create_detached(
        "AskUserQuestion", {"question": "Where to?"}, room_id="room-1", channel_id="ai", key=KEY
    )
    await announced(request.pending_id)
    return request.pending_id


async def test_a_question_stored_but_never_announced_is_announced_on_reattach(
    make_handler: HandlerFactory,
) -> None:
    silent = make_handler()  # stores the question and tells no one, like a process killed
    pending_id = await ask(silent)
    callback = Announcements()

    assert await ask(listening(make_handler(), callback)) == pending_id

    assert callback.told == [pending_id]


async def test_a_question_announced_once_is_not_announced_again_on_reattach(
    make_handler: HandlerFactory,
) -> None:
    first, again = Announcements(), Announcements()
    pending_id = await ask(listening(make_handler(), first))

    assert await ask(listening(make_handler(), again)) == pending_id
    assert await ask(listening(make_handler(), again)) == pending_id

    assert first.told == [pending_id]
    assert again.told == []


async def test_an_owed_announcement_is_made_once_among_the_handlers_that_reattach(
    make_handler: HandlerFactory,
) -> None:
    pending_id = await ask(make_handler())
    callback = Announcements()
    late = listening(make_handler(), callback)

    await ask(late)
    await ask(late)
    await ask(listening(make_handler(), callback))

    assert callback.told == [pending_id]


async def test_a_repeated_create_in_one_handler_announces_once(
    make_handler: HandlerFactory,
) -> None:
    callback = Announcements()
    handler = listening(make_handler(), callback)

    ids = await asyncio.gather(ask(handler), ask(handler), ask(handler))

    assert len(set(ids)) == 1
    assert callback.told == [ids[0]]


async def test_a_hook_that_denies_an_owed_announcement_rejects_the_question(
    make_handler: HandlerFactory,
) -> None:
    asker = make_handler()
    pending_id = await ask(asker)

    await ask(listening(make_handler(), Announcements(allow=False)))

    request = await asker.get_request(pending_id)
    assert request is not None
    assert request.status is PendingInputStatus.REJECTED
