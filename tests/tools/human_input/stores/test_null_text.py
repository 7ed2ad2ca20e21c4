"""Every durable store gives back exactly the text it was given, the NUL character included:
no answer, reason or name reads back as the "no value" a store writes for ``None``."""

from __future__ import annotations

import pytest
from tests.tools.human_input.stores.store_kit import (
    REJECTED,
    RESOLVED,
    SETTLED,
    Backend,
    Changes,
    Store,
    make_request,
)

from roomkit.stores.base import PendingChange
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

TEXTS = pytest.mark.parametrize(
    "text",
    ["\x00", "\x00\x00", "\x00\x00\x00", "", "a\x00", "\x00b"],
    ids=["nul", "two-nuls", "three-nuls", "empty", "trailing-nul", "leading-nul"],
)


@TEXTS
async def test_an_answer_of_nul_characters_reads_back_as_it_was_given(
    store: Store, text: str
) -> None:
    request, _ = await store.insert(make_request(actor_id=text, key=f"k{text}"))

    won = await store.settle(request.pending_id, RESOLVED, result=text, settled_by=text)
    read = await store.fetch(request.pending_id)

    for record in (won, read):
        assert record is not None
        assert (record.result, record.settled_by, record.actor_id) == (text, text, text)
    settled = await store.list_settled(actor_ids=[text])
    assert [record.pending_id for record in settled] == [request.pending_id]
    again, created = await store.insert(make_request(key=f"k{text}"))
    assert (again.pending_id, created) == (request.pending_id, False)


@TEXTS
async def test_a_rejection_reason_of_nul_characters_reads_back_as_it_was_given(
    store: Store, text: str
) -> None:
    request, _ = await store.insert(make_request())

    await store.settle(request.pending_id, REJECTED, reason=text)

    read = await store.fetch(request.pending_id)
    assert read is not None
    assert (read.reject_reason, read.result) == (text, None)


async def test_another_process_hears_a_nul_answer_as_it_was_given(backend: Backend) -> None:
    async with backend.make() as answering, backend.make() as waiting:
        changes = Changes()
        unsubscribe = waiting.subscribe(changes)
        await backend.live(changes)
        request, _ = await answering.insert(make_request())

        await answering.settle(request.pending_id, RESOLVED, result="\x00")

        await changes.arrival(PendingChange(SETTLED, request.pending_id))
        unsubscribe()
        heard = [change.record for change in changes.seen if change.record is not None]
        assert [record.result for record in heard] == ["\x00"]


@TEXTS
async def test_wait_returns_a_nul_answer_on_every_store(backend: Backend, text: str) -> None:
    """The memory store and both durable stores, through the handler."""
    for store in (None, backend.make()):
        handler = HumanInputHandler() if store is None else HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", {"question": "Colour?"})
        assert await handler.aresolve(request.pending_id, text)
        assert await handler.wait(request.pending_id, timeout=5) == text
        await handler.close()
        if store is not None:
            await store.close()


async def test_a_ledger_entry_holding_a_nul_is_spent_once(store: Store) -> None:
    entry = "shown:\x00"

    assert await store.spend_once(entry, until=None)

    assert not await store.spend_once(entry, until=None)
    assert list(await store.read_spent([entry, "shown:"])) == [entry]
    await store.refund_spent(entry)
    assert await store.read_spent([entry]) == {}
    await store.record_spent(entry, until=None)
    assert list(await store.read_spent([entry])) == [entry]


async def test_an_approver_whose_id_holds_a_nul_is_added_and_decides(backend: Backend) -> None:
    """The memory store and every durable store, through the handler."""
    for store in (None, backend.make()):
        handler = HumanInputHandler() if store is None else HumanInputHandler(store=store)
        request = await handler.create_approval("Deploy", {"env": "prod"}, approvers=["bob"])

        assert await handler.add_approvers(request.pending_id, ["car\x00ol"], by="bob")

        added = await handler.get_request(request.pending_id)
        assert added is not None
        assert added.approvers == ("bob", "car\x00ol")
        assert await handler.aresolve(request.pending_id, approve(), by="car\x00ol")
        assert await handler.wait(request.pending_id, timeout=5) == approve()
        await handler.close()
        if store is not None:
            await store.close()
