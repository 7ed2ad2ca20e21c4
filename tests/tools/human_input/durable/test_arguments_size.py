"""Arguments longer than a request keeps, on every store: refused at create, before anything
is written, with how long they are and what to send instead; up to the limit, kept."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import ArgumentsTooLargeError
from roomkit.tools.human_input import HumanInputHandler

LIMIT = 56_000
"""The longest arguments a request keeps, as JSON."""

Create = Callable[[HumanInputHandler, dict[str, Any]], Awaitable[object]]


async def _asked(handler: HumanInputHandler, arguments: dict[str, Any]) -> object:
    return await handler.create("AskUserQuestion", arguments, room_id="r", actor_id="alice")


async def _detached(handler: HumanInputHandler, arguments: dict[str, Any]) -> object:
    return await handler.create_detached("AskUserQuestion", arguments, room_id="r")


async def _approval(handler: HumanInputHandler, arguments: dict[str, Any]) -> object:
    return await handler.create_approval(
        "book", arguments, approvers=["alice"], room_id="r", description="Book it." * 500
    )


CREATES = [_asked, _detached, _approval]


def _json_length(arguments: dict[str, Any]) -> int:
    return len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))


def _question(count: int, fill: str) -> dict[str, Any]:
    return {"question": fill * count}


def _longest(fill: str, *, over: bool = False) -> dict[str, Any]:
    """The question of ``fill`` repeated whose arguments are the longest within the limit as
    JSON (with ``over``, one ``fill`` more: the shortest past it)."""
    spelled = len(json.dumps(fill, ensure_ascii=False)) - 2
    count = (LIMIT - _json_length(_question(0, fill))) // spelled
    arguments = _question(count + over, fill)
    assert (_json_length(arguments) > LIMIT) is over
    return arguments


TOO_LARGE = {
    "one long text": _longest("x", over=True),
    "escaped control characters": _longest("\x01", over=True),
    "non-ASCII text": _longest("é", over=True),
    "nested options": {
        "questions": [
            {
                "question": "Which one?",
                "options": [{"label": f"{n}", "description": "d" * 10_000} for n in range(6)],
                "multiSelect": False,
            }
        ]
    },
}


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize("arguments", TOO_LARGE.values(), ids=TOO_LARGE.keys())
async def test_arguments_past_the_limit_are_refused_and_nothing_is_stored(
    make_handler: HandlerFactory, create: Create, arguments: dict[str, Any]
) -> None:
    handler = make_handler()
    size = _json_length(arguments)

    with pytest.raises(ArgumentsTooLargeError) as caught:
        await create(handler, arguments)

    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        f"the arguments are {size:,} characters as JSON, over the 56,000 a request keeps: "
        "shorten them (the question, its options), or pass what identifies large content "
        "(an id, a URL), not the content"
    )
    assert await handler.list_pending() == []


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize("fill", ["x", "\x01", "é"])
async def test_arguments_at_the_limit_are_kept_with_their_history(
    make_handler: HandlerFactory, create: Create, fill: str
) -> None:
    """The longest arguments fit in the request's created entry on a durable store, with an
    approval's description and approvers beside them."""
    handler = make_handler()
    arguments = _longest(fill)

    request = await create(handler, arguments)

    pending_id = request.pending_id  # type: ignore[attr-defined]
    [created, *_] = await handler.history(pending_id)
    assert created["arguments"] == arguments


def _shared(doublings: int) -> list[Any]:
    """A list of two references to one list, ``doublings`` deep: a few dozen lists that JSON
    writes out as ``2 ** doublings`` ones."""
    shared: list[Any] = [1]
    for _ in range(doublings):
        shared = [shared, shared]
    return shared


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize(
    "arguments",
    [
        {"tree": _shared(40)},
        {"pages": ["x" * 100_000] * 1_000},
        # Its entries alone (two characters each at least) are past the 224,000 the walk
        # reads before it stops, as 112,000 and more are.
        {"options": {f"o{n}": n for n in range(120_000)}},
    ],
    ids=["a list shared down 40 levels", "one text in many places", "a wide object"],
)
async def test_arguments_that_json_writes_out_past_any_limit_are_refused_at_once(
    make_handler: HandlerFactory, create: Create, arguments: dict[str, Any]
) -> None:
    """Arguments whose JSON would take terabytes (a value held in many places is written
    once for each) are refused without writing it."""
    handler = make_handler()

    with pytest.raises(
        ArgumentsTooLargeError, match=r"^the arguments are at least [\d,]+ "
    ) as caught:
        await create(handler, arguments)

    assert "a value held in several places is written once for each" in str(caught.value)
    assert await handler.list_pending() == []
    kept = await create(handler, {"question": "Still asking?"})
    pending = [request.pending_id for request in await handler.list_pending()]
    assert pending == [kept.pending_id]  # type: ignore[attr-defined]


async def test_arguments_sharing_a_value_within_the_limit_are_kept(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    arguments = {"tree": _shared(12), "again": "é" * 1_000}

    request = await handler.create("AskUserQuestion", arguments)

    [created, *_] = await handler.history(request.pending_id)
    assert created["arguments"] == json.loads(json.dumps(arguments))


class _Counted(dict[str, Any]):
    """Arguments that count the reads of their entries (each walk over them is one)."""

    def __init__(self, entries: dict[str, Any]) -> None:
        super().__init__(entries)
        self.reads = 0


def _counting(read: Callable[..., Any]) -> Callable[..., Any]:
    def counted(self: _Counted) -> Any:
        self.reads += 1
        return read(self)

    return counted


for _read in ("items", "values", "keys", "__iter__"):
    setattr(_Counted, _read, _counting(getattr(dict, _read)))


@pytest.mark.parametrize("create", CREATES)
async def test_arguments_far_too_large_are_refused_after_one_read_at_most(
    make_handler: HandlerFactory, create: Create
) -> None:
    """Their size is checked first, and its walk stops at the object's length: no other
    check reads their 200,000 entries."""
    handler = make_handler()
    arguments = _Counted({f"o{n}": n for n in range(200_000)})

    with pytest.raises(
        ArgumentsTooLargeError, match=r"^the arguments are at least 400,001 characters as JSON"
    ):
        await create(handler, arguments)

    assert arguments.reads <= 1
    assert await handler.list_pending() == []


@pytest.mark.parametrize(
    "wrong",
    ["\ud800", float("nan")],
    ids=["a lone surrogate", "NaN"],
)
async def test_arguments_too_large_and_wrong_otherwise_are_refused_as_too_large(
    make_handler: HandlerFactory, wrong: object
) -> None:
    handler = make_handler()
    arguments = {"question": "x" * LIMIT, "also": wrong}

    with pytest.raises(ArgumentsTooLargeError, match=r"^the arguments are 56,0\d\d characters"):
        await _asked(handler, arguments)
    assert await handler.list_pending() == []
