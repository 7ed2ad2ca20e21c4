"""Where a settle came from (``surface=``), within what every store keeps: at most
``MAX_ID_CHARS`` characters of text, a longer one refused by name before anything is
written."""

from __future__ import annotations

from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.stores import new_entry
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler, create_decided

ARGUMENTS = {"city": "Paris"}
LONG_SURFACE = "s" * (MAX_ID_CHARS + 1)
TOO_LONG = (
    f"surface is {MAX_ID_CHARS + 1} characters, over the {MAX_ID_CHARS} a surface may have on "
    'every store: name where the answer came from in a word ("desk", "slack", "cli"); '
    "nothing was stored"
)


async def _question(handler: HumanInputHandler) -> Any:
    return await handler.create("ask", {"question": "Which one?"})


async def _approval(handler: HumanInputHandler) -> Any:
    return await handler.create_approval("book", ARGUMENTS, approvers=["alice"])


async def _resolve(handler: HumanInputHandler, pending_id: str, surface: str) -> Any:
    return await handler.aresolve(pending_id, "Yes", by="alice", surface=surface)


async def _decide(handler: HumanInputHandler, pending_id: str, surface: str) -> Any:
    return await handler.aresolve(pending_id, approve(), by="alice", surface=surface)


async def _reject(handler: HumanInputHandler, pending_id: str, surface: str) -> Any:
    return await handler.areject(pending_id, "No", by="alice", surface=surface)


async def _escalate(handler: HumanInputHandler, pending_id: str, surface: str) -> Any:
    return await handler.add_approvers(pending_id, ["bob"], by="alice", surface=surface)


SETTLES = [
    (_question, _resolve),
    (_question, _reject),
    (_approval, _decide),
    (_approval, _reject),
    (_question, _escalate),
    (_approval, _escalate),
]


@pytest.mark.parametrize(
    ("make", "settle"),
    SETTLES,
    ids=["answer", "reject", "decide", "reject-approval", "escalate", "escalate-approval"],
)
async def test_a_surface_past_the_bound_is_refused_before_anything_is_written(
    make_handler: HandlerFactory, make: Any, settle: Any
) -> None:
    handler = make_handler()
    request = await make(handler)
    before = await handler.history(request.pending_id)

    with pytest.raises(ValueError, match=r"^surface is 257 characters") as caught:
        await settle(handler, request.pending_id, LONG_SURFACE)

    assert str(caught.value) == TOO_LONG
    [kept] = await handler.list_pending()
    assert kept.approvers == request.approvers
    assert await handler.history(request.pending_id) == before


@pytest.mark.parametrize(
    ("make", "settle"), SETTLES[:4], ids=["answer", "reject", "decide", "reject-approval"]
)
async def test_a_surface_at_the_bound_is_kept(
    make_handler: HandlerFactory, make: Any, settle: Any
) -> None:
    handler = make_handler()
    request = await make(handler)

    assert await settle(handler, request.pending_id, "s" * MAX_ID_CHARS)

    settled = (await handler.history(request.pending_id))[-1]
    assert (settled["type"], settled["surface"]) == ("settled", "s" * MAX_ID_CHARS)


async def test_an_approval_made_through_a_long_surface_is_refused(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()

    with pytest.raises(ValueError, match=r"^surface is 257 characters") as caught:
        await handler.create_approval("book", ARGUMENTS, approvers=["alice"], surface=LONG_SURFACE)
    with pytest.raises(ValueError, match=r"^surface is 257 characters") as decided:
        await create_decided(
            handler, "book", ARGUMENTS, approve(), by="policy:p", surface=LONG_SURFACE
        )

    assert str(caught.value) == str(decided.value) == TOO_LONG
    assert await handler.list_pending() == []
    assert await handler.list_settled() == []


async def test_a_surface_that_is_no_text_is_refused(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await _question(handler)

    with pytest.raises(TypeError, match=r"^surface must be a str, got int$"):
        await handler.aresolve(request.pending_id, "Yes", surface=7)  # type: ignore[arg-type]

    assert len(await handler.list_pending()) == 1


LONG_BY = "a" * (MAX_ID_CHARS + 1)


@pytest.mark.parametrize(
    "settle",
    [
        lambda handler, pending_id: handler.aresolve(pending_id, "Yes", by=LONG_BY),
        lambda handler, pending_id: handler.areject(pending_id, "No", by=LONG_BY),
        lambda handler, pending_id: handler.add_approvers(pending_id, ["bob"], by=LONG_BY),
    ],
    ids=["answer", "reject", "escalate"],
)
async def test_who_decided_past_the_bound_is_refused_before_anything_is_written(
    make_handler: HandlerFactory, settle: Any
) -> None:
    """``by=`` is an actor id, kept with the outcome and in the history: one longer than any
    id a store keeps is refused by name, and the request is left as it was."""
    handler = make_handler()
    request = await _question(handler)
    before = await handler.history(request.pending_id)

    with pytest.raises(ValueError, match=r"^by is 257 characters") as caught:
        await settle(handler, request.pending_id)

    assert str(caught.value) == (
        f"by is {MAX_ID_CHARS + 1} characters, over the {MAX_ID_CHARS} an actor id may have on "
        "every store: give the actor's id; nothing was stored"
    )
    [kept] = await handler.list_pending()
    assert kept.approvers == request.approvers
    assert await handler.history(request.pending_id) == before
    assert await handler.aresolve(request.pending_id, "Yes", by="a" * MAX_ID_CHARS)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"surface": LONG_SURFACE}, TOO_LONG),
        (
            {"actor": LONG_BY},
            f"actor is {MAX_ID_CHARS + 1} characters, over the {MAX_ID_CHARS} an actor id may "
            "have on every store: give the actor's id; nothing was stored",
        ),
    ],
    ids=["surface", "actor"],
)
async def test_an_entry_recorded_past_the_bounds_is_refused_before_anything_is_written(
    make_handler: HandlerFactory, fields: dict[str, str], message: str
) -> None:
    """``record()`` holds an entry's ``surface`` and ``actor`` to what a settle's
    ``surface`` and ``by`` are held to."""
    handler = make_handler()
    request = await _question(handler)
    before = await handler.history(request.pending_id)

    with pytest.raises(ValueError, match=r"^(surface|actor) is 257 characters") as caught:
        await handler.record(request.pending_id, new_entry("shown", **fields))

    assert str(caught.value) == message
    assert await handler.history(request.pending_id) == before
    at_the_bound = {name: value[:MAX_ID_CHARS] for name, value in fields.items()}
    await handler.record(request.pending_id, new_entry("shown", **at_the_bound))
    shown = (await handler.history(request.pending_id))[-1]
    assert {name: shown[name] for name in fields} == at_the_bound
