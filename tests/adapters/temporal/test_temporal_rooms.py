"""A stateless front end reaches a room's conversation workflow by the room's id alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.workflows import Conversation

from roomkit.adapters.temporal import room_workflow_id, send_to_room
from roomkit.core.exceptions import InvalidTextError


async def _send(world: World, room: str, text: str, **options: Any) -> str:
    """Hand ``text`` to the room's conversation workflow; its reply."""
    reply: str = await send_to_room(
        world.client,
        Conversation.run,
        Conversation.message,
        text,
        room_id=room,
        task_queue=world.task_queue,
        **options,
    )
    return reply


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_each_message_starts_or_reaches_the_rooms_workflow(world: World) -> None:
    room = f"trip-{world.task_queue}"

    async def send(text: str) -> str:
        return await _send(world, room, text)

    async with running(world.worker(Conversation), world.notifier()):
        first = asyncio.create_task(send("hello"))
        await world.answer(await world.created.next(), "alice", {"answer": "hi"})
        second = asyncio.create_task(send("book Lisbon"))
        await world.answer(await world.created.next(), "alice", {"answer": "booked"})
        replies = [await first, await second, await send("bye")]
        handle = world.client.get_workflow_handle(room_workflow_id(room))
        heard = await handle.result()
    assert replies == ["hi", "booked", "bye"]
    assert heard == ["hi", "booked"]


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_a_message_sent_again_under_its_update_id_asks_the_person_once(
    world: World,
) -> None:
    """A front end that sends a message again (its first call timed out, its client
    retried) under the message's own update id reaches the first update: the workflow
    takes the message once, the person is asked once, and both calls get the reply."""
    room = f"trip-{world.task_queue}"

    async def send(text: str, message_id: str) -> str:
        return await _send(world, room, text, update_id=message_id)

    async with running(world.worker(Conversation), world.notifier()):
        first = asyncio.create_task(send("hello", "message-1"))
        pending_id = await world.created.next()
        again = asyncio.create_task(send("hello", "message-1"))
        await world.answer(pending_id, "alice", {"answer": "hi"})
        replies = [await first, await again, await send("bye", "message-2")]
        heard = await world.client.get_workflow_handle(room_workflow_id(room)).result()
    assert replies == ["hi", "hi", "bye"]
    assert heard == ["hi"]
    assert world.created.queue.empty()


def test_an_update_id_that_is_no_text_is_refused() -> None:
    with pytest.raises(ValueError, match="update_id is a non-empty str or None, got 7"):
        asyncio.run(
            send_to_room(
                None,  # type: ignore[arg-type]
                "Conversation",
                "message",
                "hi",
                room_id="r",
                task_queue="q",
                update_id=7,  # type: ignore[arg-type]
            )
        )


@pytest.mark.parametrize("room_id", [["r" * 1_000_000], b"r" * 1_000_000])
def test_a_huge_value_that_is_no_room_id_is_quoted_cut_short(room_id: object) -> None:
    with pytest.raises(ValueError, match=r"takes a room id, got .*\.\.\.$") as refused:
        room_workflow_id(room_id)  # type: ignore[arg-type]
    assert len(str(refused.value)) < 200


def test_a_list_holding_an_integer_too_long_to_write_out_is_no_room_id() -> None:
    with pytest.raises(ValueError, match="got a list holding an integer too long to write out"):
        room_workflow_id([10**5_000])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("room_id", "prefix", "named"), [("\ud800", "room-", "room_id"), ("r", "\udfff-", "prefix")]
)
def test_a_room_id_or_prefix_no_workflow_id_can_hold_is_refused_naming_it(
    room_id: str, prefix: str, named: str
) -> None:
    with pytest.raises(InvalidTextError, match=named):
        room_workflow_id(room_id, prefix=prefix)


def test_a_prefix_that_is_no_text_is_refused() -> None:
    with pytest.raises(TypeError, match="prefix as text, got 5"):
        room_workflow_id("r", prefix=5)  # type: ignore[arg-type]


def test_a_room_id_beyond_ascii_makes_its_workflow_id() -> None:
    assert room_workflow_id("salle-été") == "room-salle-été"


@pytest.mark.parametrize(
    ("room_id", "prefix", "size"),
    [("r" * 996, "room-", "1,001"), ("é" * 498, "room-", "1,001"), ("r", "p" * 1_000, "1,001")],
)
def test_a_workflow_id_past_temporal_s_bound_is_refused_naming_the_room(
    room_id: str, prefix: str, size: str
) -> None:
    """The server refused it at every message ("WorkflowId exceeds maximum allowed length
    (1001/1000)"), naming neither the room nor what to pass; counted in bytes, as it counts."""
    with pytest.raises(ValueError, match=rf"is {size} bytes as UTF-8, over the 1,000") as refused:
        room_workflow_id(room_id, prefix=prefix)
    assert "pass a shorter room id or prefix" in str(refused.value)
    assert len(str(refused.value)) < 300


def test_a_workflow_id_of_temporal_s_longest_is_made() -> None:
    assert len(room_workflow_id("r" * 995).encode()) == 1_000
    assert len(room_workflow_id("é" * 497 + "r").encode()) == 1_000
