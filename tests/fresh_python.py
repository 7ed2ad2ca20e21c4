"""A new interpreter that imports roomkit from the sources the tests run on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import roomkit

SOURCES = Path(roomkit.__file__).resolve().parents[1]
"""The folder that holds the ``roomkit`` package the tests import."""


def fresh_python(*args: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a new interpreter, with its output captured as text."""
    path = os.pathsep.join(filter(None, [str(SOURCES), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=60,
        check=False,
    )
