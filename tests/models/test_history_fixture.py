"""A trail written before history entries were typed still holds, entry for entry.

``fixtures/trail_v1.db`` is a SQLite store filled by ``fixtures/make_trail_fixture.py``
with the code of its day, and ``fixtures/trail_v1.jsonl`` its export: every kind of entry,
signed heads and a checkpoint. Today's code must verify it, and make each entry's stored
text again byte for byte from the entry it reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roomkit.cli import main

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
