"""A person with write access to the database edits the trail without the audit key, every
way there is, on every store; ``roomkit audit verify`` with the key names each edit.

Each test fills a store (:func:`~tests.tools.human_input.stores.trail_places.fill`: approval
``A`` with four entries, question ``B`` with two, checkpoints #0 and #1), makes one edit
directly where the store keeps its data, and verifies: through the CLI on SQLite, Redis and
PostgreSQL, through the handler's trail on the memory store.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
import redis
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.trail_places import (
    KEY,
    KEYS,
    TRAIL_DB,
    Filled,
    MemoryPlace,
    Place,
    PostgresPlace,
    RedisPlace,
    SQLitePlace,
    fill,
    postgres_database,
)

from roomkit import HumanInputHandler
from roomkit.cli import main
from roomkit.core.exceptions import CorruptRecordError
from roomkit.stores import check_trail, entry_text, link_digest
from roomkit.stores._history import linked_text
from roomkit.stores._trail import Checkpoint, Head


@pytest.fixture(params=["sqlite", "redis", "postgres", "memory"])
def place(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Place]:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    if request.param == "sqlite":
        yield SQLitePlace(tmp_path / "trail.db")
    elif request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        yield PostgresPlace(postgres_database(server.dsn))
    elif request.param == "redis":
        redis_server: RedisServer = request.getfixturevalue("redis_server")
        url = redis_server.url.rsplit("/", 1)[0] + f"/{TRAIL_DB}"
        with closing(redis.Redis.from_url(url)) as raw:
            raw.flushdb()
        yield RedisPlace(url)
    else:
        yield MemoryPlace()


def verify(place: Place, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """What ``roomkit audit verify`` says (with the key in the environment): exit code and
    its problems, one a line (on the memory store: what its handler's trail says)."""
    if isinstance(place, MemoryPlace):
        report = check_trail(asyncio.run(place.trail.read()), KEYS, now=time.time())
        return (1 if report.problems else 0), "\n".join(report.problems)
    code = main(["audit", "verify", "--store", place.url])
    _, err = capsys.readouterr()
    return code, err


def relinked(rows: list[tuple[int, str]], pending_id: str, start: int) -> list[tuple[int, str]]:
    """``rows`` with every entry from ``start`` linked again to the one before it, as a
    forger who knows how the chain is made would."""
    done = list(rows[:start])
    prev = link_digest(done[-1][1]) if done else None
    for seq, text in rows[start:]:
        entry = json.loads(text)
        linked = linked_text(entry, prev) if prev is not None else text
        done.append((seq, linked))
        prev = link_digest(linked)
    return done


def edited(text: str) -> str:
    """An entry's text with its time changed, canonical still."""
    entry = json.loads(text)
    entry["at"] = "2000-01-01T00:00:00Z"
    return entry_text(entry)


def forged(after: str, kind: str = "executed") -> str:
    """A new entry linked after the entry ``after``, as the store would link it."""
    entry = {"type": kind, "at": "2030-01-01T00:00:00Z", "actor": "mallory", "surface": None}
    return linked_text(entry, link_digest(after))


Tamper = Callable[[Place, Filled], str]
"""An edit made in the database; what verify must say of it."""


def edit_entry(seq: int, says: str) -> Tamper:
    def tamper(place: Place, filled: Filled) -> str:
        rows = place.rows(filled.approval)
        rows[seq] = (rows[seq][0], edited(rows[seq][1]))
        place.set_rows(filled.approval, rows)
        return says.format(a=repr(filled.approval))

    return tamper


def edit_and_relink(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    rows[1] = (rows[1][0], edited(rows[1][1]))
    place.set_rows(filled.approval, relinked(rows, filled.approval, 2))
    return f"the last entry of the history of {filled.approval!r} (entry 3) is not the one"


def delete_entry(seq: int, says: str) -> Tamper:
    def tamper(place: Place, filled: Filled) -> str:
        rows = place.rows(filled.approval)
        del rows[seq]
        place.set_rows(filled.approval, rows)
        return says.format(a=repr(filled.approval))

    return tamper


def delete_chain(place: Place, filled: Filled) -> str:
    place.set_rows(filled.approval, [])
    place.set_head(filled.approval, None)
    return f"the history of {filled.approval!r} was deleted: checkpoint #1 lists it"


def delete_entries_keep_head(place: Place, filled: Filled) -> str:
    place.set_rows(filled.question, [])
    return f"the history of {filled.question!r} was deleted"


def reorder(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    (s1, t1), (s2, t2) = rows[1], rows[2]
    rows[1:3] = [(s1, t2), (s2, t1)]
    place.set_rows(filled.approval, rows)
    return f"the history of {filled.approval!r} breaks at entry 1"


def insert(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    texts = [text for _, text in rows]
    texts.insert(2, forged(texts[1], "shown"))
    place.set_rows(filled.approval, list(enumerate(texts)))
    return f"the history of {filled.approval!r} breaks at entry 3"


def shift_all(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    place.set_rows(filled.approval, [(seq + 10, text) for seq, text in rows])
    return f"the history of {filled.approval!r} breaks at entry 0: it is stored as entry 10"


def shift_tail(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    place.set_rows(filled.approval, [(seq + 5 if seq >= 2 else seq, text) for seq, text in rows])
    return f"the history of {filled.approval!r} breaks at entry 2: it is stored as entry 7"


def append_forged(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    rows.append((len(rows), forged(rows[-1][1])))
    place.set_rows(filled.approval, rows)
    return "holds 5 entries and its signed head says 4: entries were appended without the key"


def append_forged_with_head(place: Place, filled: Filled) -> str:
    rows = place.rows(filled.approval)
    rows.append((len(rows), forged(rows[-1][1])))
    place.set_rows(filled.approval, rows)
    head = place.head(filled.approval)
    assert head is not None
    place.set_head(filled.approval, Head(5, link_digest(rows[-1][1]), head.epoch, head.mac))
    return f"the head of the history of {filled.approval!r} does not hold: its signature"


def unsign_head(place: Place, filled: Filled) -> str:
    head = place.head(filled.question)
    assert head is not None
    place.set_head(filled.question, head._replace(mac=None))
    return f"the history of {filled.question!r} has no signed head"


def delete_head(place: Place, filled: Filled) -> str:
    place.set_head(filled.question, None)
    return f"the history of {filled.question!r} has no signed head"


def delete_checkpoint(n: int, says: str) -> Tamper:
    def tamper(place: Place, filled: Filled) -> str:
        place.set_checkpoints([cp for cp in place.checkpoints() if cp.n != n])
        return says

    return tamper


def edit_checkpoint(place: Place, filled: Filled) -> str:
    first, *rest = place.checkpoints()
    body = json.loads(first.text)
    body["heads"][filled.approval][0] = 1
    place.set_checkpoints([first._replace(text=entry_text(body)), *rest])
    return "checkpoint #0 does not hold: its signature does not hold"


def swap_checkpoints(place: Place, filled: Filled) -> str:
    first, second = place.checkpoints()
    place.set_checkpoints(
        [Checkpoint(0, second.text, second.mac), Checkpoint(1, first.text, first.mac)]
    )
    return "checkpoint #0 is stored in the place of #1"


def forge_checkpoint(place: Place, filled: Filled) -> str:
    checkpoints = place.checkpoints()
    last = checkpoints[-1]
    body = json.loads(last.text)
    body.update(n=2, prev=link_digest(last.text), heads={})
    place.set_checkpoints([*checkpoints, Checkpoint(2, entry_text(body), last.mac)])
    return "checkpoint #2 does not hold: its signature does not hold"


def renumber_checkpoint(n: int) -> Tamper:
    def tamper(place: Place, filled: Filled) -> str:
        first, second = place.checkpoints()
        place.set_checkpoints([first, second._replace(n=n)])
        return f"checkpoint #{n} is stored in the place of #1"

    return tamper


def move_checkpoint_first(place: Place, filled: Filled) -> str:
    first, second = place.checkpoints()
    place.set_checkpoints([second._replace(n=-1), first])
    return "checkpoint #-1 is stored before #0, where no checkpoint goes"


TAMPERS: dict[str, Tamper] = {
    "edit the first entry": edit_entry(0, "the history of {a} breaks at entry 1"),
    "edit a middle entry": edit_entry(1, "the history of {a} breaks at entry 2"),
    "edit the last entry": edit_entry(
        3, "the last entry of the history of {a} (entry 3) is not the one its signed head"
    ),
    "edit an entry and link the rest again": edit_and_relink,
    "delete the first entry": delete_entry(0, "the history of {a} breaks at entry 0"),
    "delete a middle entry": delete_entry(1, "the history of {a} breaks at entry 1"),
    "delete the last entry": delete_entry(
        3, "the history of {a} holds 3 entries and its signed head says 4"
    ),
    "delete a whole chain and its head": delete_chain,
    "delete a whole chain": delete_entries_keep_head,
    "reorder entries": reorder,
    "insert an entry": insert,
    "shift every seq together": shift_all,
    "shift the later seqs together": shift_tail,
    "append a forged entry with the right prev": append_forged,
    "append a forged entry and move the head": append_forged_with_head,
    "unsign a head": unsign_head,
    "delete a head": delete_head,
    "delete the last checkpoint": delete_checkpoint(
        1, "checkpoint #1 is missing (deleted): the head of the history of"
    ),
    "delete the first checkpoint": delete_checkpoint(0, "checkpoint #0 is missing"),
    "edit a checkpoint": edit_checkpoint,
    "reorder the checkpoints": swap_checkpoints,
    "forge a checkpoint": forge_checkpoint,
    "renumber a checkpoint below zero": renumber_checkpoint(-1),
    "move a checkpoint before the first": move_checkpoint_first,
    "renumber a checkpoint far ahead": renumber_checkpoint(2**62),
}
_SEQ_IN_A_LIST = {"shift every seq together", "shift the later seqs together"}


@pytest.mark.parametrize("kind", TAMPERS)
def test_verify_with_the_key_names_every_edit(
    place: Place, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind in _SEQ_IN_A_LIST and place.kind in ("redis", "memory"):
        pytest.skip("an entry's seq is its place in a list here: there is none to shift")
    if kind == "renumber a checkpoint far ahead" and place.kind == "postgres":
        pytest.skip("a checkpoint's number is a 32-bit integer column here")
    filled = fill(place)
    assert verify(place, capsys) == (0, "")
    says = TAMPERS[kind](place, filled)
    code, problems = verify(place, capsys)
    assert code == 1
    assert says in problems, problems


def test_an_untouched_trail_verifies_with_its_checkpoints(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(place)
    if isinstance(place, MemoryPlace):
        report = check_trail(asyncio.run(place.trail.read()), KEYS, now=time.time())
        assert (report.problems, report.checkpoints, report.unlisted) == ([], 2, 0)
        return
    assert main(["audit", "verify", "--store", place.url]) == 0
    out = capsys.readouterr().out
    assert "2 request histories, 6 entries: every chain holds, every head holds" in out
    assert "2 checkpoints hold" in out


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        (
            "UPDATE roomkit_history SET seq = 'x' WHERE seq = 1",
            "breaks at entry 1: it is stored as entry -1",
        ),
        (
            "UPDATE roomkit_history SET seq = 1.5 WHERE seq = 1",
            "breaks at entry 1: it is stored as entry -1",
        ),
        ("UPDATE roomkit_chains SET length = 'abc'", "does not hold: its signature"),
        ("UPDATE roomkit_chains SET length = 9e999", "does not hold: its signature"),
        ("UPDATE roomkit_chains SET epoch = 'zz'", "does not hold: its signature"),
    ],
    ids=["seq", "fractional seq", "length", "infinite length", "epoch"],
)
def test_a_number_column_holding_text_is_named_not_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    statement: str,
    says: str,
) -> None:
    """SQLite keeps what a hand edit writes, text or a fraction or an infinity in a number
    column included."""
    import sqlite3

    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    place = SQLitePlace(tmp_path / "trail.db")
    fill(place)
    with closing(sqlite3.connect(place.path)) as db, db:
        db.execute(statement)
    code, problems = verify(place, capsys)
    assert code == 1
    assert says in problems, problems
    # An export of a broken trail still writes everything, and names what breaks.
    assert main(["audit", "export", "--store", place.url]) == 1
    out, err = capsys.readouterr()
    assert out.count("\n") == 8  # its six entries and two checkpoints
    assert says in err, err


def test_adopt_leaves_a_history_numbered_with_text_and_signs_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``checkpoint --adopt`` reads ``seq`` as ``verify`` does: that history is left, named
    by ``verify``, never a traceback."""
    import sqlite3

    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    place = SQLitePlace(tmp_path / "trail.db")
    filled = fill(place)
    place.set_head(filled.approval, None)
    place.set_head(filled.question, None)
    with closing(sqlite3.connect(place.path)) as db, db:
        db.execute(
            "UPDATE roomkit_history SET seq = 'x' WHERE pending_id = ? AND seq = 1",
            (filled.approval,),
        )
    assert main(["audit", "checkpoint", "--adopt", "--store", place.url]) == 0
    out, err = capsys.readouterr()
    assert "Signed 1 head as it stands" in out, (out, err)
    assert "1 history does not hold and was left" in err, err
    code, problems = verify(place, capsys)
    assert code == 1
    assert f"the history of {filled.approval!r} breaks at entry 1" in problems, problems
    assert f"history of {filled.question!r}" not in problems, problems


def ask_again(place: Place) -> None:
    """One more question, so that a head changed since the last checkpoint."""
    if isinstance(place, MemoryPlace):
        asyncio.run(place.handler.create("Ask", {"question": "?"}, room_id="r3"))
        return

    async def work() -> None:
        async with place.open() as store:
            store.trail.use_keys(KEYS)
            await HumanInputHandler(store=store).create("Ask", {"question": "?"}, room_id="r3")

    asyncio.run(work())


@pytest.mark.parametrize(
    "kind", ["renumber a checkpoint below zero", "move a checkpoint before the first"]
)
def test_no_checkpoint_goes_after_one_moved_below_zero(
    place: Place, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The next number would be the moved checkpoint's own: none is written, and the
    refusal says to verify."""
    filled = fill(place)
    TAMPERS[kind](place, filled)
    stored = place.checkpoints()
    ask_again(place)
    # Where the checkpoints are a list, the one renumbered is still the last one stored.
    says = (
        "checkpoint #-1 does not hold (it is stored as #-1 and says it is #1)"
        if kind.startswith("renumber") and place.kind in ("redis", "memory")
        else "checkpoint #-1 is stored before #0"
    )
    if isinstance(place, MemoryPlace):
        with pytest.raises(CorruptRecordError) as refused:
            asyncio.run(place.trail.checkpoint())
        err = str(refused.value)
    else:
        assert main(["audit", "checkpoint", "--store", place.url]) == 1
        _, err = capsys.readouterr()
    assert says in err, err
    assert "run `roomkit audit verify`" in err, err
    assert place.checkpoints() == stored
