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
