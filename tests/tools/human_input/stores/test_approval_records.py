"""Approvals on every durable store: their fields, approvers and history survive a reopen."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import Backend

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve, edit

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


async def test_an_approval_and_its_history_are_stored(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "t", {"a": 1}, approvers=["alice"], tool_schema=SCHEMA
        )
        assert await handler.add_approvers(request.pending_id, ["bob", "alice"], by="ops")
        assert await handler.aresolve(request.pending_id, edit({"a": 2}), by="bob", surface="cli")
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        stored = await handler.get_request(request.pending_id)
        history = await handler.history(request.pending_id)
    assert stored is not None
    assert stored.kind == "approval"
    assert stored.arguments_digest == arguments_digest("t", {"a": 1})
    assert stored.approvers == ("alice", "bob")
    assert stored.answer_schema == SCHEMA
    assert [entry["type"] for entry in history] == ["created", "escalated", "decided", "settled"]
    assert [entry["seq"] for entry in history] == [0, 1, 2, 3]
    decided, settled = history[2:]
    assert (decided["actor"], decided["surface"], decided["decision"]) == ("bob", "cli", "edit")
    assert decided["digest"] == arguments_digest("t", {"a": 2})
    assert (settled["actor"], settled["surface"], settled["status"]) == ("bob", "cli", "resolved")


async def test_a_question_reads_back_as_a_question(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("Ask", {"question": "?"})
        stored = await handler.get_request(request.pending_id)
        assert [e["type"] for e in await handler.history(request.pending_id)] == ["created"]
    assert stored is not None
    assert (stored.kind, stored.arguments_digest, stored.approvers) == ("question", None, ())


async def escalate_a_question(handler: HumanInputHandler) -> str:
    """Ask alice, escalate to bob then carol; bob answers. The request's id."""
    request = await handler.create("Ask", {"question": "Deploy?"}, actor_id="alice")
    assert await handler.add_approvers(request.pending_id, ["bob"], by="ops", surface="ladder")
    assert await handler.add_approvers(request.pending_id, ["carol", "bob"])
    assert await handler.aresolve(request.pending_id, "yes", by="bob", surface="desk")
    assert not await handler.add_approvers(request.pending_id, ["dave"])
    return request.pending_id


def check_escalated(stored: PendingInput | None, history: list[dict[str, Any]]) -> None:
    assert stored is not None
    # The asker stays first among those who may answer; an escalation adds, never replaces.
    assert (stored.kind, stored.approvers) == ("question", ("alice", "bob", "carol"))
    assert (stored.result, stored.settled_by) == ("yes", "bob")
    escalated = [entry for entry in history if entry["type"] == "escalated"]
    assert [entry["type"] for entry in history] == ["created", "escalated", "escalated", "settled"]
    assert (history[-1]["actor"], history[-1]["surface"]) == ("bob", "desk")
    assert (escalated[0]["approvers"], escalated[0]["actor"], escalated[0]["surface"]) == (
        ["bob"],
        "ops",
        "ladder",
    )
    assert escalated[1]["approvers"] == ["carol", "bob"]


async def test_an_escalated_question_keeps_its_new_approvers(backend: Backend) -> None:
    async with backend.make() as store:
        pending_id = await escalate_a_question(HumanInputHandler(store=store))
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        check_escalated(await handler.get_request(pending_id), await handler.history(pending_id))


async def test_an_escalated_question_in_memory_keeps_its_new_approvers() -> None:
    handler = HumanInputHandler()
    pending_id = await escalate_a_question(handler)
    check_escalated(await handler.get_request(pending_id), await handler.history(pending_id))


async def test_approvers_are_added_only_while_the_approval_is_open(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval("t", {"a": 1}, tool_schema=SCHEMA)
        assert await handler.areject(request.pending_id, "no", by="alice")
        assert not await handler.add_approvers(request.pending_id, ["bob"])
        stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert (stored.status, stored.reject_reason, stored.approvers) == ("rejected", "no", ())


async def test_a_sqlite_file_from_before_approvals_gains_them(tmp_path: Path) -> None:
    """A file made before approvals gets their columns and history table when opened."""
    path = tmp_path / "old.db"
    async with SQLiteStore(path) as store:
        old = await HumanInputHandler(store=store).create("Ask", {"question": "?"})
    with closing(sqlite3.connect(path)) as db:
        for column in ("kind", "arguments_digest", "approvers"):
            db.execute(f'ALTER TABLE roomkit_pending DROP COLUMN "{column}"')
        db.execute("DROP TABLE roomkit_history")
        db.commit()
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        read = await handler.get_request(old.pending_id)
        held = await handler.create_approval("t", {"a": 1}, approvers=["bob"], tool_schema=SCHEMA)
        history = await handler.history(held.pending_id)
        stored = await handler.get_request(held.pending_id)
    assert read is not None
    assert (read.kind, read.approvers) == ("question", ())
    assert stored is not None
    assert (stored.kind, stored.approvers) == ("approval", ("bob",))
    assert [entry["type"] for entry in history] == ["created"]


QUORUM_COLUMNS = ("quorum", "veto", "voters", "votes")


async def test_a_sqlite_file_from_before_quorums_gains_them(tmp_path: Path) -> None:
    """A file made before quorums gets their columns when opened, and takes votes."""
    path = tmp_path / "old.db"
    async with SQLiteStore(path) as store:
        old = await HumanInputHandler(store=store).create_approval(
            "t", {"a": 1}, approvers=["bob"], tool_schema=SCHEMA
        )
    with closing(sqlite3.connect(path)) as db:
        for column in QUORUM_COLUMNS:
            db.execute(f'ALTER TABLE roomkit_pending DROP COLUMN "{column}"')
        db.commit()
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        read = await handler.get_request(old.pending_id)
        held = await handler.create_approval(
            "t", {"a": 1}, approvers=["bob", "ann"], tool_schema=SCHEMA, quorum=2
        )
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        voted = await handler.get_request(held.pending_id)
    assert read is not None
    assert (read.quorum, read.veto, read.voters, read.votes) == (None, True, (), ())
    assert voted is not None
    assert (voted.quorum, voted.approvers, [v.actor for v in voted.votes]) == (2, ("bob",), ["ann"])


async def test_a_redis_record_from_before_quorums_reads_as_any_one_approvers(
    redis_server: RedisServer, prefix: str, raw: Redis
) -> None:
    async with RedisStore(redis_server.url, prefix=prefix) as store:
        handler = HumanInputHandler(store=store)
        old = await handler.create_approval("t", {"a": 1}, approvers=["bob"], tool_schema=SCHEMA)
        await raw.hdel(f"{prefix}:p:{old.pending_id}", *QUORUM_COLUMNS)
        read = await handler.get_request(old.pending_id)
        assert await handler.aresolve(old.pending_id, approve(), by="bob")
    assert read is not None
    assert (read.quorum, read.veto, read.voters, read.votes) == (None, True, (), ())
