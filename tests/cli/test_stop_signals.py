"""Stop signals around roomkit's serving code, in processes of their own sent real signals:
the handlers the process had come back once it stops, and a signal repeated while it stops
cuts nothing short until the third."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

ALREADY_STOPPING = "Already stopping: letting it finish; Ctrl-C or SIGTERM again exits at once"
ROOT = Path(__file__).resolve().parents[2]
STEP = 30.0


@asynccontextmanager
async def peer(embedded: str, own: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``tests.cli.stopping_peer EMBEDDED OWN``, started and serving."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.cli.stopping_peer",
        embedded,
        own,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )
    try:
        assert await said(process) == "serving"
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.communicate()


async def said(process: asyncio.subprocess.Process, *, stream: str = "stdout") -> str:
    """The next line ``process`` writes to ``stream``."""
    reader = process.stdout if stream == "stdout" else process.stderr
    assert reader is not None
    async with asyncio.timeout(STEP):
        return (await reader.readline()).decode().rstrip("\n")


async def finish_cleanup(process: asyncio.subprocess.Process) -> None:
    """Let the held cleanup end."""
    assert process.stdin is not None
    process.stdin.write(b"\n")
    await process.stdin.drain()


@pytest.mark.parametrize("own", ["python", "loop"])
@pytest.mark.parametrize("embedded", ["server", "command", "command-server"])
async def test_the_process_gets_its_own_sigterm_handler_back(embedded: str, own: str) -> None:
    """An application running a desk or a notifier among its own work keeps its SIGTERM
    handling once they stop, whether it installed it with ``signal`` or on its loop."""
    async with peer(embedded, own) as process:
        process.send_signal(signal.SIGTERM)
        assert await said(process) == "cleaning up"
        await finish_cleanup(process)
        assert await said(process) == "cleaned up"
        assert await said(process) == "stopped"
        process.send_signal(signal.SIGTERM)
        assert await said(process) == "own handler"
        async with asyncio.timeout(STEP):
            assert await process.wait() == 0


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("embedded", ["command", "command-server"])
async def test_a_second_stop_signal_is_logged_and_the_cleanup_finishes(
    embedded: str, stop: signal.Signals
) -> None:
    async with peer(embedded, "none") as process:
        process.send_signal(stop)
        assert await said(process) == "cleaning up"
        process.send_signal(stop)
        assert await said(process, stream="stderr") == ALREADY_STOPPING
        await finish_cleanup(process)
        assert await said(process) == "cleaned up"
        assert await said(process) == "stopped"
        async with asyncio.timeout(STEP):
            _, err = await process.communicate()
        assert (process.returncode, err) == (0, b"")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("embedded", ["command", "command-server"])
async def test_a_third_stop_signal_exits_at_once(embedded: str, stop: signal.Signals) -> None:
    """128 and the signal's number: 143 for SIGTERM, 130 for Ctrl-C; the cleanup is left."""
    async with peer(embedded, "none") as process:
        process.send_signal(stop)
        assert await said(process) == "cleaning up"
        process.send_signal(stop)
        assert await said(process, stream="stderr") == ALREADY_STOPPING
        process.send_signal(stop)
        async with asyncio.timeout(STEP):
            out, err = await process.communicate()
        assert (process.returncode, out, err) == (128 + stop, b"", b"")


# The command's process sends itself the signals as it exits, once the command returned: what
# a repeated SIGTERM or Ctrl-C meets after a stopped command printed its last line.
_AFTER_THE_COMMAND = (
    "import atexit, os, runpy, signal, sys; "
    "names = sys.argv[1].split(','); "
    "atexit.register(lambda: [os.kill(os.getpid(), signal.Signals[name]) for name in names]); "
    "sys.argv = ['roomkit', *sys.argv[2:]]; "
    "runpy.run_module('roomkit.cli', run_name='__main__')"
)


@pytest.mark.parametrize(
    "signals", ["SIGTERM", "SIGINT", "SIGTERM,SIGTERM,SIGINT"], ids=["SIGTERM", "Ctrl-C", "several"]
)
async def test_stop_signals_as_the_process_exits_leave_its_status(
    signals: str, tmp_path: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _AFTER_THE_COMMAND,
        signals,
        "token",
        "alice",
        "--data-dir",
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(STEP):
        out, err = await process.communicate()

    assert process.returncode == 0
    assert out.count(b".") == 1  # the token, printed whole
    assert b"Traceback" not in err
