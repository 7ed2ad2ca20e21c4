"""``roomkit audit export`` and ``verify`` on SQLite and Redis: the JSON Lines, the filters,
and a store whose entry was edited by hand."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from tests.doc_pages import page_blocks
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit import HumanInputHandler
from roomkit.cli import main
from roomkit.stores import chain_text, new_entry
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import edit

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
AUDIT_DB = 11
"""The Redis database these tests use alone: the CLI's store has the default key prefix."""


@dataclass
class Place:
    """A durable store the CLI opens by URL, and a way to edit what it stored by hand."""

    url: str
    kind: str
    path: Path | None = None

    def store(self) -> SQLiteStore | RedisStore:
        return SQLiteStore(self.path) if self.path is not None else RedisStore(self.url)

    def rewrite(self, pending_id: str, seq: int, change: Any) -> None:
        """Replace the stored text of entry ``seq`` with ``change(text)``."""
        if self.path is not None:
            with closing(sqlite3.connect(self.path)) as db, db:
                query = "SELECT entry FROM roomkit_history WHERE pending_id = ? AND seq = ?"
                ((text,),) = db.execute(query, (pending_id, seq)).fetchall()
                db.execute(
                    "UPDATE roomkit_history SET entry = ? WHERE pending_id = ? AND seq = ?",
                    (change(text), pending_id, seq),
                )
            return
        with closing(redis.Redis.from_url(self.url)) as raw:
            key = f"roomkit:h:{pending_id}"
            text = raw.lindex(key, seq)
            assert isinstance(text, bytes)
            raw.lset(key, seq, change(text.decode()))


