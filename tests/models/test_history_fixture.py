"""A trail written before history entries were typed still holds, entry for entry.

``fixtures/trail_v1.db`` is a SQLite store filled by ``fixtures/make_trail_fixture.py``
with the code of its day, and ``fixtures/trail_v1.jsonl`` its export: every kind of entry,
signed heads and a checkpoint. Today's code must verify it, and make each entry's stored
text again byte for byte from the entry it reads.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roomkit.cli import main
from roomkit.models.history import ENTRY_TYPES, Entry, parse_entry
from roomkit.stores import entry_text
from roomkit.stores.sqlite import SQLiteStore

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "trail-fixture-key-0123456789abcdef"


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "no-data-dir"))
    copy = tmp_path / "trail.db"
    shutil.copyfile(FIXTURES / "trail_v1.db", copy)
    return copy


def test_audit_verify_passes_on_a_trail_written_before(
    database: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    code = main(["audit", "verify", "--store", f"sqlite:///{database}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "11 request histories, 34 entries: every chain holds, every head holds" in out


def test_the_export_of_a_trail_written_before_is_the_same(
    database: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    code = main(["audit", "export", "--store", f"sqlite:///{database}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out == (FIXTURES / "trail_v1.jsonl").read_text(encoding="utf-8")


def _stored(database: Path) -> list[tuple[str, int, str]]:
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT pending_id, seq, entry FROM roomkit_history ORDER BY 1, 2")
        return list(rows)


def test_each_stored_entry_reads_typed_and_encodes_to_the_same_bytes(database: Path) -> None:
    rows = _stored(database)
    assert len(rows) == 34
    kinds = set()
    for _, _, text in rows:
        entry = parse_entry(text)
        assert isinstance(entry, Entry)
        kinds.add(entry.type)
        assert entry_text(entry.to_dict()).encode("utf-8") == text.encode("utf-8")
    # Every kind there was when the fixture was written; the others came after.
    later = {"delivered", "saved", "grant_offered", "granted", "grant_used", "policy_decided"}
    assert kinds == ENTRY_TYPES - later


async def test_a_history_read_from_the_store_is_typed_and_links_the_same(database: Path) -> None:
    rows = _stored(database)
    async with SQLiteStore(database) as store:
        for pending_id in sorted({pending_id for pending_id, _, _ in rows}):
            stored = [text for named, _, text in rows if named == pending_id]
            read = await store.read_history(pending_id)
            typed = [parse_entry(entry) for entry in read]
            assert [entry.seq for entry in typed] == list(range(len(stored)))
            again = [entry.to_dict() for entry in typed]
            assert again == read
            # Written again (without its seq), each entry is its stored text.
            for entry, text in zip(again, stored, strict=True):
                del entry["seq"]
                assert entry_text(entry) == text


def test_each_exported_entry_reads_typed_and_back_to_the_same_object() -> None:
    lines = (FIXTURES / "trail_v1.jsonl").read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line)["entry"] for line in lines if '"entry"' in line[:9]]
    assert len(entries) == 34
    for entry in entries:
        assert parse_entry(entry).to_dict() == entry
