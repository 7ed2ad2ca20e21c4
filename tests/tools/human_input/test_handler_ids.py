"""HumanInputHandler refuses a pending id or a channel id that is no text, naming it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input import HumanInputHandler

SHOWN = {"type": "shown", "at": "2026-01-01T00:00:00+00:00"}

BY_PENDING_ID: list[Callable[[HumanInputHandler, Any], object]] = [
    lambda h, i: h.resolve(i, "yes"),
    lambda h, i: h.reject(i),
    lambda h, i: h.release(i),
    lambda h, i: h.aresolve(i, "yes"),
    lambda h, i: h.areject(i),
    lambda h, i: h.arelease(i),
    lambda h, i: h.wait(i, timeout=0),
    lambda h, i: h.wait_settled(i, timeout=0),
    lambda h, i: h.get_request(i),
    lambda h, i: h.history(i),
    lambda h, i: h.record(i, SHOWN),
    lambda h, i: h.record_at(i, SHOWN, seq=1),
    lambda h, i: h.add_approvers(i, ["bob"]),
]


async def _call(made: object) -> object:
    if isinstance(made, Awaitable):
        return await made
    return made


@pytest.mark.parametrize("method", BY_PENDING_ID)
@pytest.mark.parametrize("pending_id", [["p1"], 5, None])
async def test_a_pending_id_that_is_no_str_is_refused_by_name(
    handler: HumanInputHandler,
    method: Callable[[HumanInputHandler, Any], object],
    pending_id: object,
) -> None:
    """An unhashable id gets no bare "unhashable type", an int is not taken for unknown."""
    pending = await handler.create("Ask", {})

    with pytest.raises(
        TypeError, match=f"^pending_id must be a str, got {type(pending_id).__name__}$"
    ):
        await _call(method(handler, pending_id))
    assert handler.pending == {pending.pending_id: pending}


async def _noted(request: PendingInput) -> None:
    return None


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda h: h.close(channel_id=5), "channel_id must be a str or None, got int"),
        (lambda h: h.close(channel_id=["c"]), "channel_id must be a str or None, got list"),
        (
            lambda h: h.close(channel_id="c", registration="1"),
            r"registration must be None or the int set_on_input_required\(\) returned, got str",
        ),
        (lambda h: h.set_on_input_required(5, _noted), "channel_id must be a str, got int"),
        (lambda h: h.is_closed_for(["c"]), "channel_id must be a str, got list"),
    ],
)
async def test_a_channel_id_that_is_no_str_is_refused_by_name(
    handler: HumanInputHandler, call: Callable[[HumanInputHandler], object], says: str
) -> None:
    """``close(channel_id=5)`` closes nothing silently: it says what it takes."""
    pending = await handler.create("Ask", {}, channel_id="c")

    with pytest.raises(TypeError, match=f"^{says}$"):
        await _call(call(handler))
    assert not handler.closed
    assert not handler.is_closed_for("c")
    assert handler.pending == {pending.pending_id: pending}
