"""A wait's first reads, through an outage of the store.

A wait reads its request (and sets its deadline) before it parks. A wait that finds the store
unreachable then rides the outage out as a parked wait does: it waits for the store to
answer again and reads then, its deadline still counted from the call. The waits that find
the store away share one probe of it, a read retried with a short backoff, so an outage costs
one attempt per step however many waits begin meanwhile; the probe ends with the last wait
that needs it, so nothing outlives a loop that shuts down. A store closed meanwhile ends
them with :class:`~roomkit.core.exceptions.StoreClosedError`, a handler closed meanwhile
with :class:`~roomkit.core.exceptions.HandlerClosedError`; so does a close of the channel
of a wait whose channel is known before its read (a request created here, or a deadline's
write after the read), the other waits riding on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from roomkit.core.exceptions import StoreClosedError, StoreUnavailableError

__all__ = ["OUTAGE_RETRY", "Outage", "backoff"]

logger = logging.getLogger("roomkit.tools.human_input")

T = TypeVar("T")

OUTAGE_RETRY = 0.02
"""Seconds before the first retry after an outage; it doubles up to the backstop interval."""


def backoff(failures: int, interval: float) -> float:
    """Seconds to wait after ``failures`` failed attempts in a row, at most ``interval``."""
    return min(interval, OUTAGE_RETRY * float(2 ** min(failures, 6)))


class Outage:
    """The probe shared by the waits that found the store unreachable before they parked."""

    __slots__ = ("_closed", "_closed_for", "_interval", "_probe", "_riders", "riding")

    def __init__(
        self, interval: float, closed_for: Callable[[str], Callable[[], Exception] | None]
    ) -> None:
        self._interval = interval
        self._closed_for = closed_for
        self._probe: asyncio.Task[None] | None = None
        self._closed: Callable[[], Exception] | None = None
        # Each blocked wait's own wake-up, and its request's channel when known.
        self._riders: dict[asyncio.Future[None], str | None] = {}
        self.riding = 0
        """How many waits are blocked until the store answers again."""

    async def through(
        self,
        call: Callable[[], Awaitable[T]],
        probe: Callable[[], Awaitable[object]],
        channel_id: str | None = None,
    ) -> tuple[T, bool]:
        """``call()``, made again once the store answers, each time it finds it unreachable;
        and whether it had to wait for the store.

        Args:
            call: the read (or the deadline's write) the wait needs before it parks.
            probe: a read that tells whether the store answers (of the wait's request).
            channel_id: the channel of the wait's request, when known before ``call()``.

        Raises:
            HandlerClosedError: the handler, or ``channel_id``'s scope, closed while the
                store was away.
            StoreClosedError: the store was closed while it was away.
            Exception: what ``call()`` raises, but the store's being unreachable.
        """
        rode = False
        while True:
            try:
                return await call(), rode
            except StoreUnavailableError as error:
                if self._ended(channel_id) is None:
                    await self._back(probe, error, channel_id)
                    rode = True
                ended = self._ended(channel_id)
                if ended is not None:
                    raise ended() from error

    def close(self, error: Callable[[], Exception]) -> None:
        """The handler closed: the waits blocked here, and those that find the store away
        from now on, end with ``error()``."""
        self._closed = error
        if self._probe is not None:
            self._probe.cancel()

    def close_channel(self, channel_id: str) -> None:
        """``channel_id``'s scope closed: the waits blocked here on its requests end (with
        the error ``closed_for`` names for it); the others ride on."""
        for rider, channel in self._riders.items():
            if channel == channel_id and not rider.done():
                rider.set_result(None)

    def _ended(self, channel_id: str | None) -> Callable[[], Exception] | None:
        """Why a wait on a request of ``channel_id`` ends rather than rides, if it does."""
        if self._closed is None and channel_id is not None:
            return self._closed_for(channel_id)
        return self._closed

    async def _back(
        self, probe: Callable[[], Awaitable[object]], error: Exception, channel_id: str | None
    ) -> None:
        """Return once the store answers again, or the handler (or the channel) closed."""
        task = self._probe
        if task is None or task.done():
            logger.warning("Store unreachable as a wait began; it waits for the store: %s", error)
            task = self._probe = asyncio.get_running_loop().create_task(
                self._retry(probe), name="human-input-durable-outage"
            )
        rider: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._riders[rider] = channel_id
        self.riding += 1
        try:
            # Not awaited itself: the probe outlives a wait that is cut, or ended by a close.
            await asyncio.wait((task, rider), return_when=asyncio.FIRST_COMPLETED)
            if task.done() and not task.cancelled():
                task.result()  # the store closed meanwhile: StoreClosedError
            elif task.cancelled() and self._closed is None and not rider.done():
                # The probe cancelled from outside (its loop shutting down): so is the wait.
                raise asyncio.CancelledError
        finally:
            del self._riders[rider]
            self.riding -= 1
            if not self.riding and not task.done():
                # The last wait that needed the probe was cut: the probe goes with it.
                task.cancel()

    async def _retry(self, probe: Callable[[], Awaitable[object]]) -> None:
        """Try ``probe`` until the store answers (whatever the answer)."""
        failures = 0
        while True:
            failures += 1
            await asyncio.sleep(backoff(failures, self._interval))
            try:
                await probe()
            except StoreUnavailableError:
                continue
            except StoreClosedError:
                raise
            except Exception:
                # The store answered, if with an error of its own: each wait reads again.
                pass
            logger.info("Store reachable again: the waits that began in the outage carry on")
            return