@pytest.fixture(params=["sqlite", "redis"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "sqlite":
        path = tmp_path / "audit.db"
        yield Place(f"sqlite:///{path}", "sqlite", path)
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    url = server.url.rsplit("/", 1)[0] + f"/{AUDIT_DB}"
    with closing(redis.Redis.from_url(url)) as raw:
        raw.flushdb()
    yield Place(url, "redis")


def fill(place: Place) -> tuple[str, str]:
    """Store an approval edited then approved in room r1, and a question in room r2."""

    async def work() -> tuple[str, str]:
        async with place.store() as store:
            handler = HumanInputHandler(store=store)
            held = await handler.create_approval(
                "pay", {"a": 1}, approvers=["alice"], tool_schema=SCHEMA, room_id="r1"
            )
            await handler.record(held.pending_id, new_entry("shown", surface="desk"))
            assert await handler.aresolve(held.pending_id, edit({"a": 2}), by="alice")
            asked = await handler.create("Ask", {"question": "?"}, room_id="r2")
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
            return held.pending_id, asked.pending_id

    return asyncio.run(work())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_intact_store_verifies(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    fill(place)
    code, out, err = run(capsys, "audit", "verify", "--store", place.url)
    assert (code, err) == (0, "")
    assert "2 request histories, 6 entries" in out


def test_the_export_is_one_json_line_per_entry(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    held, asked = fill(place)
    code, out, err = run(capsys, "audit", "export", "--store", place.url)
    lines = [json.loads(line) for line in out.splitlines()]
    assert (code, err) == (0, "")
    assert sorted((line["request"], line["seq"]) for line in lines) == sorted(
        [(held, 0), (held, 1), (held, 2), (held, 3), (asked, 0), (asked, 1)]
    )
    decided = next(line["entry"] for line in lines if line["entry"]["type"] == "decided")
    assert (decided["actor"], decided["decision"], decided["arguments"]) == (
        "alice",
        "edit",
        {"a": 2},
    )
    settled = [line["entry"] for line in lines if line["entry"]["type"] == "settled"]
    assert sorted((entry["actor"], entry["status"]) for entry in settled) == [
        ("alice", "resolved"),
        ("bob", "resolved"),
    ]
    code, out, _ = run(capsys, "audit", "export", "--store", place.url, "--room", "r2")
    assert {json.loads(line)["request"] for line in out.splitlines()} == {asked}
    code, out, _ = run(
        capsys, "audit", "export", "--store", place.url, "--since", "2999-01-01T00:00Z"
    )
    assert (code, out) == (0, "")


def test_an_entry_edited_by_hand_is_named(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    held, _ = fill(place)
    place.rewrite(held, 1, lambda text: text.replace('"desk"', '"slack"'))
    code, out, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"the history of {held!r} breaks at entry 2" in err
    code, out, err = run(capsys, "audit", "export", "--store", place.url)
    assert code == 1
    assert len(out.splitlines()) == 6  # every entry is still exported
    assert f"the history of {held!r} breaks at entry 2" in err


def test_edited_arguments_are_named_even_with_the_chain_linked_again(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forger who links every later entry again keeps the chain whole; the edit's digest
    still gives the changed arguments away."""
    held, _ = fill(place)

    async def stored() -> list[str]:
        async with place.store() as store:
            return (await store.history_texts())[held]

    texts = asyncio.run(stored())
    texts[2] = texts[2].replace('{"a":2}', '{"a":200}')
    for seq in range(3, len(texts)):
        texts[seq] = chain_text(json.loads(texts[seq]), held, texts[seq - 1])
    for seq in range(2, len(texts)):
        place.rewrite(held, seq, lambda _, text=texts[seq]: text)
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"{held!r} breaks at entry 2: its digest is not the digest of its arguments" in err


def test_a_quorums_edited_vote_verifies_and_its_arguments_are_checked(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vote's ``digest`` is what it voted on; its edit's own digest is ``edited``."""

    async def vote() -> str:
        async with place.store() as store:
            handler = HumanInputHandler(store=store)
            held = await handler.create_approval(
                "pay", {"a": 1}, approvers=["alice", "bob"], tool_schema=SCHEMA, quorum=2
            )
            assert await handler.aresolve(held.pending_id, edit({"a": 2}), by="alice")
            return held.pending_id

    held = asyncio.run(vote())
    code, out, err = run(capsys, "audit", "verify", "--store", place.url)
    assert (code, err) == (0, "")
    assert "1 request history, 2 entries" in out
    place.rewrite(held, 1, lambda text: text.replace('{"a":2}', '{"a":3}'))
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"{held!r} breaks at entry 1: its digest is not the digest of its arguments" in err


def test_bad_options_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "audit", "verify", "--store", "memory")
    assert code == 2
    assert "durable store" in err
    code, _, err = run(capsys, "audit", "export", "--store", "ftp://x")
    assert code == 2
    url = f"sqlite:///{tmp_path / 'x.db'}"
    code, _, err = run(capsys, "audit", "export", "--store", url, "--since", "yesterday")
    assert code == 2
    assert "ISO-8601" in err
    code, _, err = run(capsys, "audit", "export", "--store", url, "--since", "2026-01-01T00:00")
    assert code == 2
    assert "time zone" in err


def test_the_readmes_audit_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the audit key in the environment of the store that wrote and of the commands."""
    (block,) = page_blocks("docs/how-to/audit-trail.md", "sh")
    assert "roomkit audit export" in block
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "the-readme-audit-key-0123456789")
    fill(Place("sqlite:///desk.db", "sqlite", tmp_path / "desk.db"))
    script = textwrap.dedent(block)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Wrote checkpoint #0 of 2 changed heads" in done.stdout
    assert "every chain holds, every head holds its signature, 1 checkpoint holds" in done.stdout
    exported = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert len([line for line in exported if "entry" in line]) == 6
    assert [line["n"] for line in exported if "checkpoint" in line] == [0]


def test_an_export_whose_output_fails_says_so_not_that_the_store_failed(place: Place) -> None:
    """The export writes while the store's read is open: a full disk is the output's fault,
    told as such, not the store's."""
    fill(place)
    with open("/dev/full", "w") as full:  # every write: ENOSPC
        done = subprocess.run(
            [sys.executable, "-m", "roomkit.cli", "audit", "export", "--store", place.url],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert "cannot write the output (No space left on device)" in done.stderr
    assert "Could not read the trail" not in done.stderr
