"""Ctrl-C for a command that serves until stopped: ``roomkit desk``, ``mcp``, ``notify``, the demo.

Such a command first starts (checks its store, binds its socket), then serves until Ctrl-C
or SIGTERM. Ctrl-C while it starts interrupts it: it exits 130 (:data:`INTERRUPTED`), as any
interrupted command does, with nothing printed. Ctrl-C or SIGTERM once it serves stops it: it
exits 0.
:class:`Interrupts` tells the two apart from the command's first step, so that Ctrl-C never
lands on ``asyncio.run``'s own handler, whose cancellation surfaces wherever the command
happens to be (inside uvicorn's startup, which logs it as a failure) and whose
``KeyboardInterrupt`` says nothing of whether the command had served. It needs no web
server: ``roomkit notify`` serves none.

A second Ctrl-C or SIGTERM while the command stops (its server letting the requests under
way finish, its store closing, a notifier handing back what it owes) cuts nothing short: it
is logged once, and the stop goes on. A third exits at once, with 130 for Ctrl-C and 143
for SIGTERM (128 and the signal's number), whatever is left undone. When the command ends,
each signal gets back the handler it had before (:func:`handling_signals`): a process that
runs a command's code among its own keeps its own SIGTERM handling. The ``roomkit`` command's
own process, which has nothing else to do once the command ended, keeps treating a stop signal
as one that came while it stops until it exits (:func:`stopping_until_exit`): Python's
teardown takes a moment, and the signal's default there would end a stopped command as killed
by it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import logging
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, Protocol

__all__ = ["INTERRUPTED", "Interrupts", "handling_signals", "stopping_until_exit", "watched"]

logger = logging.getLogger("roomkit")

SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a command: Ctrl-C and SIGTERM."""

ALREADY_STOPPING = "Already stopping: letting it finish; Ctrl-C or SIGTERM again exits at once"
"""Logged (once) when a second stop signal comes while the command stops."""

INTERRUPTED = 130
"""The exit status of a command that Ctrl-C stopped before it served (any interrupted
command's)."""


_WATCHING: contextvars.ContextVar[Interrupts | None] = contextvars.ContextVar(
    "roomkit_interrupts", default=None
)
"""The :class:`Interrupts` watching the current task, if any."""


def stopping_until_exit() -> None:
    """From the end of the ``roomkit`` command to the end of its process, a stop signal is one
    that came while it stops: logged once (unless the command logged it already), the next
    exits at once with 128 and the signal's number; once the exit's own steps begin
    (``atexit``), after which Python puts each signal's default back, both are ignored, so
    that the interpreter's teardown ends a command that stopped cleanly with its own status.
    Only for the command's own process: it installs process-wide handlers for good."""
    repeats = 1 if _logged.is_set() else 0

    def again(signum: int, frame: FrameType | None) -> None:
        nonlocal repeats
        repeats += 1
        if repeats == 1:
            _logged.set()
            logger.warning(ALREADY_STOPPING)
            return
        os._exit(128 + signum)

    for signum in SIGNALS:
        signal.signal(signum, again)
    atexit.register(_ignore_stop_signals)


def _ignore_stop_signals() -> None:
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


_logged = threading.Event()
"""Set once this process logged :data:`ALREADY_STOPPING`."""


def watched(server: object) -> bool:
    """Whether the :class:`Interrupts` watching the current task hands its signals to
    ``server``: then the server installs no handlers of its own."""
    interrupts = _WATCHING.get()
    return interrupts is not None and interrupts.server is server


