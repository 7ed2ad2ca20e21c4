"""Text UTF-8 cannot encode (a lone surrogate), on every store: refused where it enters,
never failing the honest settles that share a batch with it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    InvalidAnswerError,
    InvalidTextError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.ladder import Ladder, default, escalate

LONE = "caf\ud800"
"""What ``json.loads('"caf\\ud800"')`` gives: text with a lone surrogate at character 3."""


async def test_an_answer_with_a_lone_surrogate_is_refused_and_the_request_stays_open(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Which café?"})
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))

    with pytest.raises(InvalidAnswerError, match=r"lone surrogate \(U\+D800\) at character 3"):
        await handler.aresolve(request.pending_id, LONE)

    assert await handler.aresolve(request.pending_id, "Café de Flore") is True
    assert await waiting == "Café de Flore"


async def test_one_bad_answer_in_a_burst_fails_alone(make_handler: HandlerFactory) -> None:
    """The settles that share a batch with the refused one all land."""
    asker, desk = make_handler(), make_handler()
    requests = [await asker.create("AskUserQuestion", {"question": f"Q{n}?"}) for n in range(5)]
    ids = [request.pending_id for request in requests]
    waits = [asyncio.create_task(asker.wait(pending_id, timeout=30)) for pending_id in ids]

    outcomes = await asyncio.gather(
        desk.aresolve(ids[0], "zero", by="alice"),
        desk.aresolve(ids[1], "\udc00", by="mallory"),
        desk.aresolve(ids[2], "two", by="bob"),
        desk.areject(ids[3], "not three", by="carol"),
        desk.aresolve(ids[4], "four"),
        return_exceptions=True,
    )

    assert outcomes[0] is outcomes[2] is outcomes[3] is outcomes[4] is True
    assert isinstance(outcomes[1], InvalidAnswerError)
    assert [await waits[n] for n in (0, 2, 4)] == ["zero", "two", "four"]
    with pytest.raises(HumanInputRejectedError, match="not three"):
        await waits[3]
    assert await desk.aresolve(ids[1], "one") is True
    assert await waits[1] == "one"


@pytest.mark.parametrize(
    ("settle", "field"),
    [
        (lambda h, i: h.areject(i, LONE), "reason"),
        (lambda h, i: h.areject(i, "no", by=LONE), "by"),
        (lambda h, i: h.aresolve(i, "yes", by=LONE), "by"),
    ],
)
async def test_a_reason_or_actor_with_a_lone_surrogate_is_refused_by_name(
    make_handler: HandlerFactory, settle: Any, field: str
) -> None:
    handler = make_handler()
    request = await handler.create("ConfirmAction", {"action": "deploy"})

    with pytest.raises(InvalidTextError, match=f"^{field} must be valid Unicode text"):
        await settle(handler, request.pending_id)

    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.status is PendingInputStatus.PENDING


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"tool_name": "Ask\ud800"}, "tool_name"),
        ({"room_id": LONE}, "room_id"),
        ({"tool_call_id": LONE}, "tool_call_id"),
        ({"channel_id": LONE}, "channel_id"),
        ({"actor_id": LONE}, "actor_id"),
        ({"key": LONE}, "key"),
        ({"arguments": {"question": LONE}}, "arguments"),
        ({"arguments": {"q\udfff": "key"}}, "arguments"),
        (
            {"arguments": {"questions": [{"question": "Size?", "options": [{"label": LONE}]}]}},
            "arguments",
        ),
    ],
)
async def test_a_request_with_unencodable_text_is_not_created(
    make_handler: HandlerFactory, options: dict[str, Any], field: str
) -> None:
    handler = make_handler()
    values: dict[str, Any] = {"tool_name": "AskUserQuestion", "arguments": {"question": "Q?"}}
    values |= options

    with pytest.raises(InvalidTextError, match=f"^{field} must be valid Unicode text") as caught:
        await handler.create(values.pop("tool_name"), values.pop("arguments"), **values)

    assert "lone surrogate" in str(caught.value)
    str(caught.value).encode()  # the message itself can be sent anywhere
    assert await handler.list_pending() == []


async def test_a_nested_argument_is_named_by_its_path(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    arguments = {"questions": [{"question": "Size?", "options": [{"label": "S"}, {"label": LONE}]}]}

    with pytest.raises(InvalidTextError, match=r"'questions\[0\]\.options\[1\]\.label'"):
        await handler.create("AskUserQuestion", arguments)


async def test_an_id_no_request_can_have_is_unknown(make_handler: HandlerFactory) -> None:
    handler = make_handler()

    assert await handler.get_request(LONE) is None
    assert await handler.aresolve(LONE, "yes") is False
    assert await handler.areject(LONE, "no") is False
    assert await handler.arelease(LONE) is False
    with pytest.raises(UnknownRequestError):
        await handler.wait(LONE, timeout=1)


async def test_the_synchronous_settles_refuse_it_too() -> None:
    handler = HumanInputHandler()
    request = await handler.create("AskUserQuestion", {"question": "Q?"})

    with pytest.raises(InvalidAnswerError, match="result must be valid Unicode text"):
        handler.resolve(request.pending_id, LONE)
    with pytest.raises(InvalidTextError, match="reason must be valid Unicode text"):
        handler.reject(request.pending_id, LONE)

    assert handler.resolve(request.pending_id, "fine") is True
    assert await handler.wait(request.pending_id) == "fine"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
async def test_arguments_holding_a_number_json_cannot_carry_are_refused(
    make_handler: HandlerFactory, number: float
) -> None:
    """``json.loads('{"width": NaN}')`` parses; no person could be shown it (the desk's JSON
    has no such number), so no store takes it."""
    handler = make_handler()
    arguments = {"layout": {"sizes": [1.5, number]}}
    with pytest.raises(ValueError, match=r"'layout\.sizes\[1\]', a number JSON cannot carry"):
        await handler.create("AskUserQuestion", {"question": "Fine?", **arguments})
    with pytest.raises(ValueError, match="a number JSON cannot carry"):
        await handler.create_approval("resize", arguments, approvers=["ann"])
    assert await handler.list_pending() == []


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("ladder", "field"),
    [
        (Ladder(on_expiry=default(LONE)), r"ladder\.on_expiry"),
        (Ladder(escalate(60, to=LONE)), r"ladder escalate\(after=60, to=\.\.\.\)"),
    ],
)
async def test_a_ladder_no_history_could_record_is_refused_where_it_is_given(
    make_handler: HandlerFactory, ladder: Ladder, field: str
) -> None:
    """Its default failed only when a question expired, as a history entry no store keeps:
    the tool handler refuses the ladder, naming the field, before anything is asked."""
    handler = make_handler()
    with pytest.raises(InvalidTextError, match=f"^{field} must be valid Unicode text"):
        HumanInputToolHandler({"ask"}, timeout=600, handler=handler, ladder=ladder)
    assert await handler.list_pending() == []
