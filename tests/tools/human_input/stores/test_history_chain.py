"""The history as a chain, on every store: each entry carries the digest of the one before,
questions have entries too, and appends racing from two processes never fork the chain."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import Backend, RedisBackend, SQLiteBackend

from roomkit import HumanInputHandler
from roomkit.stores import (
    MemoryHistory,
    broken_link,
    chain_text,
    entry_text,
    first_prev,
    link_digest,
    new_entry,
)

WRONG_PREV = "its prev is not the digest of the entry before it"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

APPEND_ELSEWHERE = """
import asyncio, sys
from roomkit.stores import new_entry

async def main(kind, where, prefix, pending_id, name, count):
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore
        store = SQLiteStore(where)
    else:
        from roomkit.stores.redis import RedisStore
        store = RedisStore(where, prefix=prefix)
    async with store:
        for n in range(int(count)):
            await store.append_history(pending_id, new_entry("shown", surface=f"{name}-{n}"))

asyncio.run(main(*sys.argv[1:]))
"""
"""Run with ``kind location prefix pending_id name count``: appends ``count`` entries to the
request's history from a process of its own."""


def stored_texts(history: list[dict[str, Any]]) -> list[str]:
    """The texts the entries read back were stored as."""
    return [entry_text({k: v for k, v in entry.items() if k != "seq"}) for entry in history]


def test_each_link_carries_the_digest_of_the_one_before() -> None:
    first = chain_text(new_entry("created"), "p1", None)
    second = chain_text({**new_entry("shown"), "seq": 4}, "p1", first)
    assert '"prev":"' + first_prev("p1") + '"' in first
    assert '"prev":"' + link_digest(first) + '"' in second
    assert '"seq"' not in second
    assert broken_link("p1", [first, second]) is None
    assert broken_link("p2", [first, second]) == (0, WRONG_PREV)
    assert broken_link("p1", [first.replace("created", "settled"), second]) == (1, WRONG_PREV)
    spaced = broken_link("p1", [first, second.replace(":", ": ", 1)])
    assert spaced is not None
    assert spaced[1].startswith("its text")


async def test_a_memory_handlers_history_is_a_chain() -> None:
    handler = HumanInputHandler()
    request = await handler.create_approval("t", {"a": 1}, approvers=["bob"], tool_schema=SCHEMA)
    await handler.record(request.pending_id, new_entry("shown", surface="desk"))
    history = await handler.history(request.pending_id)
    assert broken_link(request.pending_id, stored_texts(history)) is None


async def test_every_stores_history_is_a_chain(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "t", {"a": 1}, approvers=["alice"], tool_schema=SCHEMA, room_id="r1"
        )
        await handler.record(request.pending_id, new_entry("shown", surface="desk"))
        assert await handler.aresolve(request.pending_id, '{"decision":"approve"}', by="alice")
        history = await handler.history(request.pending_id)
        chains = await store.history_texts()
    assert [entry["type"] for entry in history] == ["created", "shown", "decided", "settled"]
    assert history[0]["prev"] == first_prev(request.pending_id)
    assert history[0]["room"] == "r1"
    assert chains[request.pending_id] == stored_texts(history)
    assert broken_link(request.pending_id, chains[request.pending_id]) is None


async def test_a_question_has_a_history_too(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "?"}, room_id="r1", actor_id="ann")
        assert await handler.aresolve(asked.pending_id, "yes", by="ann", surface="cli")
        history = await handler.history(asked.pending_id)
    assert [entry["type"] for entry in history] == ["created", "settled"]
    created, settled = history
    assert (created["actor"], created["room"], created["tool"]) == ("ann", "r1", "Ask")
    assert created["arguments"] == {"question": "?"}
    assert (settled["actor"], settled["surface"], settled["status"]) == ("ann", "cli", "resolved")


async def test_a_key_that_matches_an_open_question_writes_no_second_created() -> None:
    handler = HumanInputHandler()
    first = await handler.create("Ask", {"question": "?"}, key="k")
    again = await handler.create("Ask", {"question": "?"}, key="k")
    assert again.pending_id == first.pending_id
    assert [entry["type"] for entry in await handler.history(first.pending_id)] == ["created"]


async def test_two_store_objects_appending_at_once_keep_one_chain(backend: Backend) -> None:
    """Each store object's idea of the head goes stale as the other appends."""
    async with backend.make() as one, backend.make() as two:

        async def append(store: Any, name: str) -> None:
            for n in range(15):
                await store.append_history("shared", new_entry("shown", surface=f"{name}{n}"))

        await asyncio.gather(append(one, "a"), append(two, "b"))
        chains = await one.history_texts()
    assert len(chains["shared"]) == 30
    assert broken_link("shared", chains["shared"]) is None


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_appends_from_two_processes_never_fork_the_chain(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend: Backend
    if kind == "sqlite":
        backend = SQLiteBackend(tmp_path / "chain.db")
    else:
        url = request.getfixturevalue("redis_server").url
        backend = RedisBackend(url, request.getfixturevalue("prefix"))
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPEND_ELSEWHERE, *backend.elsewhere, "shared", name, "20"
        )
        for name in ("a", "b")
    ]
    assert [await process.wait() for process in processes] == [0, 0]
    async with backend.make() as store:
        chain = (await store.history_texts())["shared"]
    await backend.close()
    assert len(chain) == 40
    assert broken_link("shared", chain) is None
    assert {text.count('"surface":"a') for text in chain} == {0, 1}


def test_the_memory_history_lists_its_chains() -> None:
    log = MemoryHistory()
    asyncio.run(log.append_history("p", new_entry("created")))
    assert broken_link("p", log.stored_texts()["p"]) is None
