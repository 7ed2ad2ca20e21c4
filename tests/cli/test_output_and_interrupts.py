"""What becomes of a command whose output cannot be written: one line on stderr and the exit
status; never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def roomkit(*argv: str, cwd: Path, **options: object) -> subprocess.Popen[bytes]:
    """``python -m roomkit ARGV``, started."""
    env = {**os.environ, "ROOMKIT_DESK_DATA": str(cwd / "data")}
    for name in ("ROOMKIT_AUDIT_KEY", "ROOMKIT_DESK_SECRET"):
        env.pop(name, None)
    return subprocess.Popen(
        [sys.executable, "-m", "roomkit", *argv],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        **options,  # type: ignore[call-overload]
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_to_a_full_disk_is_one_line(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        child = roomkit("token", "alice", "--data-dir", str(tmp_path), cwd=tmp_path, stdout=full)
        _, err = child.communicate(timeout=60)
    assert child.returncode == 1
    assert err.decode().splitlines() == [
        "roomkit: cannot write the output (No space left on device): it is cut short; make "
        "room, then run the command again"
    ]
