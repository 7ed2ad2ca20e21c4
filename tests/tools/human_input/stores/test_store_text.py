"""Every durable store, given what it cannot write: text UTF-8 cannot encode is refused before
it joins a batch, and a write that breaks on its own fails alone, never its batch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    PENDING,
    REJECTED,
    RESOLVED,
    Backend,
    Store,
    make_request,
)

from roomkit.core.exceptions import InvalidTextError

LONE = "\ud800"


async def test_a_settle_with_unencodable_text_is_refused_and_its_batch_lands(
    store: Store,
) -> None:
    requests = [(await store.insert(make_request()))[0] for _ in range(5)]
    ids = [request.pending_id for request in requests]

    outcomes = await asyncio.gather(
        store.settle(ids[0], RESOLVED, result="zero"),
        store.settle(ids[1], RESOLVED, result=f"one{LONE}"),
        store.settle(ids[2], REJECTED, reason=LONE),
        store.settle(ids[3], RESOLVED, result="three", settled_by=LONE),
        store.settle(ids[4], REJECTED, reason="four", settled_by="dana"),
        return_exceptions=True,
    )

    for refused, field in zip(outcomes[1:4], ("result", "reason", "settled_by"), strict=True):
        assert isinstance(refused, InvalidTextError)
        assert str(refused).startswith(f"{field} cannot be stored")
    won = [outcomes[0], outcomes[4]]
    assert [(record.status, record.settled_by) for record in won] == [  # type: ignore[union-attr]
        (RESOLVED, None),
        (REJECTED, "dana"),
    ]
    for pending_id in ids[1:4]:
        record = await store.fetch(pending_id)
        assert record is not None
        assert record.status is PENDING


@pytest.mark.parametrize(
    "field",
    ["tool_name", "room_id", "tool_call_id", "channel_id", "actor_id", "key", "arguments"],
)
async def test_a_request_with_unencodable_text_is_not_inserted(
    store: Store, backend: Backend, field: str
) -> None:
    value: Any = {"question": f"Colour{LONE}?"} if field == "arguments" else f"x{LONE}"
    request = make_request(**{field: value})

    with pytest.raises(InvalidTextError, match=f"^{field} cannot be stored"):
        await store.insert(request)

    assert request.pending_id not in await backend.stored_ids()


async def test_an_id_no_record_can_have_is_unknown(store: Store) -> None:
    assert await store.fetch(LONE) is None
    assert await store.settle(LONE, RESOLVED, result="x") is None


async def test_a_value_the_store_cannot_write_fails_alone(store: Store) -> None:
    """Past the checks (a type no driver takes), one broken write still spares its batch."""
    first, bad, last = [(await store.insert(make_request()))[0] for _ in range(3)]

    outcomes = await asyncio.gather(
        store.settle(first.pending_id, RESOLVED, result="fine"),
        store.settle(bad.pending_id, RESOLVED, result=object()),  # type: ignore[arg-type]
        store.settle(last.pending_id, RESOLVED, result="also fine"),
        return_exceptions=True,
    )

    assert isinstance(outcomes[1], Exception)
    assert [getattr(outcome, "result", None) for outcome in outcomes] == [
        "fine",
        None,
        "also fine",
    ]
    record = await store.fetch(bad.pending_id)
    assert record is not None
    assert record.status is PENDING
    assert await store.settle(bad.pending_id, RESOLVED, result="again") is not None


async def test_a_ledger_entry_with_a_lone_surrogate_is_refused_alone(store: Store) -> None:
    outcomes = await asyncio.gather(
        store.spend_once("link:first", until=None),
        store.spend_once(f"link:{LONE}", until=None),
        store.spend_once("link:last", until=None),
        return_exceptions=True,
    )

    assert outcomes[0] is outcomes[2] is True
    assert isinstance(outcomes[1], InvalidTextError)
    assert "lone surrogate" in str(outcomes[1])