@contextlib.contextmanager
def handling_signals(
    loop: asyncio.AbstractEventLoop, callback: Callable[[signal.Signals], object]
) -> Iterator[None]:
    """Call ``callback(signum)`` on Ctrl-C (SIGINT) and SIGTERM while the block runs, through
    ``loop.add_signal_handler`` (so in the main thread), then give each signal back the
    handler it had before.

    The handler a signal had is put back however it was installed: one installed with
    ``signal.signal`` (``asyncio.run``'s own for Ctrl-C, an application's for SIGTERM), or
    one that asyncio's event loop runs (``loop.add_signal_handler`` on ``loop``), which
    ``signal.getsignal`` shows only as the loop's placeholder and which is read from the
    loop's table of handlers. A handler that an event loop keeps out of sight (uvloop's, or
    one added on another loop) cannot be seen, so it cannot be put back: the placeholder
    ``signal.getsignal`` showed comes back, and the signal does nothing until that loop's
    handler is added again.

    Raises:
        RuntimeError: ``loop`` cannot handle signals here (not in the main thread).
    """
    before = {signum: (signal.getsignal(signum), _loop_handler(loop, signum)) for signum in SIGNALS}
    added: list[signal.Signals] = []
    try:
        for signum in SIGNALS:
            loop.add_signal_handler(signum, callback, signum)
            added.append(signum)
        yield
    finally:
        for signum in added:
            # Removing it resets the signal to its default, and the loop's table entry too.
            loop.remove_signal_handler(signum)
            handler, on_loop = before[signum]
            if on_loop is not None:
                callback_before, args = on_loop
                loop.add_signal_handler(signum, callback_before, *args)
            elif handler is not None:
                signal.signal(signum, handler)


def _loop_handler(
    loop: asyncio.AbstractEventLoop, signum: signal.Signals
) -> tuple[Callable[..., object], tuple[Any, ...]] | None:
    """The callback and arguments ``loop.add_signal_handler`` gave ``signum``, read from
    asyncio's event loop (``None`` without one, or on a loop that keeps them out of sight)."""
    table = getattr(loop, "_signal_handlers", None)
    handle = table.get(signum) if isinstance(table, dict) else None
    if not isinstance(handle, asyncio.Handle) or handle.cancelled():
        return None
    callback = getattr(handle, "_callback", None)
    args = getattr(handle, "_args", None)
    if not callable(callback) or not isinstance(args, tuple):
        return None
    return callback, args


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
    does (exit 0); before it serves, it calls :attr:`terminate` when the command set one,
    else it ends the command as the signal's default does.

    Once one of them started the stop, a second is logged (once) and changes nothing: the
    command's cleanup (its stores closing) finishes. A third exits the process at once,
    with 128 and the signal's number (130 for Ctrl-C, 143 for SIGTERM).
    """

    def __init__(self) -> None:
        self.server: _Server | None = None
        """The server, once the command made it: Ctrl-C is its to handle from then on."""
        self.terminate: Callable[[], object] | None = None
        """What SIGTERM calls before the command serves; ``None``: the signal's default."""
        self._cancelled = False
        self._serving = False
        self._stop: Callable[[], object] | None = None
        self._stopping = False
        self._repeats = 0

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
        thread); then each signal gets back the handler it had (:func:`handling_signals`)."""
        task = asyncio.current_task()
        if task is None or threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()

        def stop(signum: signal.Signals) -> None:
            if self._stopping:
                self._again(signum)
                return
            self._stopping = True
            if self.server is not None:
                self.server.handle_exit(signum, None)
            elif self._stop is not None:
                self._stop()
            elif self._serving:
                task.cancel()
            elif signum is signal.SIGINT:
                self._cancelled = True
                task.cancel()
            elif self.terminate is not None:
                self.terminate()
            else:
                # Before it serves, SIGTERM ends the command as the signal's default does.
                loop.remove_signal_handler(signum)
                os.kill(os.getpid(), signum)

        watching = _WATCHING.set(self)
        try:
            with handling_signals(loop, stop):
                yield
        finally:
            _WATCHING.reset(watching)

    def _again(self, signum: signal.Signals) -> None:
        """A stop signal while the command stops: logged the first time, the next exits."""
        self._repeats += 1
        if self._repeats == 1:
            _logged.set()
            logger.warning(ALREADY_STOPPING)
            return
        # Asked three times: the process ends now, without the rest of its cleanup.
        os._exit(128 + signum)

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
