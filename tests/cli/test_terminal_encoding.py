"""A terminal whose encoding lacks a letter the output holds (``PYTHONIOENCODING=ascii``, a
C locale) gets that letter as an escape, never a ``UnicodeEncodeError``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from roomkit import HumanInputHandler
from roomkit.stores.sqlite import SQLiteStore


def roomkit_on_ascii(*argv: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``python -m roomkit ARGV`` writing to an ASCII-only terminal."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "ROOMKIT_DESK_DATA": str(cwd / "data")}
    env.pop("ROOMKIT_AUDIT_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "roomkit", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def test_a_path_the_terminal_cannot_spell_is_escaped(tmp_path: Path) -> None:
    done = roomkit_on_ascii("audit", "key", "--data-dir", str(tmp_path / "café"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert b"caf\\xe9" in done.stdout
    assert (tmp_path / "café" / "audit.key").is_file()


def test_an_export_of_text_the_terminal_cannot_spell_stays_json(tmp_path: Path) -> None:
    """The export's lines read back as the same JSON: the letters go as JSON escapes."""
    path = tmp_path / "kit.db"

    async def ask() -> None:
        async with SQLiteStore(path) as store:
            handler = HumanInputHandler(store=store)
            await handler.create("Ask", {"question": "Prêt ? ✓"}, room_id="r1")

    asyncio.run(ask())
    done = roomkit_on_ascii("audit", "export", "--store", f"sqlite:///{path}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    entries = [json.loads(line)["entry"] for line in done.stdout.decode("ascii").splitlines()]
    assert entries[0]["arguments"] == {"question": "Prêt ? ✓"}
