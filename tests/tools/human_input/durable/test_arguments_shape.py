"""Arguments nested deeper than a request keeps, or holding an integer longer than a number
in a request may be, on every store: refused at create with one ``ArgumentsTooLargeError``
saying what the limit is and where it was passed, before anything is stored; at the limits,
kept, read back and answered; the requests made around a refused one are kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory
from tests.tools.human_input.durable.test_arguments_size import CREATES, Create

from roomkit.core.exceptions import ArgumentsTooLargeError, InvalidAnswerError
from roomkit.models.shown import shown
from roomkit.tools.approvals import Edit
from roomkit.tools.human_input.checks import MAX_ARGUMENTS_DEPTH, MAX_NUMBER_CHARS


def nested(levels: int) -> dict[str, Any]:
    """Arguments that nest ``levels`` deep: their own object, then lists."""
    value: Any = "leaf"
    for _ in range(levels - 1):
        value = [value]
    return {"tree": value}


def _deep_at(levels: int) -> str:
    return shown("tree" + "[0]" * (levels - 2))


def _too_deep(levels: int) -> str:
    return (
        "the arguments nest objects and lists more than 24 levels deep (level 25 at "
        f"{_deep_at(25)}), past what a request keeps and a person's edit can send back: "
        "flatten them, or pass the nested part as JSON text"
    )


def _too_long(length: int, where: str) -> str:
    return (
        f"the arguments hold an integer {length:,} characters long at {where!r}, past the "
        "100 characters a number in a request may have (its digits and sign): send it as a "
        "string"
    )


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "3,000 levels": (nested(3_000), _too_deep(3_000)),
    "one level past the limit": (nested(MAX_ARGUMENTS_DEPTH + 1), _too_deep(25)),
    "an object past the limit": (
        {"q": [{"options": nested(MAX_ARGUMENTS_DEPTH)}]},
        "the arguments nest objects and lists more than 24 levels deep (level 25 at "
        f"{'q[0].options.tree' + '[0]' * 20!r}), past what a request keeps and a person's "
        "edit can send back: flatten them, or pass the nested part as JSON text",
    ),
    "an integer of 5,000 digits": ({"n": 10**4_999}, _too_long(5_000, "n")),
    "an integer of 101 digits": ({"q": [{"n": 10**100}]}, _too_long(101, "q[0].n")),
    "a negative integer of 100 digits": ({"n": -(10**99)}, _too_long(101, "n")),
}


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize(("arguments", "message"), REFUSED.values(), ids=REFUSED.keys())
async def test_arguments_past_the_depth_or_number_limit_are_refused_and_nothing_is_stored(
    make_handler: HandlerFactory, create: Create, arguments: dict[str, Any], message: str
) -> None:
    handler = make_handler()
    before = await create(handler, {"question": "First?"})

    with pytest.raises(ArgumentsTooLargeError) as caught:
        await create(handler, arguments)

    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == message
    after = await create(handler, {"question": "Third?", "n": 10**20})
    pending = {request.pending_id for request in await handler.list_pending()}
    assert pending == {before.pending_id, after.pending_id}  # type: ignore[attr-defined]


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize(
    "arguments", [{"\x00" * 200: nested(30)}, {"\x00" * 200: 10**200}], ids=["deep", "long"]
)
async def test_a_path_of_escaped_characters_is_quoted_cut_short(
    make_handler: HandlerFactory, create: Create, arguments: dict[str, Any]
) -> None:
    """Cut once escaped: 80 control characters quote as 320."""
    with pytest.raises(ArgumentsTooLargeError) as caught:
        await create(make_handler(), arguments)
    assert "at '\\x00\\x00" in str(caught.value)
    assert len(str(caught.value)) < 300, str(caught.value)


AT_THE_LIMITS = {
    "24 levels": nested(MAX_ARGUMENTS_DEPTH),
    "an integer of 100 digits": {"n": 10**MAX_NUMBER_CHARS - 1},
    "a negative integer of 99 digits": {"n": -(10 ** (MAX_NUMBER_CHARS - 1)) + 1},
    "both, side by side": {
        "deep": nested(MAX_ARGUMENTS_DEPTH - 1),
        "numbers": [10**99, -(10**98), 2**64, -(2**63)],
    },
}


@pytest.mark.parametrize("create", CREATES)
@pytest.mark.parametrize("arguments", AT_THE_LIMITS.values(), ids=AT_THE_LIMITS.keys())
async def test_arguments_at_the_limits_are_kept_read_back_and_answered(
    make_handler: HandlerFactory, create: Create, arguments: dict[str, Any]
) -> None:
    handler = make_handler()

    request = await create(handler, arguments)

    pending_id = request.pending_id  # type: ignore[attr-defined]
    read = await handler.get_request(pending_id)
    assert read is not None
    assert read.arguments == arguments
    [created, *_] = await handler.history(pending_id)
    assert created["arguments"] == arguments
    answer = '{"decision":"approve"}' if read.kind == "approval" else "yes"
    assert await handler.aresolve(pending_id, answer, by="alice") is True
    assert await handler.wait(pending_id) == answer


@pytest.mark.parametrize(
    "arguments",
    [nested(MAX_ARGUMENTS_DEPTH + 1), {"n": 10**MAX_NUMBER_CHARS}],
    ids=["one level too deep", "a number too long"],
)
async def test_an_edit_past_the_limits_decides_nothing(
    make_handler: HandlerFactory, arguments: dict[str, Any]
) -> None:
    """An edit would make them the call's arguments: it is refused as create refuses them,
    and the approval stays open for a decision it can take."""
    handler = make_handler()
    held = await handler.create_approval("book", {"n": 1}, approvers=["alice"])
    text = json.dumps({"decision": "edit", "arguments": arguments})

    with pytest.raises(InvalidAnswerError, match=r"^an edit.s arguments must fit in a request"):
        await handler.aresolve(held.pending_id, text, by="alice")

    [still] = await handler.list_pending()
    assert (still.pending_id, still.arguments) == (held.pending_id, {"n": 1})
    edited = Edit({"n": 2})
    assert await handler.aresolve(held.pending_id, edited, by="alice") is True
    assert await handler.wait(held.pending_id) == edited
