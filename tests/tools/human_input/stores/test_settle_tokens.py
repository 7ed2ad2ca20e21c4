"""Settle tokens, on every durable store: a settle sent again with its token learns that it
won; any other settle of a settled request loses, whoever sends it."""

from __future__ import annotations

import pytest
from tests.tools.human_input.stores.store_kit import (
    REJECTED,
    RESOLVED,
    TIMED_OUT,
    FakeClock,
    Store,
    make_request,
)


async def test_a_settle_sent_again_with_its_token_learns_that_it_won(store: Store) -> None:
    request, _ = await store.insert(make_request())

    first = await store.settle(request.pending_id, RESOLVED, result="yes", token="vote-7")
    again = await store.settle(request.pending_id, RESOLVED, result="yes", token="vote-7")

    assert first is not None
    assert again is not None
    assert (again.status, again.result) == (RESOLVED, "yes")


async def test_a_settle_with_another_token_or_none_loses(store: Store) -> None:
    request, _ = await store.insert(make_request())
    assert await store.settle(request.pending_id, RESOLVED, result="yes", token="vote-7")

    assert await store.settle(request.pending_id, RESOLVED, result="yes", token="vote-8") is None
    assert await store.settle(request.pending_id, RESOLVED, result="yes") is None
    assert await store.settle(request.pending_id, REJECTED, reason="no", token="vote-9") is None


async def test_the_token_of_a_settle_that_lost_to_the_deadline_wins_nothing_later(
    store: Store, clock: FakeClock
) -> None:
    """The timeout recorded in its place is no one's: sending the settle again still loses."""
    request, _ = await store.insert(make_request(deadline=clock.now + 10))
    clock.advance(11)

    assert await store.settle(request.pending_id, RESOLVED, result="late", token="t") is None
    assert await store.settle(request.pending_id, RESOLVED, result="late", token="t") is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.status is TIMED_OUT


async def test_two_settles_without_a_token_are_two_calls(store: Store) -> None:
    """Each call makes a token of its own: the second one loses."""
    request, _ = await store.insert(make_request())

    assert await store.settle(request.pending_id, RESOLVED, result="yes") is not None
    assert await store.settle(request.pending_id, RESOLVED, result="yes") is None


@pytest.mark.parametrize(
    ("token", "error"), [("", ValueError), (7, TypeError)], ids=["empty", "not-text"]
)
async def test_a_bad_token_is_refused_by_name(
    store: Store, token: object, error: type[Exception]
) -> None:
    request, _ = await store.insert(make_request())

    with pytest.raises(error, match="token"):
        await store.settle(request.pending_id, RESOLVED, result="x", token=token)  # type: ignore[arg-type]

    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.status is not RESOLVED
