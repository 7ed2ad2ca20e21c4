"""Processes of their own for the tests that race or kill one, forked from a server that has
imported roomkit already.

Each peer is an OS process with its own connections and its own event loop, killed with a
real SIGKILL, as one started with ``python -m`` would be; it only skips the interpreter's
start and roomkit's imports (most of a second of CPU each), which a forkserver did once per
test process. It runs one coroutine function of a module the forkserver imported, with the
test's environment (or the one it is given), working folder and standard error as they are
when it starts; its standard input and output are one socket to the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from multiprocessing import reduction
from pathlib import Path
from typing import Any

_PRELOAD = [
    "__main__",
    "tests.tools.human_input.stores.race_peer",
    "tests.core.restart_agent",
    "tests.adapters.framework_resumers",
    "tests.adapters.langgraph_resumer",
    "tests.notify.notifier_peer",
    "tests.push.phone_peer",
    "tests.tools.human_input.durable.cross_process_peer",
    "tests.tools.human_input.durable.shown_peer",
    "tests.adapters.door_peer",
    "tests.adapters.door_kits",
    "roomkit.notify",
    "roomkit.stores.sqlite",
    "roomkit.stores.redis",
    "roomkit.stores.postgres",
    "roomkit.adapters.openai_agents",
    "roomkit.adapters.pydantic_ai",
    "agents",
    "agents.testing",
    "pydantic_ai",
]
"""What the forkserver imports once for every peer: the modules whose ``main`` peers run, the
stores they open and the frameworks they resume runs of (a module missing is left out);
``__main__`` (pytest's script, run as a module that is not the main one) so that each peer
does not import it again. One forkserver serves the whole test process, so every module
peers run from is named here."""

ROOT = Path(__file__).resolve().parents[1]
"""The checkout the tests run from."""

Main = Callable[..., Coroutine[Any, Any, None]]
"""What a peer runs: ``main(*argv)``, a coroutine function at the top of its module."""
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(_PRELOAD)


class _Inherited:
    """A file descriptor the peer gets a copy of (the test's standard error)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return _detached, (reduction.DupFd(self.fd),)


def _detached(duplicate: Any) -> int:
    fd: int = duplicate.detach()
    return fd


def _run(
    main: Main,
    channel: socket.socket,
    stderr: int,
    env: dict[str, str],
    cwd: str,
    argv: list[str],
) -> None:
    """The peer's body: the test's environment, folder and standard error, the socket as
    standard input and output, then ``main(*argv)``."""
    os.dup2(stderr, 2)
    os.close(stderr)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.stdin = channel.makefile("r", encoding="utf-8")
    sys.stdout = channel.makefile("w", encoding="utf-8")
    asyncio.run(main(*argv))
    sys.stdout.flush()


class Peer:
    """A running peer: ``stdin`` and ``stdout`` are its socket's two directions."""

    def __init__(
        self,
        process: Any,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._process = process
        self.stdout = reader
        self.stdin = writer

    @property
    def returncode(self) -> int | None:
        """Its exit code once it ended (``-9`` when SIGKILL ended it), else ``None``."""
        code: int | None = self._process.exitcode
        return code

    def kill(self) -> None:
        self._process.kill()

    def send_signal(self, signum: int) -> None:
        """Send ``signum``, unless it ended meanwhile: the forkserver, its parent, reaps it
        before this process reads its exit code."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, signum)

    async def wait(self) -> int:
        """Its exit code, once it ends; its socket is closed then."""
        if self._process.exitcode is None:
            loop = asyncio.get_running_loop()
            ended = loop.create_future()
            sentinel = self._process.sentinel
            loop.add_reader(sentinel, lambda: ended.done() or ended.set_result(None))
            try:
                await ended
            finally:
                loop.remove_reader(sentinel)
        self._process.join()
        self.stdin.close()
        code: int = self._process.exitcode
        return code

    async def communicate(self) -> tuple[bytes, None]:
        """Everything it writes until it ends, once it ended (its input closed first)."""
        if not self.stdin.is_closing():
            self.stdin.write_eof()
        out = await self.stdout.read()
        await self.wait()
        return out, None


async def start(main: Main, cwd: Path, *argv: str, env: Mapping[str, str] | None = None) -> Peer:
    """A peer running ``main(*argv)`` in ``cwd``, with ``env`` (else the test's) as its
    environment."""
    ours, theirs = socket.socketpair()
    environment = dict(os.environ if env is None else env)
    try:
        process = _FORKSERVER.Process(
            target=_run,
            args=(main, theirs, _Inherited(2), environment, str(cwd), list(argv)),
            # Ended with the test process, should a failed test leave one running.
            daemon=True,
        )
        # The first start launches the forkserver, which imports roomkit: off the loop.
        await asyncio.to_thread(process.start)
    finally:
        theirs.close()
    reader, writer = await asyncio.open_connection(sock=ours)
    return Peer(process, reader, writer)


@asynccontextmanager
async def ready(main: Main, *argv: str) -> AsyncIterator[Peer]:
    """A peer running ``main(*argv)`` from the checkout, once it printed ``ready``; on the
    way out it gets SIGTERM unless it ended already."""
    process = await start(main, ROOT, *argv)
    try:
        assert (await process.stdout.readline()).strip() == b"ready"
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()
