"""Hostile bytes in a trail: a hand edit leaves an entry, a head or a checkpoint that no store
writes (a lone surrogate escape, JSON nested past what a reader follows, bytes that are not
UTF-8); ``roomkit audit verify`` and ``export`` name it, and the export still writes
everything, never a traceback.

Each test fills a store (:func:`~tests.tools.human_input.stores.trail_places.fill`) and edits
it where the store keeps its data, as ``test_trail_tampering`` does.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
import redis
from tests.tools.human_input.stores.test_trail_tampering import place, verify
from tests.tools.human_input.stores.trail_places import (
    MemoryPlace,
    Place,
    RedisPlace,
    SQLitePlace,
    fill,
)

from roomkit.cli import main
from roomkit.stores import chain_text, new_entry

__all__ = ["place"]


def export(place: Place, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    """What ``roomkit audit export`` writes: exit code, its lines, and its stderr."""
    code = main(["audit", "export", "--store", place.url])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_an_entry_with_a_lone_surrogate_escape_is_named_and_exported(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    filled = fill(place)
    rows = place.rows(filled.approval)
    text = rows[1][1].replace('"surface":"desk"', '"surface":"\\ud800"')
    assert text != rows[1][1]
    rows[1] = (rows[1][0], text)
    place.set_rows(filled.approval, rows)
    says = f"the history of {filled.approval!r} breaks at entry 1"
    code, problems = verify(place, capsys)
    assert code == 1
    assert says in problems, problems
    if isinstance(place, MemoryPlace):
        return
    code, lines, err = export(place, capsys)
    assert code == 1
    assert says in err, err
    assert len(lines) == 8  # its six entries and two checkpoints
    surface = [json.loads(line)["entry"].get("surface") for line in lines if "entry" in line]
    assert "\ud800" in surface


def test_an_entry_nested_too_deeply_is_named(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    filled = fill(place)
    rows = place.rows(filled.approval)
    rows[1] = (rows[1][0], "[" * 100_000 + "]" * 100_000)
    place.set_rows(filled.approval, rows)
    says = f"the history of {filled.approval!r} breaks at entry 1: it is JSON nested too deeply"
    code, problems = verify(place, capsys)
    assert code == 1
    assert says in problems, problems
    if isinstance(place, MemoryPlace):
        return
    code, lines, err = export(place, capsys)
    assert (code, len(lines)) == (1, 8)
    assert says in err, err


def test_an_escaped_entry_nested_too_deeply_is_named(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL reads a text starting with its escape (``\x01``, for a text holding NUL)
    as JSON: one nested too deeply is read as the text it is."""
    if isinstance(place, MemoryPlace):
        pytest.skip("the memory store keeps texts as they are")
    filled = fill(place)
    rows = place.rows(filled.approval)
    rows[1] = (rows[1][0], "\x01" + "[" * 100_000 + "]" * 100_000)
    place.set_rows(filled.approval, rows)
    code, problems = verify(place, capsys)
    assert code == 1
    assert f"the history of {filled.approval!r} breaks at entry 1: it is not JSON" in problems


def _raw_edit(place: Place, approval: str, question: str) -> None:
    """Bytes that are not UTF-8 in an entry of ``approval``, in the head of ``question``,
    and in the last checkpoint, written where the store keeps them."""
    if isinstance(place, SQLitePlace):
        with closing(sqlite3.connect(place.path)) as db, db:
            db.execute(
                "UPDATE roomkit_history SET entry = CAST(X'7bff7d' AS TEXT) "
                "WHERE pending_id = ? AND seq = 1",
                (approval,),
            )
            db.execute(
                "UPDATE roomkit_chains SET head = CAST(X'ff' AS TEXT) WHERE pending_id = ?",
                (question,),
            )
            db.execute("UPDATE roomkit_checkpoints SET body = CAST(X'7bff' AS TEXT) WHERE n = 1")
        return
    assert isinstance(place, RedisPlace)
    with closing(redis.Redis.from_url(place.url)) as db:
        db.lset(f"roomkit:h:{approval}", 1, b'{"\xff":1}')
        db.hset(f"roomkit:ha:{question}", "v", b"\xff\xfe")
        db.lset("roomkit:cp", 1, b"\xff")
        db.rpush(b"roomkit:h:\xff", b"\xfe")


def test_bytes_that_are_not_utf8_are_named_not_a_traceback(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite keeps what a hand edit casts to text; Redis keeps any bytes."""
    if not isinstance(place, SQLitePlace | RedisPlace):
        pytest.skip("PostgreSQL keeps only UTF-8 text, the memory store only what it made")
    filled = fill(place)
    _raw_edit(place, filled.approval, filled.question)
    code, problems = verify(place, capsys)
    assert code == 1
    assert f"the history of {filled.approval!r} breaks at entry 1: it is not UTF-8" in problems
    # The head that is not a head, and the checkpoint that is not one, are named too.
    assert f"history of {filled.question!r}" in problems
    assert "checkpoint #" in problems
    if isinstance(place, RedisPlace):
        assert "the history of '\\udcff' breaks at entry 0: it is not UTF-8 text" in problems
    code, lines, err = export(place, capsys)
    assert code == 1
    assert "it is not UTF-8 text" in err
    assert len(lines) >= 8
    if isinstance(place, SQLitePlace):
        main(["audit", "checkpoint", "--store", place.url])
        _, err = capsys.readouterr()
        assert "unavailable" not in err, err


def _foreign_chain(place: Place) -> str:
    """A history under an id of bytes that are not UTF-8, linked as a store links one (its
    first ``prev`` the digest of the id as read back); the id as read back."""
    read_back = b"\xff".decode("utf-8", "surrogateescape")
    entry = chain_text(new_entry("shown", surface="desk"), read_back, None).encode()
    if isinstance(place, SQLitePlace):
        with closing(sqlite3.connect(place.path)) as db, db:
            db.execute(
                "INSERT INTO roomkit_history (pending_id, seq, entry) "
                "VALUES (CAST(X'ff' AS TEXT), 0, CAST(? AS TEXT))",
                (entry,),
            )
    else:
        assert isinstance(place, RedisPlace)
        with closing(redis.Redis.from_url(place.url)) as server:
            server.rpush(b"roomkit:h:\xff", entry)
    return read_back


def test_an_id_of_bytes_that_are_not_utf8_is_named_and_left_unsigned(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``verify`` names the history; ``checkpoint --adopt`` leaves it, and signs the rest."""
    if not isinstance(place, SQLitePlace | RedisPlace):
        pytest.skip("PostgreSQL keeps only UTF-8 text, the memory store only what it made")
    filled = fill(place)
    read_back = _foreign_chain(place)
    place.set_head(filled.question, None)  # a history adopt signs
    code, problems = verify(place, capsys)
    assert code == 1
    assert f"the history of {read_back!r} has no signed head" in problems, problems
    assert main(["audit", "checkpoint", "--adopt", "--store", place.url]) == 0
    out, err = capsys.readouterr()
    assert "Signed 1 head as it stands" in out, (out, err)
    assert "1 history does not hold and was left" in err, err
    code, problems = verify(place, capsys)
    assert code == 1
    assert f"history of {filled.question!r}" not in problems, problems
    says = f"the history of {read_back!r} does not hold: its id is not UTF-8 text"
    assert says in problems, problems
