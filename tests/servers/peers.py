"""A test's helper in a process of its own, started with ``python -m``, for the tests that
kill one.

:func:`peer` starts ``python -m MODULE ARGS...`` from the checkout (the tests' package and
its ``src`` first on the path), waits for its ``ready`` line, and on the way out sends it
SIGTERM unless the test killed it already.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

__all__ = ["ROOT", "peer"]

ROOT = Path(__file__).resolve().parents[2]
"""The checkout the tests run from."""


@asynccontextmanager
async def peer(module: str, *args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m module args...``, once it printed ``ready``."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])},
    )
    assert process.stdout is not None
    assert (await process.stdout.readline()).strip() == b"ready"
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()
