"""The handler's side of a durable store: waits that any process's answer can end.

A waiter here re-reads the stored record after registering for the store's change hints
and again on the store's backstop interval, so a hint lost to a disconnect delays an
answer, never loses it. The deadline is the store's: whichever process sees it pass first
records the timeout through the same check-and-set as an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from roomkit.core.exceptions import (
    HandlerClosedError,
    StoreError,
    StoreUnavailableError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores.base import (
    DurableStore,
    PendingChange,
    PendingChangeKind,
)

if TYPE_CHECKING:
    from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["DurableWaits"]

logger = logging.getLogger("roomkit.tools.human_input")

_PENDING = PendingInputStatus.PENDING
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT

RELEASED = "Released before an answer arrived"
HANDLER_CLOSED = "Human input handler closed"


class DurableWaits:
    """The requests this process waits on, woken by the store's change feed."""

    def __init__(self, handler: HumanInputHandler, store: DurableStore) -> None:
        self.handler = handler
        self.store = store
        self.local: dict[str, PendingInput] = {}
        """Requests created here and not yet collected by a wait (for close and ``pending``)."""
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._listeners: list[Callable[[PendingChange], None]] = []
        self._unsubscribe: Callable[[], None] | None = None

    # -- the change feed ---------------------------------------------------------------------

    def subscribe(self, listener: Callable[[PendingChange], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        self._feed()

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _feed(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self.store.subscribe(self._on_change)

    def _on_change(self, change: PendingChange) -> None:
        if change.kind is PendingChangeKind.RESYNC:
            for pending_id in list(self._waiters):
                self.wake(pending_id)
        elif change.kind is PendingChangeKind.SETTLED:
            self.wake(change.pending_id)
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                logger.exception("Pending-change listener %r failed", listener)

    def wake(self, pending_id: str) -> None:
        """Wake this process's waiters on ``pending_id`` so they re-read the record."""
        for waiter in self._waiters.get(pending_id, ()):
            if not waiter.done():
                waiter.set_result(None)

    def wake_all(self) -> None:
        for pending_id in list(self._waiters):
            self.wake(pending_id)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._listeners.clear()
        self.wake_all()

    # -- withdrawing -------------------------------------------------------------------------

    async def release(self, pending_id: str) -> bool:
        """Withdraw the request if still unanswered; ``True`` if it exists."""
        store = self.store
        if await store.fetch(pending_id) is None:
            return False
        won = await store.settle(pending_id, _REJECTED, reason=RELEASED, withdrawn=True)
        if won is not None:
            self.wake(pending_id)
        self.local.pop(pending_id, None)
        return True

    async def close(self, channel_id: str | None) -> None:
        """Withdraw the unkeyed requests created here (for ``channel_id``, or all).

        Keyed requests stay open in the store for whoever re-attaches to them; their waiters
        here wake and raise :class:`HandlerClosedError`.
        """
        for request in list(self.local.values()):
            if channel_id is not None and request.channel_id != channel_id:
                continue
            if request.key is None:
                try:
                    await self.store.settle(
                        request.pending_id, _REJECTED, reason=HANDLER_CLOSED, withdrawn=True
                    )
                except StoreError:
                    logger.exception("Could not withdraw pending %s on close", request.pending_id)
            self.local.pop(request.pending_id, None)
            self.wake(request.pending_id)
        if channel_id is None:
            self.stop()

    # -- waiting -----------------------------------------------------------------------------

    async def wait(self, pending_id: str, timeout: float | None) -> PendingInput:
        """Block until the stored request settles; return the settled record.

        Raises:
            UnknownRequestError: no such request (never created, or past its retention).
            HandlerClosedError: this handler closed while the request stays open in the
                store (a keyed request, kept for the process that re-attaches to it).
        """
        store = self.store
        record = await store.fetch(pending_id)
        if record is None:
            raise UnknownRequestError(f"No pending request with id {pending_id}")
        if record.status is _PENDING and timeout is not None:
            deadline = await store.set_deadline(pending_id, store.clock() + timeout)
            if deadline is not None:
                record.deadline = deadline
        self._feed()
        loop = asyncio.get_running_loop()
        outage = False
        while record.status is _PENDING:
            if self.handler.is_closed_for(record.channel_id):
                raise HandlerClosedError(HANDLER_CLOSED)
            waiter: asyncio.Future[None] = loop.create_future()
            waiters = self._waiters.setdefault(pending_id, set())
            waiters.add(waiter)
            try:
                # Read again once registered: a change between the two reads is not missed.
                record = await self._read(pending_id)
                if record.status is not _PENDING:
                    break
                delay = store.backstop_interval
                if record.deadline is not None:
                    delay = min(delay, max(0.0, record.deadline - store.clock()))
                await asyncio.wait((waiter,), timeout=delay)
                if record.deadline is not None and store.clock() >= record.deadline:
                    await store.settle(pending_id, _TIMED_OUT)
                record = await self._read(pending_id)
                if outage:
                    logger.info("Store reachable again: still waiting on %s", pending_id)
                    outage = False
            except StoreUnavailableError as error:
                # An outage delays the answer, never loses it: keep the request and retry.
                if not outage:
                    logger.warning("Store unreachable while waiting on %s: %s", pending_id, error)
                    outage = True
                await asyncio.wait((waiter,), timeout=store.backstop_interval)
            finally:
                waiters.discard(waiter)
                if not waiters:
                    self._waiters.pop(pending_id, None)
        self.local.pop(pending_id, None)
        return record

    async def _read(self, pending_id: str) -> PendingInput:
        record = await self.store.fetch(pending_id)
        if record is None:
            raise UnknownRequestError(
                f"Pending request {pending_id} left the store while waited on"
            )
        return record
