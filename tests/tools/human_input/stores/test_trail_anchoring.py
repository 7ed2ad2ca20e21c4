"""The audit key and the checkpoints around the tamper tests: verify without a key, the key
file and its rotation, the export, checkpoints written as a desk runs, by two writers at
once, and chains gone after the audit retention."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

import pytest
from tests.tools.human_input.stores.store_kit import Backend, FakeClock, logged
from tests.tools.human_input.stores.trail_places import (
    KEY,
    KEYS,
    SQLitePlace,
    fill,
    read_trail,
)

from roomkit import HumanInputHandler
from roomkit.cli import main
from roomkit.stores import AuditKeys, check_trail, checkpointing, load_audit_keys, new_entry
from roomkit.stores._trail import Checkpoint

DAY = 86_400.0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLitePlace:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "no-data-dir"))
    return SQLitePlace(tmp_path / "trail.db")


def test_without_the_key_verify_checks_the_chains_and_says_what_it_did_not(
    place: SQLitePlace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    filled = fill(place)
    code, out, err = run(capsys, "audit", "verify", "--store", place.url)
    assert (code, err) == (0, "")
    assert "every chain holds. Not checked: the signed heads and checkpoints" in out
    assert "ROOMKIT_AUDIT_KEY" in out
    rows = place.rows(filled.approval)
    place.set_rows(filled.approval, rows[:-1])
    # The last entry gone shows only to the key: without it, the chain still holds.
    assert run(capsys, "audit", "verify", "--store", place.url)[0] == 0
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert "holds 3 entries and its signed head says 4" in err


def test_entries_shifted_together_are_named_without_the_key(
    place: SQLitePlace, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every link still holds when all the later entries move down a place together; their
    numbers do not: the trail is numbered 0, 1, 2, ... in a row."""
    filled = fill(place)
    rows = place.rows(filled.approval)
    place.set_rows(filled.approval, [(seq + 1 if seq else 0, text) for seq, text in rows])
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"{filled.approval!r} breaks at entry 1: it is stored as entry 2" in err


def test_a_checkpoint_needs_the_key(place: SQLitePlace, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "audit", "checkpoint", "--store", place.url)
    assert code == 2
    assert "no audit key: set ROOMKIT_AUDIT_KEY" in err


