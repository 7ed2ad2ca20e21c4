"""Ids longer than a request keeps, on every store: refused at create, before anything is
stored, with the field, its length and the limit; up to the bounds, kept and found again."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import (
    MAX_ARGUMENTS_CHARS,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_SCOPED_KEY_BYTES,
)
from roomkit.tools.human_input import HumanInputHandler

Create = Callable[..., Awaitable[Any]]


async def _asked(handler: HumanInputHandler, tool: str, **ids: Any) -> Any:
    return await handler.create(tool, {"question": "Which one?"}, **ids)


async def _detached(handler: HumanInputHandler, tool: str, **ids: Any) -> Any:
    return await handler.create_detached(tool, {"question": "Which one?"}, **ids)


async def _approval(handler: HumanInputHandler, tool: str, **ids: Any) -> Any:
    return await handler.create_approval(tool, {"city": "Paris"}, approvers=["alice"], **ids)


CREATES = [_asked, _detached, _approval]
IDS = ["tool_name", "room_id", "channel_id", "actor_id", "tool_call_id"]
BOUND = dict.fromkeys(IDS, MAX_ID_CHARS) | {"tool_call_id": MAX_KEY_CHARS}
"""Each id's bound: a call id (a Temporal workflow's holds the workflow's id) as long as a key."""


def _text(length: int, *, wide: bool = False) -> str:
    """``length`` characters no index compresses: ASCII letters and digits, or (``wide``)
    characters of four bytes in UTF-8."""
    draw = random.Random(length)
    if wide:
        return "".join(chr(0x1F600 + draw.randrange(80)) for _ in range(length))
    return "".join(draw.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(length))


def _ids(**given: str) -> tuple[str, dict[str, str]]:
    ids = {"room_id": "r", "channel_id": "c", "actor_id": "alice", "tool_call_id": "t"}
    ids.update(given)
    return ids.pop("tool_name", "book"), ids


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize("field", IDS)
async def test_an_id_past_the_bound_is_refused_by_name_and_nothing_is_stored(
    make_handler: HandlerFactory, create: Create, field: str
) -> None:
    handler = make_handler()
    bound = BOUND[field]
    tool, ids = _ids(**{field: _text(bound + 1)})

    with pytest.raises(ValueError, match=f"^{field} is {bound + 1:,} characters") as caught:
        await create(handler, tool, key="k", **ids)

    assert str(caught.value) == (
        f"{field} is {bound + 1:,} characters, over the {bound:,} a request's {field} may "
        "have on every store: pass a shorter one (an id, or the digest of a long name); "
        "nothing was stored"
    )
    assert await handler.list_pending() == []


@pytest.mark.parametrize("create", CREATES)
async def test_a_key_past_the_bound_is_refused_by_name(
    make_handler: HandlerFactory, create: Create
) -> None:
    handler = make_handler()
    tool, ids = _ids()

    with pytest.raises(ValueError, match=r"^key is 1,201 characters, over the 1,200 a request's"):
        await create(handler, tool, key=_text(MAX_KEY_CHARS + 1), **ids)

    assert await handler.list_pending() == []


@pytest.mark.parametrize("create", CREATES)
async def test_a_key_whose_scope_is_too_many_bytes_is_refused_with_its_parts(
    make_handler: HandlerFactory, create: Create
) -> None:
    """A key within its bound, in characters of four bytes, with its room: past what the
    index of keys holds (PostgreSQL refused it as an unavailable store)."""
    handler = make_handler()
    tool, ids = _ids(room_id=_text(200, wide=True))

    with pytest.raises(ValueError, match=r"^key with its scope") as caught:
        await create(handler, tool, key=_text(400, wide=True), **ids)

    assert str(caught.value) == (
        "key with its scope (room_id 200, channel_id 1, actor_id 5, key 400 characters) is "
        "2,419 bytes as a store keeps it (UTF-8 JSON), over the 2,000 a "
        "store's index of keys holds: pass a shorter key (the digest of a long one), or "
        "shorter ids; nothing was stored"
    )
    assert await handler.list_pending() == []


