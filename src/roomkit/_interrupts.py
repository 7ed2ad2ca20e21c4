"""Ctrl-C for a command that serves until it is stopped: ``roomkit desk``, ``mcp``, ``notify``.

Such a command first starts (checks its store, binds its socket), then serves until Ctrl-C
or SIGTERM. Ctrl-C while it starts interrupts it: it exits 130 (:data:`INTERRUPTED`), as any
interrupted command does, with nothing printed. Ctrl-C or SIGTERM once it serves stops it: it
exits 0.
:class:`Interrupts` tells the two apart from the command's first step, so that Ctrl-C never
lands on ``asyncio.run``'s own handler, whose cancellation surfaces wherever the command
happens to be (inside uvicorn's startup, which logs it as a failure) and whose
``KeyboardInterrupt`` says nothing of whether the command had served. It needs no web
server: ``roomkit notify`` serves none.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, Protocol

__all__ = ["INTERRUPTED", "Interrupts"]

INTERRUPTED = 130
"""The exit status of a command that Ctrl-C stopped before it served (any interrupted
command's)."""


class _Server(Protocol):
    """What :class:`Interrupts` asks of a server (``roomkit._serving.Server``)."""

    serving: bool
    interrupted: bool

    def handle_exit(self, sig: int, frame: FrameType | None) -> None: ...


class Interrupts:
    """Ctrl-C (SIGINT) and SIGTERM for a command that starts, then serves, from its first step.

    Before the command serves (a store being checked, a socket bound), Ctrl-C cancels the
    task starting it, and the command exits as interrupted (130). Once :attr:`server` is
    set, Ctrl-C is the server's to handle, which stops it (as interrupted only when it was
    not serving yet); once the command said it serves through :meth:`serve`, Ctrl-C calls
    the stop it gave, and the command exits 0. SIGTERM stops a command that serves as Ctrl-C
    does (exit 0); before it serves, it ends the command as the signal's default does.
    """

    def __init__(self) -> None:
        self.server: _Server | None = None
        """The server, once the command made it: Ctrl-C is its to handle from then on."""
        self._cancelled = False
        self._serving = False
        self._stop: Callable[[], object] | None = None

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the command before it was serving."""
        return self._cancelled or (self.server is not None and self.server.interrupted)

    @property
    def serving(self) -> bool:
        """Whether the command (or its server) got as far as serving."""
        return self._serving or (self.server is not None and self.server.serving)

    def serve(self, stop: Callable[[], object] | None = None) -> None:
        """Say that the command serves from now on, without a :attr:`server`: Ctrl-C calls
        ``stop`` (or, without one, cancels the task watched), which ends the command as
        stopped (exit 0), not as interrupted."""
        self._serving = True
        self._stop = stop

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Handle Ctrl-C and SIGTERM for the current task while the block runs (in the main
        thread)."""
        task = asyncio.current_task()
        if task is None or threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()

        def stop(signum: signal.Signals) -> None:
            if self.server is not None:
                self.server.handle_exit(signum, None)
            elif self._stop is not None:
                self._stop()
            elif self._serving:
                task.cancel()
            elif signum is signal.SIGINT:
                self._cancelled = True
                task.cancel()
            else:
                # Before it serves, SIGTERM ends the command as the signal's default does.
                loop.remove_signal_handler(signum)
                os.kill(os.getpid(), signum)

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
        try:
            yield
        finally:
            # The server's own handling may have removed them already: then this does nothing.
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGTERM)

    def run(self, main: Callable[[], Coroutine[Any, Any, None]]) -> int:
        """Run ``main()`` in a new event loop, Ctrl-C watched from its first step; the exit
        status: 0 once it ends or Ctrl-C stopped it serving, :data:`INTERRUPTED` when Ctrl-C
        stopped it before it served.

        Raises:
            KeyboardInterrupt: Ctrl-C came outside the watch (before the loop ran it).
            BaseException: whatever ``main()`` raised.
        """

        async def watched() -> None:
            with self.watching():
                await main()

        try:
            asyncio.run(watched())
        except (KeyboardInterrupt, asyncio.CancelledError):
            # Ctrl-C before the command served (or after it stopped serving, which is a stop).
            if not self.interrupted and not self.serving:
                raise
        return INTERRUPTED if self.interrupted else 0