def test_a_first_checkpoint_over_unsigned_heads_points_at_adopt(
    place: SQLitePlace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No checkpoint was ever made: the command does not say nothing changed since one."""
    _settle_one(place, None)
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    code, out, err = run(capsys, "audit", "checkpoint", "--store", place.url)
    assert code == 0
    assert "since the last checkpoint" not in out
    assert out.startswith("No checkpoint yet, and none written: no head is signed")
    assert "`roomkit audit checkpoint --adopt`" in out
    assert "1 head is not signed" in err
    code, out, _ = run(capsys, "audit", "checkpoint", "--adopt", "--store", place.url)
    assert code == 0
    assert out == "Signed 1 head as it stands\nWrote checkpoint #0 of 1 changed head\n"
    code, out, _ = run(capsys, "audit", "checkpoint", "--store", place.url)
    assert (code, out) == (0, "No head changed since the last checkpoint: none written\n")


def test_a_checkpoint_of_an_empty_trail_says_there_is_no_history(
    place: SQLitePlace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def make() -> None:
        async with place.open() as store:
            assert await store.fetch("none") is None

    asyncio.run(make())
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    code, out, err = run(capsys, "audit", "checkpoint", "--store", place.url)
    assert (code, out, err) == (0, "No history to checkpoint yet: none written\n", "")


def test_the_key_file_signs_and_a_rotated_key_still_checks_what_the_old_one_signed(
    place: SQLitePlace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "desk"
    code, out, _ = run(capsys, "audit", "key", "--data-dir", str(folder))
    assert code == 0
    key_file = folder / "audit.key"
    assert str(key_file) in out
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    first = load_audit_keys(folder)
    assert first is not None
    assert run(capsys, "audit", "key", "--data-dir", str(folder))[0] == 0
    assert load_audit_keys(folder).kid == first.kid  # type: ignore[union-attr]
    settled = _settle_one(place, first)
    code, out, _ = run(
        capsys, "audit", "checkpoint", "--store", place.url, "--data-dir", str(folder)
    )
    assert (code, out) == (0, "Wrote checkpoint #0 of 1 changed head\n")

    assert run(capsys, "audit", "key", "--rotate", "--data-dir", str(folder))[0] == 0
    rotated = load_audit_keys(folder)
    assert rotated is not None
    assert rotated.kid != first.kid
    _settle_one(place, rotated)
    assert (
        run(capsys, "audit", "checkpoint", "--store", place.url, "--data-dir", str(folder))[0] == 0
    )
    code, out, err = run(capsys, "audit", "verify", "--store", place.url, "--data-dir", str(folder))
    assert (code, err) == (0, "")
    assert "2 checkpoints hold" in out
    # The new key alone cannot check what the old one signed, and says so.
    newest = key_file.read_text().split()[0]
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "audit.key").write_text(newest)
    os.chmod(alone / "audit.key", 0o600)
    code, _, err = run(capsys, "audit", "verify", "--store", place.url, "--data-dir", str(alone))
    assert code == 1
    assert f"signed with audit key {first.kid!r}, which was not given" in err
    assert settled in err


def _settle_one(place: SQLitePlace, keys: AuditKeys | None) -> str:
    async def work() -> str:
        async with place.open() as store:
            store.trail.use_keys(keys)
            handler = HumanInputHandler(store=store)
            asked = await handler.create("Ask", {"question": "?"})
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
            return asked.pending_id

    return asyncio.run(work())


def test_the_export_carries_the_checkpoints(
    place: SQLitePlace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    filled = fill(place)
    code, out, err = run(capsys, "audit", "export", "--store", place.url)
    assert (code, err) == (0, "")
    lines = [json.loads(line) for line in out.splitlines()]
    entries = [line for line in lines if "entry" in line]
    checkpoints = [line for line in lines if "checkpoint" in line]
    assert len(entries) == 6
    assert [line["n"] for line in checkpoints] == [0, 1]
    assert checkpoints[1]["checkpoint"]["heads"][filled.approval][0] == 4
    assert checkpoints[1]["mac"].startswith(KEYS.kid + ":")


async def test_a_desk_writes_a_checkpoint_as_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    place = SQLitePlace(tmp_path / "desk.db")
    async with place.open() as store:
        async with checkpointing(store.trail, every=3600):
            handler = HumanInputHandler(store=store)
            asked = await handler.create("Ask", {"question": "?"})
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        trail = await store.trail.read()
    assert [checkpoint.n for checkpoint in trail.checkpoints] == [0]
    assert json.loads(trail.checkpoints[0].text)["heads"][asked.pending_id][0] == 2
    assert check_trail(trail, KEYS, now=time.time()).problems == []


async def test_a_checkpoint_that_fails_is_logged_and_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that cannot follow the last one (edited) is refused; the task that writes
    them every so often logs it, once, and carries on."""
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    place = SQLitePlace(tmp_path / "desk.db")
    async with place.open() as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "?"})
        await store.trail.checkpoint()
        (first,) = place.checkpoints()
        place.set_checkpoints(
            [Checkpoint(0, first.text.replace('"chains":1', '"chains":2'), first.mac)]
        )
        assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        with logged("roomkit.audit", "checkpoint #0 does not hold") as refused:
            async with checkpointing(store.trail, every=0.001):
                await asyncio.wait_for(refused.wait(), 30)
    assert len(place.checkpoints()) == 1


