"""A room id or an inbound message the kit cannot keep, on every room store: refused where it
enters with a ``TypeError`` (or ``InvalidTextError``) naming the field, nothing recorded, and
the room's next message answered as before."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.core.room_stores import DURABLE, Place
from tests.servers.stores import fresh_prefix

from roomkit import AIChannel, InboundMessage, RoomKit, TextContent, WebSocketChannel
from roomkit.core.exceptions import InvalidTextError
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider


@pytest.fixture(params=["memory", *DURABLE])
async def kit(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RoomKit]:
    """A kit on each room store, with a room ``"room"`` where a chat channel and an AI
    channel that replies ``"ok"`` are attached."""
    store: Any = None
    if request.param == "sqlite":
        store = Place.sqlite(tmp_path / "kit.db").rooms()
    elif request.param == "redis":
        store = Place.redis(request.getfixturevalue("redis_server").url, fresh_prefix()).rooms()
    elif request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        store = Place.postgres(dsn, request.getfixturevalue("postgres_schema")).rooms()
    made = RoomKit() if store is None else RoomKit(store=store)
    made.register_channel(WebSocketChannel("chat"))
    made.register_channel(
        AIChannel("ai", provider=MockAIProvider(ai_responses=[AIResponse(content="ok")]))
    )
    await made.create_room("room")
    await made.attach_channel("room", "chat")
    await made.attach_channel("room", "ai")
    yield made
    await made.close()
    if store is not None:
        await store.close()


@pytest.mark.parametrize(
    ("room_id", "shown"), [(5, "int"), (0, "int"), (b"room", "bytes"), (["room"], "list")]
)
async def test_a_room_id_that_is_no_text_is_refused(
    kit: RoomKit, room_id: object, shown: str
) -> None:
    with pytest.raises(TypeError) as caught:
        await kit.create_room(room_id)  # type: ignore[arg-type]

    assert str(caught.value) == f"room_id must be a str, or None for a fresh id, got {shown}"
    with pytest.raises(KeyError):
        await kit.get_room(str(room_id))


async def test_room_metadata_that_is_no_dict_is_refused(kit: RoomKit) -> None:
    with pytest.raises(TypeError, match=r"^metadata must be a dict or None, got int$"):
        await kit.create_room("other", metadata=5)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        await kit.get_room("other")


async def test_a_room_id_with_a_lone_surrogate_is_refused(kit: RoomKit) -> None:
    with pytest.raises(InvalidTextError, match=r"^room_id must be valid Unicode text, .*U\+D800"):
        await kit.create_room("r\ud800")


async def test_a_room_without_an_id_or_with_an_empty_one_gets_a_fresh_id(kit: RoomKit) -> None:
    first, second = await kit.create_room(), await kit.create_room("")

    assert first.id
    assert second.id
    assert first.id != second.id
    assert (await kit.get_room(second.id)).id == second.id


Message = Callable[[], Any]

REFUSED: dict[str, tuple[Message, str]] = {
    "a None sender": (
        lambda: InboundMessage("chat", None, TextContent("hi")),  # type: ignore[arg-type]
        'sender_id must be a str ("" for an authorless message), got NoneType',
    ),
    "a sender that is an int": (
        lambda: InboundMessage("chat", 5, TextContent("hi")),  # type: ignore[arg-type]
        'sender_id must be a str ("" for an authorless message), got int',
    ),
    "a None body": (
        lambda: InboundMessage("chat", "alice", TextContent(None)),  # type: ignore[arg-type]
        'content.body must be a str ("" for no text), got NoneType',
    ),
    "a None content": (
        lambda: InboundMessage("chat", "alice", None),  # type: ignore[arg-type]
        "content must be a TextContent, as in InboundMessage(channel_id, sender_id, "
        'TextContent("...")), got NoneType',
    ),
    "text for content": (
        lambda: InboundMessage("chat", "alice", "hi"),  # type: ignore[arg-type]
        "content must be a TextContent, as in InboundMessage(channel_id, sender_id, "
        'TextContent("...")), got str',
    ),
    "a None channel": (
        lambda: InboundMessage(None, "alice", TextContent("hi")),  # type: ignore[arg-type]
        "channel_id must be a str (the id of a registered channel), got NoneType",
    ),
}


@pytest.mark.parametrize(("message", "problem"), REFUSED.values(), ids=REFUSED.keys())
async def test_a_message_the_room_cannot_keep_is_refused_and_the_room_goes_on(
    kit: RoomKit, message: Message, problem: str
) -> None:
    with pytest.raises(TypeError) as caught:
        await kit.process_inbound(message(), room_id="room")

    assert str(caught.value) == problem
    assert await kit.store.list_events("room") == []
    result = await kit.process_inbound(InboundMessage("chat", "alice", TextContent("hello")))
    assert [reply.content.body for reply in result.responses] == ["ok"]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (InboundMessage("chat", "al\ud800", TextContent("hi")), "sender_id"),
        (InboundMessage("chat", "alice", TextContent("h\udc00")), "content.body"),
    ],
)
async def test_a_message_with_a_lone_surrogate_is_refused_by_name(
    kit: RoomKit, message: InboundMessage, field: str
) -> None:
    with pytest.raises(InvalidTextError, match=f"^{field} must be valid Unicode text"):
        await kit.process_inbound(message)

    assert await kit.store.list_events("room") == []


async def test_an_authorless_message_with_an_empty_body_is_taken(kit: RoomKit) -> None:
    result = await kit.process_inbound(InboundMessage("chat", "", TextContent("")))

    assert result.event.sender_id == ""
    assert [reply.content.body for reply in result.responses] == ["ok"]
