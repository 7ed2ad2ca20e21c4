"""The doors' test kits, ``agui_front`` and ``a2a_world``, imported by the names the tests
import them by, in a process whose path pytest did not set (the forkserver of
:mod:`tests.forked_processes`): each kit's folder is put on the path first."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent

for _kit in ("agui", "a2a"):
    if str(HERE / _kit) not in sys.path:
        sys.path.append(str(HERE / _kit))

import a2a_world  # noqa: E402
import agui_front  # noqa: E402

__all__ = ["a2a_world", "agui_front"]
