"""``add_answer_check``: a check that cannot say why no one takes an answer lets it through."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler


@pytest.mark.parametrize(
    "reason", [True, 3, b"ended", "run \ud800 ended"], ids=["bool", "int", "bytes", "surrogate"]
)
async def test_a_check_giving_a_reason_that_is_no_text_lets_the_answer_through(
    reason: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A reason that is not text a store can hold is a check that failed: logged, and the
    answer settles the request, never an error about a ``reason`` the caller did not give."""
    handler = HumanInputHandler()

    async def check(request: PendingInput) -> Any:
        return reason

    handler.add_answer_check(check)
    request = await handler.create("AskUserQuestion", {"question": "Q?"}, room_id="r")
    with caplog.at_level(logging.ERROR, logger="roomkit.tools.human_input"):
        assert await handler.aresolve(request.pending_id, "yes") is True
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.status, settled.result) == (PendingInputStatus.RESOLVED, "yes")
    assert "An answer check on" in caplog.text


async def test_a_check_giving_a_reason_withdraws_the_request_with_it() -> None:
    handler = HumanInputHandler()

    async def check(request: PendingInput) -> str:
        return "the run ended"

    handler.add_answer_check(check)
    request = await handler.create("AskUserQuestion", {"question": "Q?"}, room_id="r")
    assert await handler.areject(request.pending_id, "no") is False
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.status, settled.reject_reason) == (
        PendingInputStatus.REJECTED,
        "the run ended",
    )


def test_a_check_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="an answer check must be an async callable"):
        HumanInputHandler().add_answer_check("not callable")  # type: ignore[arg-type]


async def test_an_undone_check_is_asked_no_more_and_undoing_again_is_harmless() -> None:
    handler = HumanInputHandler()
    asked: list[str] = []

    async def check(request: PendingInput) -> None:
        asked.append(request.pending_id)

    undo = handler.add_answer_check(check)
    first = await handler.create("AskUserQuestion", {"question": "Q?"}, room_id="r")
    assert await handler.aresolve(first.pending_id, "yes") is True
    undo()
    undo()
    second = await handler.create("AskUserQuestion", {"question": "Q?"}, room_id="r")
    assert await handler.aresolve(second.pending_id, "yes") is True
    assert asked == [first.pending_id]
