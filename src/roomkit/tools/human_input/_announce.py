"""Channel scopes, the notifications that announce new requests, and change listeners.

One handler may serve several channels: each registers its notification callback (the
framework's ON_USER_INPUT_REQUIRED) and may close its own scope. Several kits may register
one channel id (a kit per request over a shared handler): the last one takes the id over,
and an earlier kit's callback is kept while the kit lives, so that a request created in that
kit's turn (:func:`~roomkit.core.ports.announcing_to`) is announced to it, and its close
leaves the scope to the others. :class:`Announcer` keeps those registrations, the scopes
closed, and the notification tasks still running, for both engines: the memory engine
announces a request as it stores it; the durable engine also records in the store that the
announcement ran, so a process restarted before its hook ran announces the request once it
re-attaches to it by key.

A notification runs alongside the wait, never in front of it; a callback that fails loses
the broadcast, not the request; one that returns ``False`` rejects the request (a denial).
A request created inside :func:`unannounced` is not announced: it records a call nobody is
asked about (one a policy allowed or refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextvars import ContextVar
from typing import Any

from roomkit.core.context_vars import bound
from roomkit.core.exceptions import HandlerClosedError, StoreError
from roomkit.core.ports import turn_callback
from roomkit.models.pending_input import PendingInput, PendingInputEvent
from roomkit.stores.base import ChangeListener, DurableStore, PendingChange

__all__ = [
    "CLOSED",
    "DENIED",
    "Announcer",
    "OnInputRequiredCallback",
    "emit",
    "listen_to",
    "unannounced",
]

logger = logging.getLogger("roomkit.tools.human_input")

OnInputRequiredCallback = Callable[[PendingInputEvent], Awaitable[bool | None]]
"""Announces a new request; returning ``False`` rejects it (a hook's denial)."""

_QUIET: ContextVar[bool] = ContextVar("roomkit_unannounced", default=False)
"""Set while requests are created that nobody is to be asked about."""


@contextlib.contextmanager
def unannounced() -> Iterator[None]:
    """Create requests inside without announcing them: they record a call nobody is asked
    about (its history is the evidence), so no callback or hook runs for them."""
    with bound(_QUIET, True):
        yield


CLOSED = "Human input handler is closed"
DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"


class Announcer:
    """Who announces the requests of each channel, which scopes are closed, what still runs.

    Args:
        reject: rejects a request from any process (``handler.areject``): a denial.
    """

    __slots__ = (
        "_announcing",
        "_earlier",
        "_issued",
        "_registrations",
        "_reject",
        "callbacks",
        "closed",
        "closed_channels",
        "default",
        "tasks",
    )

    def __init__(self, reject: Callable[[str, str], Awaitable[bool]]) -> None:
        self._reject = reject
        self.default: OnInputRequiredCallback | None = None
        """The callback for requests of a channel with no callback of its own."""
        self.callbacks: dict[str, OnInputRequiredCallback] = {}
        """The current callback of each channel id: the last one registered."""
        self._registrations: dict[str, int] = {}
        self._earlier: dict[str, dict[int, weakref.WeakMethod[OnInputRequiredCallback]]] = {}
        """Per channel id, the earlier owners still alive (a kit's method), by token."""
        self._issued: dict[str, int] = {}
        self.closed_channels: set[str] = set()
        """The channels whose scope is closed (until one registers again)."""
        self.closed = False
        """True once the whole handler closed."""
        self.tasks: dict[asyncio.Task[object], tuple[str, OnInputRequiredCallback]] = {}
        """The notification tasks still running, with their channel id and callback."""
        self._announcing: set[str] = set()
        """Stored requests whose announcement task runs now (durable stores)."""

    # -- scopes ------------------------------------------------------------------------------

    def register(self, channel_id: str, callback: OnInputRequiredCallback) -> int:
        """Route ``channel_id``'s requests to ``callback``; re-open its scope; the token."""
        if self.closed:
            raise HandlerClosedError(CLOSED)
        if not callable(callback):
            raise TypeError(f"callback must be an async callable, got {callback!r}")
        token = self._issued.get(channel_id, 0) + 1
        self._issued[channel_id] = token
        self._keep_earlier(channel_id, callback)
        self._registrations[channel_id] = token
        self.callbacks[channel_id] = callback
        self.closed_channels.discard(channel_id)
        return token

    def _keep_earlier(self, channel_id: str, callback: OnInputRequiredCallback) -> None:
        """Keep the owner ``callback`` displaces while it lives, if it is another object's
        method (another kit's): its turns still announce to it. A callback registered again
        by its own owner (a channel rebuilt in the same kit) replaces its earlier self."""
        earlier = self._earlier.setdefault(channel_id, {})
        for token, ref in list(earlier.items()):
            kept = ref()
            if kept is None or kept == callback:
                earlier.pop(token, None)
        current = self.callbacks.get(channel_id)
        if current is not None and inspect.ismethod(current) and current != callback:
            token = self._registrations[channel_id]
            earlier[token] = weakref.WeakMethod(current, self._dropper(channel_id, token))
        if not earlier:
            del self._earlier[channel_id]

    def _dropper(self, channel_id: str, token: int) -> Callable[[object], None]:
        """What forgets an earlier owner once its object is gone."""

        def drop(_: object) -> None:
            earlier = self._earlier.get(channel_id)
            if earlier is not None:
                earlier.pop(token, None)
                if not earlier:
                    del self._earlier[channel_id]

        return drop

    def check_open(self, channel_id: str) -> None:
        """Raise :class:`HandlerClosedError` when creates for ``channel_id`` are refused."""
        if self.closed:
            raise HandlerClosedError(CLOSED)
        if channel_id in self.closed_channels:
            raise HandlerClosedError(f"Human input handler is closed for channel {channel_id}")

    def is_closed_for(self, channel_id: str) -> bool:
        return self.closed or channel_id in self.closed_channels

    def leave(self, channel_id: str, registration: int) -> OnInputRequiredCallback | None:
        """Drop one owner of ``channel_id`` that shares it with another; its callback.

        An earlier owner just leaves; the current one hands the id back to the latest
        earlier owner still alive. ``None`` when no other owner remains (closing the scope is
        :meth:`close`'s) or ``registration`` owns nothing here.
        """
        earlier = self._earlier.get(channel_id)
        if not earlier:
            return None
        left: OnInputRequiredCallback | None
        if registration in earlier:
            left = earlier.pop(registration)()
        elif registration == self._registrations.get(channel_id):
            alive = [(token, ref()) for token, ref in earlier.items()]
            owners = [(token, kept) for token, kept in alive if kept is not None]
            if not owners:
                return None
            token, kept = max(owners, key=lambda owner: owner[0])
            del earlier[token]
            left = self.callbacks[channel_id]
            self.callbacks[channel_id] = kept
            self._registrations[channel_id] = token
        else:
            return None
        if not earlier:
            del self._earlier[channel_id]
        return left

    def close(self, channel_id: str | None, registration: int | None) -> bool:
        """Close the handler, or ``channel_id``'s scope; ``False`` for a displaced owner."""
        if channel_id is None:
            self.closed = True
            self.callbacks.clear()
            self._registrations.clear()
            self._earlier.clear()
            return True
        current = self._registrations.get(channel_id)
        if registration is not None and registration != current:
            return False
        self.closed_channels.add(channel_id)
        self.callbacks.pop(channel_id, None)
        self._registrations.pop(channel_id, None)
        self._earlier.pop(channel_id, None)
        return True

    async def cancel(
        self, channel_id: str | None, callback: OnInputRequiredCallback | None = None
    ) -> None:
        """Cancel the running notifications (of ``channel_id``, or all; only those to
        ``callback`` when given) and wait for them."""
        me = asyncio.current_task()
        tasks = [
            task
            for task, (owner, called) in self.tasks.items()
            if task is not me
            and (channel_id is None or owner == channel_id)
            and (callback is None or called == callback)
        ]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _callback_for(self, channel_id: str) -> OnInputRequiredCallback | None:
        callbacks = self.callbacks
        if channel_id in callbacks:
            if self._earlier and channel_id in self._earlier:
                # A request of an earlier kit's turn goes to that kit, while it routes the id.
                turn = turn_callback()
                if turn is not None and any(
                    ref() == turn for ref in self._earlier[channel_id].values()
                ):
                    return turn
            return callbacks[channel_id]
        if not channel_id and len(callbacks) == 1:
            return next(iter(callbacks.values()))
        return self.default

    # -- announcing --------------------------------------------------------------------------

    def announce(self, request: PendingInput) -> None:
        """Run the callback of ``request``'s channel alongside, if there is one."""
        if _QUIET.get():
            return
        callback = self._callback_for(request.channel_id)
        if callback is not None:
            event = PendingInputEvent.for_request(request)
            self._start(request, callback, self._notify(callback, event))

    def announce_stored(self, store: DurableStore, record: PendingInput, *, owed: bool) -> None:
        """Announce a stored request, and record in the store that it was announced.

        ``owed``: the request was re-attached by key; it is announced only if no process
        recorded its announcement (the one that stored it stopped before its hook ran).
        """
        if _QUIET.get():
            return
        callback = self._callback_for(record.channel_id)
        # Creates racing on one key may all return before any of them is recorded as
        # created here: one announcement at a time per request, whichever comes first.
        if callback is None or record.pending_id in self._announcing:
            return
        self._announcing.add(record.pending_id)
        event = PendingInputEvent.for_request(record)
        self._start(record, callback, self._notify_stored(store, callback, event, owed=owed))

    def _start(
        self,
        request: PendingInput,
        callback: OnInputRequiredCallback,
        notification: Coroutine[Any, Any, object],
    ) -> None:
        task = asyncio.get_running_loop().create_task(
            notification, name=f"human-input-notify-{request.pending_id}"
        )
        self.tasks[task] = (request.channel_id, callback)
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[object]) -> None:
        self.tasks.pop(task, None)

    async def _notify(self, callback: OnInputRequiredCallback, event: PendingInputEvent) -> bool:
        """Run the callback; ``True`` when it ran through and allowed the request."""
        if self.is_closed_for(event.channel_id):
            return False
        try:
            allowed = await callback(event)
        except Exception:
            # Fail-open: a broken notification loses the broadcast, not the request.
            logger.exception("_on_input_required callback failed for pending %s", event.pending_id)
            return False
        if allowed is False:
            await self._reject(event.pending_id, DENIED)
            return False
        return True

    async def _notify_stored(
        self,
        store: DurableStore,
        callback: OnInputRequiredCallback,
        event: PendingInputEvent,
        *,
        owed: bool,
    ) -> None:
        pending_id = event.pending_id
        try:
            try:
                if owed and await store.was_announced(pending_id):
                    return
            except StoreError:
                # Unsure: announcing again beats never announcing.
                logger.warning("Could not read whether pending %s was announced", pending_id)
            if not await self._notify(callback, event):
                return
            try:
                await store.mark_announced(pending_id)
            except StoreError:
                logger.warning(
                    "Pending %s was announced but the store did not record it: a restart may "
                    "announce it again",
                    pending_id,
                )
        finally:
            self._announcing.discard(pending_id)


def listen_to(listeners: list[ChangeListener], listener: ChangeListener) -> Callable[[], None]:
    """Add ``listener`` to ``listeners``; return what removes it again."""
    listeners.append(listener)

    def unsubscribe() -> None:
        if listener in listeners:
            listeners.remove(listener)

    return unsubscribe


def emit(listeners: list[ChangeListener], change: PendingChange) -> None:
    """Tell every listener of ``change``; one that fails is logged and the rest still hear."""
    for listener in list(listeners):
        try:
            listener(change)
        except Exception:
            logger.exception("Pending-change listener %r failed", listener)