async def test_two_writers_at_once_chain_their_checkpoints(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    async with backend.make() as one, backend.make() as other:
        handler = HumanInputHandler(store=one)
        for _ in range(5):
            asked = await handler.create("Ask", {"question": "?"})
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        done = await asyncio.gather(one.trail.checkpoint(), other.trail.checkpoint())
        written = [report.checkpoint for report in done if report.checkpoint is not None]
        # Whoever came second found every head taken, or took what was left after the first.
        assert sorted(checkpoint.n for checkpoint in written) == list(range(len(written)))
        trail = await other.trail.read()
    report = check_trail(trail, KEYS, now=time.time())
    assert report.problems == []
    assert report.chains == 5
    assert report.unlisted == 0


async def test_checkpoints_taken_while_requests_settle_count_every_history_once(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A head that moves between a checkpoint's read and its write is listed as read, and
    taken again by the next checkpoint as one seen before: the count holds."""
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    async with backend.make() as one, backend.make() as other:
        handler = HumanInputHandler(store=one)

        async def settle() -> None:
            for _ in range(20):
                asked = await handler.create("Ask", {"question": "?"})
                await handler.record(asked.pending_id, new_entry("shown", surface="desk"))
                assert await handler.aresolve(asked.pending_id, "yes", by="bob")

        async def checkpoint() -> None:
            for _ in range(20):
                await other.trail.checkpoint()

        await asyncio.gather(settle(), checkpoint())
        await other.trail.checkpoint()
        trail = await one.trail.read()
    report = check_trail(trail, KEYS, now=time.time())
    assert report.problems == []
    assert (report.chains, report.unlisted) == (20, 0)
    assert json.loads(trail.checkpoints[-1].text)["chains"] == 20


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_chain_gone_after_the_audit_retention_is_not_taken_for_a_deletion(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    from tests.tools.human_input.stores.postgres_kit import PostgresBackend
    from tests.tools.human_input.stores.store_kit import SQLiteBackend

    backend: Backend = (
        SQLiteBackend(tmp_path / "kept.db")
        if kind == "sqlite"
        else PostgresBackend(request.getfixturevalue("postgres_server").dsn)
    )
    try:
        async with backend.make(clock=clock, retention_seconds=60, audit_retention=DAY) as store:
            handler = HumanInputHandler(store=store)
            asked = await handler.create("Ask", {"question": "?"})
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
            await store.trail.checkpoint()
            clock.advance(DAY + 1)
            await store.purge_expired()
            trail = await store.trail.read()
    finally:
        await backend.close()
    assert trail.chains == {}
    assert trail.heads == {}
    report = check_trail(trail, KEYS, now=clock.now)
    assert (report.problems, report.purged) == ([], 1)
    # Before the retention has passed, a chain gone is a chain deleted.
    early = check_trail(trail, KEYS, now=clock.now - 2)
    assert early.problems == [
        f"the history of {asked.pending_id!r} was deleted: checkpoint #0 lists it with 2 entries"
    ]


def test_a_rotated_key_file_keeps_the_old_keys(tmp_path: Path) -> None:
    from roomkit.stores import create_audit_key

    path = create_audit_key(tmp_path)
    old = path.read_text().split()
    create_audit_key(tmp_path, rotate=True)
    keys = path.read_text().split()
    assert len(keys) == 2
    assert keys[1:] == old
    assert AuditKeys(keys).kid != AuditKeys(old).kid


def test_short_keys_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        AuditKeys(["short"])
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "short")
    code = main(["audit", "verify", "--store", f"sqlite:///{tmp_path / 'x.db'}"])
    assert code == 2


def test_a_store_signs_with_the_key_of_the_environment(
    place: SQLitePlace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", f"{KEY} an-older-key-0123456789")
    filled = fill(place)
    head = place.head(filled.question)
    assert head is not None
    assert head.mac is not None
    assert head.mac.startswith(KEYS.kid + ":")
    trail = read_trail(place, None)
    assert check_trail(trail, KEYS, now=time.time()).problems == []
