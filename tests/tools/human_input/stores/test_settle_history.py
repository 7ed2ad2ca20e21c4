"""A write's history entries, on every durable store: a settle's appended with the outcome
in the settle's own transaction when, and only when, the settle wins; an insert's (the
``created`` entry) with the request when it is created; each chained on the head."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    PENDING,
    REJECTED,
    RESOLVED,
    TIMED_OUT,
    Backend,
    FakeClock,
    Store,
    make_request,
)

from roomkit.stores import MemoryHistory, broken_link, new_entry, settled_entry


async def chain(store: Store, pending_id: str) -> list[str]:
    """The request's stored texts, after checking that they form one chain."""
    texts = (await store.history_texts()).get(pending_id, [])
    assert broken_link(pending_id, texts) is None
    return texts


async def types(store: Store, pending_id: str) -> list[Any]:
    return [entry["type"] for entry in await store.read_history(pending_id)]


async def test_a_winning_settle_appends_its_entries_after_the_head(store: Store) -> None:
    request, _ = await store.insert(make_request())
    await store.append_history(request.pending_id, new_entry("created"))
    decided = new_entry("decided", actor="bob", surface="desk", decision="approve")
    settled = settled_entry("resolved", actor="bob", surface="desk")

    won = await store.settle(
        request.pending_id, RESOLVED, result="yes", settled_by="bob", history=[decided, settled]
    )

    assert won is not None
    history = await store.read_history(request.pending_id)
    assert [entry["type"] for entry in history] == ["created", "decided", "settled"]
    assert [entry["seq"] for entry in history] == [0, 1, 2]
    assert (history[2]["status"], history[2]["actor"], history[2]["surface"]) == (
        "resolved",
        "bob",
        "desk",
    )
    assert len(await chain(store, request.pending_id)) == 3


async def test_a_losing_settle_appends_nothing(store: Store) -> None:
    request, _ = await store.insert(make_request())
    first = [settled_entry("resolved", actor="ann")]
    assert await store.settle(request.pending_id, RESOLVED, result="a", history=first)

    again = [settled_entry("rejected", actor="bob")]
    assert await store.settle(request.pending_id, REJECTED, reason="no", history=again) is None
    assert await store.settle("never-stored", RESOLVED, result="a", history=again) is None

    assert await types(store, request.pending_id) == ["settled"]
    assert await store.read_history("never-stored") == []


async def test_a_settle_run_again_with_its_token_appends_once(store: Store) -> None:
    request, _ = await store.insert(make_request())
    entries = [settled_entry("resolved", actor="ann")]
    for _ in range(2):
        won = await store.settle(
            request.pending_id, RESOLVED, result="a", token="t-1", history=entries
        )
        assert won is not None
    assert await types(store, request.pending_id) == ["settled"]


async def test_a_settle_the_deadline_beat_appends_the_deadlines_entry(
    store: Store, clock: FakeClock
) -> None:
    late, _ = await store.insert(make_request(deadline=clock() + 5))
    quiet, _ = await store.insert(make_request(deadline=clock() + 5))
    clock.advance(10)
    answer = [settled_entry("resolved", actor="ann", surface="desk")]

    assert await store.settle(late.pending_id, RESOLVED, result="a", history=answer) is None
    assert await store.settle(quiet.pending_id, RESOLVED, result="a") is None

    history = await store.read_history(late.pending_id)
    assert [(entry["type"], entry["status"], entry["actor"]) for entry in history] == [
        ("settled", "timed_out", None)
    ]
    # A settle that records no history leaves the chain alone, timeout or not.
    assert await store.read_history(quiet.pending_id) == []
    fetched = await store.fetch(late.pending_id)
    assert fetched is not None
    assert fetched.status is TIMED_OUT


async def test_settles_without_history_write_none(store: Store) -> None:
    request, _ = await store.insert(make_request())
    assert await store.settle(request.pending_id, RESOLVED, result="a") is not None
    assert await store.read_history(request.pending_id) == []


