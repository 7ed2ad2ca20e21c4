"""``python -m roomkit.desk.demo`` in a terminal whose encoding lacks a letter it prints (a
data folder's name in the commands it lists) prints that letter as an escape, as the
``roomkit`` command does, and serves on, where a ``UnicodeEncodeError`` stopped it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from roomkit.desk.demo import SLACK_HINT

STARTUP = 30.0
ASCII = {"PYTHONIOENCODING": "ascii"}
C_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
"""A C locale as Python sees it when nothing turns it into UTF-8."""


@pytest.mark.parametrize(
    ("terminal", "printed"),
    [
        (ASCII, b"caf\\xe9"),
        # The bytes typed come back as they were, for the terminal to show.
        (C_LOCALE, "café".encode()),
    ],
    ids=["ascii", "c-locale"],
)
async def test_a_data_folder_the_terminal_cannot_spell_is_printed(
    terminal: dict[str, str], printed: bytes, tmp_path: Path
) -> None:
    env = {**os.environ, "PORT": "0", "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", **terminal}
    for name in {"PYTHONIOENCODING", "LC_ALL", "PYTHONUTF8"} - set(terminal):
        env.pop(name, None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roomkit.desk.demo",
        "--data-dir",
        str(tmp_path / "café"),
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    lines: list[bytes] = []
    try:
        assert process.stdout is not None
        async with asyncio.timeout(STARTUP):
            while not lines or not lines[-1].startswith(SLACK_HINT.encode()):
                line = await process.stdout.readline()
                if not line:
                    break
                lines.append(line)
        assert process.returncode is None
    finally:
        if process.returncode is None:
            process.kill()
        _, stderr = await process.communicate()
    said = b"".join(lines)
    assert said.startswith(b"Open http://127.0.0.1:"), stderr.decode(errors="replace")
    # The folder is quoted for the shell: its name is no plain word.
    assert b"--data-dir '" + str(tmp_path).encode() + b"/" + printed + b"'" in said
    assert lines[-1].startswith(SLACK_HINT.encode())