@pytest.mark.parametrize("create", CREATES)
async def test_ids_and_key_at_their_bounds_are_kept_and_found_again(
    make_handler: HandlerFactory, create: Create
) -> None:
    """Every id at its bound and the longest key: 1,981 bytes of index entry."""
    handler = make_handler()
    tool, ids = _ids(**{field: _text(BOUND[field]) + field for field in IDS})
    tool, ids = tool[:MAX_ID_CHARS], {name: value[: BOUND[name]] for name, value in ids.items()}
    key = _text(MAX_KEY_CHARS)

    first = await create(handler, tool, key=key, **ids)
    again = await create(handler, tool, key=key, **ids)

    assert again.pending_id == first.pending_id
    assert (first.tool_name, first.room_id, first.actor_id) == (
        tool,
        ids["room_id"],
        ids["actor_id"],
    )


@pytest.mark.parametrize("create", CREATES)
async def test_ids_at_the_bound_in_four_byte_characters_are_kept(
    make_handler: HandlerFactory, create: Create
) -> None:
    """1,024 bytes of UTF-8 each: within PostgreSQL's indexes of the room and the actor."""
    handler = make_handler()
    tool, ids = _ids(**{field: _text(MAX_ID_CHARS, wide=True) for field in IDS})

    request = await create(handler, tool, **ids)

    [kept] = await handler.list_pending()
    assert kept.pending_id == request.pending_id
    assert kept.room_id == ids["room_id"]


async def test_a_key_at_the_byte_bound_is_kept(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    scope = len('["r","c","alice",""]')
    key = _text((MAX_SCOPED_KEY_BYTES - scope) // 4, wide=True)

    first = await handler.create(
        "ask", {"question": "Which one?"}, room_id="r", channel_id="c", actor_id="alice", key=key
    )
    again = await handler.create(
        "ask", {"question": "Which one?"}, room_id="r", channel_id="c", actor_id="alice", key=key
    )

    assert again.pending_id == first.pending_id


def _approver_too_long(name: str) -> str:
    return (
        f"{name} hold an actor id of 257 characters, over the 256 an actor id may have on "
        "every store: pass a shorter one (an id, or the digest of a long name); nothing was "
        "stored"
    )


async def test_an_approver_past_the_bound_is_refused(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    approvers = ["alice", _text(MAX_ID_CHARS + 1)]

    with pytest.raises(ValueError, match=r"^approvers hold an actor id") as caught:
        await handler.create_approval("book", {"city": "Paris"}, approvers=approvers)

    assert str(caught.value) == _approver_too_long("approvers")
    assert await handler.list_pending() == []


async def test_an_added_approver_past_the_bound_is_refused(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create_approval("book", {"city": "Paris"}, approvers=["alice"])

    with pytest.raises(ValueError, match=r"^actors hold an actor id") as caught:
        await handler.add_approvers(request.pending_id, [_text(MAX_ID_CHARS + 1)])

    assert str(caught.value) == _approver_too_long("actors")
    [kept] = await handler.list_pending()
    assert kept.approvers == ("alice",)


async def test_an_approver_no_store_can_keep_is_refused(make_handler: HandlerFactory) -> None:
    """Refused alike on every store, the memory store included, before anything is stored."""
    handler = make_handler()

    with pytest.raises(InvalidTextError, match=r"^approvers hold an actor id with a lone"):
        await handler.create_approval("book", {"city": "Paris"}, approvers=["alice", "\udc80"])
    request = await handler.create_approval("book", {"city": "Paris"}, approvers=["alice"])
    with pytest.raises(InvalidTextError, match=r"^actors hold an actor id with a lone"):
        await handler.add_approvers(request.pending_id, ["\udc80"])

    [kept] = await handler.list_pending()
    assert kept.approvers == ("alice",)


async def test_the_longest_approval_keeps_its_created_entry(make_handler: HandlerFactory) -> None:
    """The longest arguments and description, every id and an approver at their bound:
    within what a history entry holds."""
    handler = make_handler()
    arguments = {"note": "x" * (MAX_ARGUMENTS_CHARS - len('{"note":""}'))}
    tool, ids = _ids(**{field: _text(BOUND[field]) for field in IDS})

    request = await handler.create_approval(
        tool,
        arguments,
        approvers=[_text(MAX_ID_CHARS)],
        description="Book it." * 500,
        key=_text(MAX_KEY_CHARS),
        **ids,
    )

    [created, *_] = await handler.history(request.pending_id)
    assert created["arguments"] == arguments
    assert created["room"] == ids["room_id"]
