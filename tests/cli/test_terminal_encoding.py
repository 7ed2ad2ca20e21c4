"""A terminal whose encoding lacks a letter the output holds (``PYTHONIOENCODING=ascii``, a
C locale) gets that letter as an escape, never a ``UnicodeEncodeError``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roomkit import HumanInputHandler
from roomkit.stores.sqlite import SQLiteStore

ASCII = {"PYTHONIOENCODING": "ascii"}
C_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
"""A C locale as Python sees it when nothing turns it into UTF-8: ASCII, and arguments'
bytes beyond it kept as surrogates."""
TERMINALS = pytest.mark.parametrize("terminal", [ASCII, C_LOCALE], ids=["ascii", "c-locale"])


def roomkit_on(
    terminal: dict[str, str], *argv: str, cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    """``python -m roomkit ARGV`` writing to the ``terminal`` given."""
    env = {**os.environ, "ROOMKIT_DESK_DATA": str(cwd / "data"), **terminal}
    for name in {"PYTHONIOENCODING", "LC_ALL", "PYTHONUTF8"} - set(terminal):
        env.pop(name, None)
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


@pytest.mark.parametrize(
    ("terminal", "printed"),
    [
        (ASCII, b"caf\\xe9"),
        # The bytes typed come back as they were, for the terminal to show.
        (C_LOCALE, "café".encode()),
    ],
    ids=["ascii", "c-locale"],
)
def test_a_path_the_terminal_cannot_spell_is_printed(
    terminal: dict[str, str], printed: bytes, tmp_path: Path
) -> None:
    done = roomkit_on(terminal, "audit", "key", "--data-dir", str(tmp_path / "café"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert printed + b"/audit.key" in done.stdout
    assert (tmp_path / "café" / "audit.key").is_file()


@TERMINALS
def test_an_export_of_text_the_terminal_cannot_spell_stays_json(
    terminal: dict[str, str], tmp_path: Path
) -> None:
    """The export's lines read back as the same JSON: the letters go as JSON escapes."""
    path = tmp_path / "kit.db"

    async def ask() -> None:
        async with SQLiteStore(path) as store:
            handler = HumanInputHandler(store=store)
            await handler.create("Ask", {"question": "Prêt ? ✓"}, room_id="r1")

    asyncio.run(ask())
    done = roomkit_on(terminal, "audit", "export", "--store", f"sqlite:///{path}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    entries = [json.loads(line)["entry"] for line in done.stdout.decode("ascii").splitlines()]
    assert entries[0]["arguments"] == {"question": "Prêt ? ✓"}


def test_an_export_shows_no_control_a_terminal_would_run(tmp_path: Path) -> None:
    """A C1 control, a bidirectional override or a line separator in a question goes as a
    JSON escape: what JSON alone escapes is only the C0 controls."""
    path = tmp_path / "kit.db"
    question = "Prêt ?\x9b31m\u202eevil\u2028\x1b[2J"

    async def ask() -> None:
        async with SQLiteStore(path) as store:
            handler = HumanInputHandler(store=store)
            await handler.create("Ask", {"question": question}, room_id="r1")

    asyncio.run(ask())
    done = roomkit_on({}, "audit", "export", "--store", f"sqlite:///{path}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    out = done.stdout.decode("utf-8")
    assert "Prêt ?\\u009b31m\\u202eevil\\u2028\\u001b[2J" in out
    assert all(ch.isprintable() for line in out.splitlines() for ch in line)
    entries = [json.loads(line)["entry"] for line in out.splitlines()]
    assert entries[0]["arguments"] == {"question": question}
