"""Ctrl-C while ``python -m roomkit.desk.demo`` still starts interrupts it: 130, as it does
``roomkit desk``."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path


def test_ctrl_c_while_the_demo_starts_exits_130(tmp_path: Path) -> None:
    """Held as it reads its key (a pipe the test writes once it sent Ctrl-C): the demo has
    printed nothing, and exits as interrupted."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    key = data / "desk.key"
    os.mkfifo(key, 0o600)
    child = subprocess.Popen(
        [sys.executable, "-m", "roomkit.desk.demo", "--data-dir", str(data)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PORT": "0", "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
        cwd=tmp_path,
    )
    try:
        # Opening the pipe to write returns once the demo opened it to read its key.
        with open(key, "w", encoding="ascii") as pipe:
            child.send_signal(signal.SIGINT)
            pipe.write(secrets.token_urlsafe(48) + "\n")
        out, err = child.communicate(timeout=60)
    finally:
        if child.returncode is None:
            child.kill()
            child.communicate()
    assert (child.returncode, out, err.decode()) == (130, b"", "")
