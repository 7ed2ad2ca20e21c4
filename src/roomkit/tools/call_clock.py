"""The clock of a call's bound: it runs while the tool works, and stops while a person answers.

A channel serves each call under :class:`CallClock`, a cancellation after the call's bound
(``None``: never) that counts only the tool's own time. A tool that asks a person in the
middle of its work (an MCP server's elicitation) holds :meth:`CallClock.stopped` around the
wait, so the person's time is measured by the person's own deadline, not by the call's
bound; the clock takes up where it stopped when the answer is in. Waits may overlap (a
server that asks two things at once): the clock runs again when the last one ends.

The clock of the call being served is :func:`current_call_clock`, set for the call and reset
when it ends; a tool whose person is asked in another task (an elicitation pushed on the
client's connection) reads it in the call and holds it there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Self

__all__ = ["CallClock", "current_call_clock"]


_current: ContextVar[CallClock | None] = ContextVar("roomkit_call_clock", default=None)


def current_call_clock() -> CallClock | None:
    """The clock of the call being served, or ``None`` outside a channel's call."""
    return _current.get()


class CallClock:
    """A call's bound, as an ``async with`` block that cancels the call once it is spent.

    Args:
        seconds: the tool's own time the call may take (``None``: unbounded).
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._timeout = asyncio.timeout(None)
        self._left: float | None = seconds
        self._waits = 0
        self._running = False
        self._token: Token[CallClock | None] | None = None

    async def __aenter__(self) -> Self:
        await self._timeout.__aenter__()
        self._running = True
        self._token = _current.set(self)
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._running = False
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        await self._timeout.__aexit__(exc_type, exc, traceback)

    def expired(self) -> bool:
        """Whether the bound was spent and the call cancelled for it."""
        return self._timeout.expired()

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """Stop the clock for the code inside (a person's wait), and start it again after.

        The time left is kept: the tool's work after the wait has what its work before it
        did not spend. A clock already spent, or whose call has ended, stays as it is.
        """
        self._waits += 1
        if self._waits == 1:
            self._stop()
        try:
            yield
        finally:
            self._waits -= 1
            if self._waits == 0:
                self._start()

    def _live(self) -> bool:
        return self._running and self.seconds is not None and not self._timeout.expired()

    def _stop(self) -> None:
        when = self._timeout.when()
        if not self._live() or when is None:
            return
        self._left = max(when - asyncio.get_running_loop().time(), 0.0)
        self._timeout.reschedule(None)

    def _start(self) -> None:
        if not self._live() or self._left is None:
            return
        self._timeout.reschedule(asyncio.get_running_loop().time() + self._left)