async def test_a_head_moved_by_another_store_object_is_linked_again(backend: Backend) -> None:
    """The settle links its entries to the head it believes in; another store object's
    appends moved it, and the chain still holds."""
    async with backend.make() as one, backend.make() as two:
        request, _ = await one.insert(make_request())
        await one.append_history(request.pending_id, new_entry("created"))
        for n in range(3):
            await two.append_history(request.pending_id, new_entry("shown", surface=f"s{n}"))
        entries = [settled_entry("resolved", actor="ann")]
        assert await one.settle(request.pending_id, RESOLVED, result="a", history=entries)
        await one.append_history(request.pending_id, new_entry("executed"))
        texts = await chain(one, request.pending_id)
        assert await types(two, request.pending_id) == [
            "created",
            "shown",
            "shown",
            "shown",
            "settled",
            "executed",
        ]
    assert len(texts) == 6


async def test_the_deadlines_entry_after_a_moved_head_is_linked_again(
    backend: Backend, clock: FakeClock
) -> None:
    """A settle the deadline beat, whose head another store object moved: the deadline's
    entry is linked to the real head, and the head noted after it serves the next append."""
    async with backend.make(clock=clock) as one, backend.make(clock=clock) as two:
        request, _ = await one.insert(
            make_request(deadline=clock() + 5), history=[new_entry("created")]
        )
        await two.append_history(request.pending_id, new_entry("shown", surface="elsewhere"))
        clock.advance(10)
        answer = [settled_entry("resolved", actor="ann")]
        assert await one.settle(request.pending_id, RESOLVED, result="a", history=answer) is None
        await one.append_history(request.pending_id, new_entry("executed"))
        texts = await chain(one, request.pending_id)
        history = await two.read_history(request.pending_id)
    assert [entry["type"] for entry in history] == ["created", "shown", "settled", "executed"]
    assert (history[2]["status"], history[2]["actor"]) == ("timed_out", None)
    assert len(texts) == 4


async def test_racing_settles_from_two_store_objects_append_one_outcome(
    backend: Backend,
) -> None:
    async with backend.make() as one, backend.make() as two:
        requests = [(await one.insert(make_request()))[0] for _ in range(20)]

        async def settle(store: Store, name: str, pending_id: str) -> bool:
            entries = [settled_entry("resolved", actor=name)]
            won = await store.settle(
                pending_id, RESOLVED, result=name, settled_by=name, history=entries
            )
            return won is not None

        results = await asyncio.gather(
            *(settle(one, "one", r.pending_id) for r in requests),
            *(settle(two, "two", r.pending_id) for r in requests),
        )
        for n, request in enumerate(requests):
            assert results[n] != results[n + len(requests)]
            history = await one.read_history(request.pending_id)
            record = await one.fetch(request.pending_id)
            assert record is not None
            assert [entry["actor"] for entry in history] == [record.settled_by]
            await chain(one, request.pending_id)


@pytest.mark.parametrize(
    ("history", "error", "words"),
    [
        ({"type": "settled"}, TypeError, "sequence of history entries"),
        (["settled"], TypeError, "a history entry is a dict"),
        ([{"type": "bogus", "at": "2026-01-01T00:00:00Z"}], ValueError, "type is one of"),
        ([{"type": "settled"}], ValueError, "needs 'at'"),
        ([{**new_entry("settled"), "x": object()}], TypeError, "JSON-serialisable"),
    ],
    ids=["a-dict", "not-entries", "unknown-type", "no-time", "not-json"],
)
async def test_a_bad_history_is_refused_and_nothing_changes(
    store: Store, history: Any, error: type[Exception], words: str
) -> None:
    request, _ = await store.insert(make_request())
    with pytest.raises(error, match=words):
        await store.settle(request.pending_id, RESOLVED, result="a", history=history)
    fetched = await store.fetch(request.pending_id)
    assert fetched is not None
    assert fetched.status is PENDING
    assert await store.read_history(request.pending_id) == []


