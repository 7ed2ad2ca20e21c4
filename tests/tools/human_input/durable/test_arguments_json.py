"""Arguments JSON cannot write (bytes, a set, an object, a key that is not text), on every
store: refused at create with the same ``TypeError``, naming where, before anything is
stored; the requests made around them are kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.tools.human_input import HumanInputHandler

Create = Callable[[HumanInputHandler, dict[Any, Any]], Awaitable[object]]


async def _asked(handler: HumanInputHandler, arguments: dict[Any, Any]) -> object:
    return await handler.create("AskUserQuestion", arguments, room_id="r", actor_id="alice")


async def _detached(handler: HumanInputHandler, arguments: dict[Any, Any]) -> object:
    return await handler.create_detached("AskUserQuestion", arguments, room_id="r")


async def _approval(handler: HumanInputHandler, arguments: dict[Any, Any]) -> object:
    return await handler.create_approval("book", arguments, approvers=["alice"], room_id="r")


CREATES = [_asked, _detached, _approval]

NOT_JSON: dict[str, tuple[dict[Any, Any], str]] = {
    "an object": ({"x": object()}, "a value of type object at 'x'"),
    "a set": ({"seats": {1, 2}}, "a value of type set at 'seats'"),
    "bytes": ({"file": b"ab"}, "a value of type bytes at 'file'"),
    "nested bytes": (
        {"questions": [{"question": "Q?", "raw": b"ab"}]},
        "a value of type bytes at 'questions[0].raw'",
    ),
    "a key that is an int": ({1: "x"}, "a key of type int (1) at the top level"),
    "a nested key that is an int": (
        {"sizes": {"a": 1, 2: "b"}},
        "a key of type int (2) in 'sizes'",
    ),
    "a key that is None": ({"q": [{None: "x"}]}, "a key of type NoneType (None) in 'q[0]'"),
    "a key that is a tuple": ({(1, 2): "x"}, "a key of type tuple ((1, 2)) at the top level"),
}


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize(("arguments", "where"), NOT_JSON.values(), ids=NOT_JSON.keys())
async def test_arguments_that_are_not_json_are_refused_and_nothing_is_stored(
    make_handler: HandlerFactory, create: Create, arguments: dict[Any, Any], where: str
) -> None:
    handler = make_handler()

    with pytest.raises(TypeError) as caught:
        await create(handler, arguments)

    assert str(caught.value) == (
        f"arguments must be JSON, but hold {where}: pass only dicts with str keys, lists, "
        "strs, numbers, booleans and None (bytes or an object as text, a set as a list)"
    )
    assert await handler.list_pending() == []


async def test_the_requests_around_a_refused_one_are_kept(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    before = await handler.create("AskUserQuestion", {"question": "First?"})
    with pytest.raises(TypeError, match="a value of type bytes at 'file'"):
        await handler.create("AskUserQuestion", {"question": "Second?", "file": b"ab"})
    after = await handler.create("AskUserQuestion", {"question": "Third?", "n": (1, 2.5, True)})

    pending = {request.pending_id for request in await handler.list_pending()}
    assert pending == {before.pending_id, after.pending_id}
    assert await handler.aresolve(before.pending_id, "one") is True
    assert await handler.wait(before.pending_id) == "one"
