"""The handler's recent outcomes, on every store: answers, refusals and timeouts, newest first."""

from __future__ import annotations

import asyncio

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import HumanInputTimeoutError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import MemoryStore
from roomkit.tools.human_input import HumanInputHandler


async def test_settled_requests_list_with_their_outcomes_newest_first(
    make_handler: HandlerFactory,
) -> None:
    asker, desk = make_handler(), make_handler()
    answered = await asker.create("AskUserQuestion", {"question": "City?"}, actor_id="alice")
    refused = await asker.create("ConfirmAction", {"action": "deploy"}, actor_id="alice")
    timed = await asker.create("AskUserQuestion", {"question": "Late?"}, actor_id="alice")
    still_open = await asker.create("AskUserQuestion", {"question": "Open?"}, actor_id="alice")
    assert await desk.aresolve(answered.pending_id, "Lisbon", by="alice")
    assert await desk.areject(refused.pending_id, "not today", by="alice")
    with pytest.raises(HumanInputTimeoutError):
        await asker.wait(timed.pending_id, timeout=0.05)

    listed = await desk.list_settled(actor_ids=["alice"])

    outcomes = {record.pending_id: record for record in listed}
    assert set(outcomes) == {answered.pending_id, refused.pending_id, timed.pending_id}
    assert still_open.pending_id not in outcomes
    assert outcomes[answered.pending_id].result == "Lisbon"
    assert outcomes[refused.pending_id].reject_reason == "not today"
    assert outcomes[timed.pending_id].status is PendingInputStatus.TIMED_OUT
    assert listed[0].pending_id == timed.pending_id


async def test_the_listing_keeps_the_actors_asked_for(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    mine = await handler.create("AskUserQuestion", {"question": "Mine?"}, actor_id="alice")
    theirs = await handler.create("AskUserQuestion", {"question": "Bob's?"}, actor_id="bob")
    anyone = await handler.create("AskUserQuestion", {"question": "Anyone?"})
    for request in (mine, theirs, anyone):
        assert await handler.aresolve(request.pending_id, "ok")

    alice = await handler.list_settled(actor_ids=["alice", None], limit=10)
    everyone = await handler.list_settled(limit=10)

    assert {record.pending_id for record in alice} == {mine.pending_id, anyone.pending_id}
    assert {record.pending_id for record in everyone} >= {
        mine.pending_id,
        theirs.pending_id,
        anyone.pending_id,
    }


async def test_a_bad_limit_is_refused_before_the_store_is_read(
    make_handler: HandlerFactory,
) -> None:
    with pytest.raises(ValueError, match="limit must be from 1 to 200"):
        await make_handler().list_settled(limit=0)


class NoHistoryStore:
    """A store of the application's own that keeps no history."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def add(self, request: PendingInput) -> None:
        self._inner.add(request)

    def get(self, pending_id: str) -> PendingInput | None:
        return self._inner.get(pending_id)

    def get_settled(self, pending_id: str) -> PendingInput | None:
        return self._inner.get_settled(pending_id)

    def settle(
        self, pending_id: str, status: PendingInputStatus, **outcome: object
    ) -> PendingInput | None:
        return self._inner.settle(pending_id, status, **outcome)  # type: ignore[arg-type]

    def retire(self, request: PendingInput) -> None:
        self._inner.retire(request)

    def by_key(self, key: str) -> PendingInput | None:
        return self._inner.by_key(key)

    def active(self) -> list[PendingInput]:
        return self._inner.active()


async def test_a_store_without_a_listing_has_an_empty_history() -> None:
    handler = HumanInputHandler(store=NoHistoryStore())
    request = await handler.create("AskUserQuestion", {"question": "Q?"})
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=5))
    assert handler.resolve(request.pending_id, "A")
    assert await waiting == "A"

    assert await handler.list_settled() == []