async def test_a_bad_history_fails_its_settle_alone(store: Store) -> None:
    """Settles made at once share a batch; the one with a bad entry fails, the rest win
    with their entries."""
    requests = [(await store.insert(make_request()))[0] for _ in range(6)]
    bad = requests[2].pending_id

    async def settle(pending_id: str) -> object:
        entry: dict[str, Any] = settled_entry("resolved", actor=pending_id)
        if pending_id == bad:
            entry = {**entry, "type": "bogus"}
        return await store.settle(pending_id, RESOLVED, result="a", history=[entry])

    outcomes = await asyncio.gather(
        *(settle(r.pending_id) for r in requests), return_exceptions=True
    )

    assert isinstance(outcomes[2], ValueError)
    for request, outcome in zip(requests, outcomes, strict=True):
        if request.pending_id == bad:
            assert await store.read_history(bad) == []
            continue
        assert outcome is not None
        assert not isinstance(outcome, BaseException)
        history = await store.read_history(request.pending_id)
        assert [entry["actor"] for entry in history] == [request.pending_id]


async def test_an_insert_starts_the_history_when_it_creates_the_request(store: Store) -> None:
    request = make_request(key="k-1")
    created = new_entry("created", tool="AskUserQuestion")
    first, made = await store.insert(request, history=[created])
    again, remade = await store.insert(make_request(key="k-1"), history=[created])
    retried, _ = await store.insert(request, history=[created])

    assert (made, remade) == (True, False)
    assert again.pending_id == first.pending_id == retried.pending_id
    # A key that re-attaches, and the same request stored again (a retry), write nothing.
    assert await types(store, request.pending_id) == ["created"]
    entries = [settled_entry("resolved", actor="ann")]
    assert await store.settle(request.pending_id, RESOLVED, result="a", history=entries)
    assert len(await chain(store, request.pending_id)) == 2


async def test_an_insert_links_to_a_chain_another_store_object_started(backend: Backend) -> None:
    async with backend.make() as one, backend.make() as two:
        request = make_request()
        await two.append_history(request.pending_id, new_entry("shown", surface="early"))
        await one.insert(request, history=[new_entry("created")])
        assert await types(one, request.pending_id) == ["shown", "created"]
        await chain(one, request.pending_id)


async def test_an_insert_with_a_bad_history_stores_nothing(store: Store) -> None:
    request = make_request()
    with pytest.raises(ValueError, match="type is one of"):
        await store.insert(request, history=[{"type": "bogus", "at": "2026-01-01T00:00:00Z"}])
    assert await store.fetch(request.pending_id) is None


def test_the_memory_history_appends_several_entries_in_one_step() -> None:
    log = MemoryHistory()
    assert log.append_chained("p", [new_entry("created"), settled_entry("resolved")]) == [0, 1]
    assert log.append_chained("p", [new_entry("executed")]) == [2]
    assert broken_link("p", log.stored_texts()["p"]) is None


def test_a_memory_history_limit_forgets_settled_chains_never_open_ones() -> None:
    log = MemoryHistory(limit=2)
    log.append_chained("open", [new_entry("created")])
    for n in range(4):
        log.append_chained(f"done{n}", [new_entry("created"), settled_entry("resolved")])
    assert sorted(log.stored_texts()) == ["done2", "done3", "open"]


@pytest.mark.parametrize(("limit", "error"), [(0, ValueError), (True, TypeError), ("9", TypeError)])
def test_a_bad_memory_history_limit_is_refused(limit: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="limit"):
        MemoryHistory(limit=limit)


async def test_appends_racing_settles_keep_each_chain_whole(backend: Backend) -> None:
    """Another store object appends to the same chains while their settles run, so that
    some of its entries take the seq a settle linked its own to."""
    async with backend.make() as one, backend.make() as two:
        requests = [(await one.insert(make_request()))[0] for _ in range(30)]
        ids = [request.pending_id for request in requests]

        async def shown(pending_id: str) -> None:
            for n in range(3):
                await two.append_history(pending_id, new_entry("shown", surface=f"s{n}"))

        settled = [settled_entry("resolved", actor="ann")]
        outcomes = await asyncio.gather(
            *(one.settle(pending_id, RESOLVED, result="a", history=settled) for pending_id in ids),
            *(shown(pending_id) for pending_id in ids),
        )

        assert all(outcome is not None for outcome in outcomes[: len(ids)])
        for pending_id in ids:
            assert sorted(await types(one, pending_id)) == ["settled", "shown", "shown", "shown"]
            assert len(await chain(one, pending_id)) == 4
