"""HumanInputHandler: the async primitive behind every question a tool asks a person.

``create()`` records a request (answerable at once) and schedules the notification callback
alongside; ``wait()`` blocks until an answer, a rejection or the deadline settles it and owns
the cleanup; ``resolve()`` / ``reject()`` settle it from outside. Every settle goes through
the store's check-and-set, so a request has exactly one outcome, and whoever was told ``True``
sees that outcome win, even when the deadline falls in the same loop tick.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
from roomkit.tools.human_input._deadlines import DeadlineQueue
from roomkit.tools.human_input.stores import MemoryStore, PendingStore

__all__ = ["HumanInputHandler", "OnInputRequiredCallback"]

logger = logging.getLogger("roomkit.tools.human_input")

OnInputRequiredCallback = Callable[[PendingInputEvent], Awaitable[bool | None]]
"""Announces a new request; returning ``False`` rejects it (a hook's denial)."""

CLOSED = "Human input handler is closed"
RELEASED = "Released before an answer arrived"
HANDLER_CLOSED = "Human input handler closed"
DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"
DEFAULT_REJECTION = "Request rejected"

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT


def _id_stream() -> Iterator[str]:
    """Random 32-hex-digit ids, cut from one ``os.urandom`` call per 64 ids.

    The system call, not the randomness, is what makes ``os.urandom(16)`` per id cost; the
    ids stay as unguessable as if each had its own call.
    """
    while True:
        pool = os.urandom(16 * 64).hex()
        for start in range(0, len(pool), 32):
            yield pool[start : start + 32]


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str (send structured answers as JSON text), "
            f"got {type(value).__name__}"
        )


def _check_timeout(timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if not timeout >= 0 or math.isinf(timeout):
        raise ValueError(
            f"timeout must be a finite number of seconds >= 0 (None waits forever), got {timeout}"
        )


def _outcome(request: PendingInput) -> str:
    """The settled request's outcome: its answer, or the error it stands for."""
    status = request.status
    if status is _RESOLVED:
        return request.result or ""
    if status is _REJECTED:
        reason = request.reject_reason or DEFAULT_REJECTION
        if request.withdrawn:
            raise RequestWithdrawnError(reason)
        raise HumanInputRejectedError(reason)
    if status is _TIMED_OUT:
        raise HumanInputTimeoutError(
            f"Nobody answered pending request {request.pending_id} before its deadline"
        )
    raise RuntimeError(f"Unexpected pending status: {status!r}")  # pragma: no cover


class HumanInputHandler:
    """Pending requests for human input: create, wait, resolve, reject, release, close.

    Args:
        retention: how many settled outcomes stay replayable by ``wait()`` once the request
            has left the active set (oldest evicted first); ``0`` switches replay off.
        store: where requests and outcomes live; a :class:`MemoryStore` with ``retention``
            by default.

    One handler may serve several channels: the framework registers a notification callback
    per channel id (:meth:`set_on_input_required`), and ``close(channel_id=...)`` settles and
    closes only that channel's scope.
    """

    def __init__(self, *, retention: int = 128, store: PendingStore | None = None) -> None:
        self._store: PendingStore = store if store is not None else MemoryStore(retention=retention)
        self._on_input_required: OnInputRequiredCallback | None = None
        self._callbacks: dict[str, OnInputRequiredCallback] = {}
        self._registrations: dict[str, int] = {}
        self._issued: dict[str, int] = {}
        self._closed_channels: set[str] = set()
        self._closed = False
        self._notifications: dict[asyncio.Task[None], str] = {}
        self._deadlines = DeadlineQueue(self._expire)
        self._ids = _id_stream()

    # -- the application-level notification -------------------------------------------------

    @property
    def on_input_required(self) -> OnInputRequiredCallback | None:
        """The callback for requests of a channel with no callback of its own."""
        return self._on_input_required

    @on_input_required.setter
    def on_input_required(self, callback: OnInputRequiredCallback | None) -> None:
        self._on_input_required = callback

    def set_on_input_required(self, channel_id: str, callback: OnInputRequiredCallback) -> int:
        """Route the requests of ``channel_id`` to ``callback``; return the registration token.

        Registering re-opens a closed channel scope (a new owner). Pass the token to
        ``close(channel_id=..., registration=token)`` so that a displaced owner's teardown
        leaves the live owner alone.

        Raises:
            HandlerClosedError: the whole handler is closed.
        """
        if self._closed:
            raise HandlerClosedError(CLOSED)
        if not callable(callback):
            raise TypeError(f"callback must be an async callable, got {callback!r}")
        token = self._issued.get(channel_id, 0) + 1
        self._issued[channel_id] = token
        self._registrations[channel_id] = token
        self._callbacks[channel_id] = callback
        self._closed_channels.discard(channel_id)
        return token

    _set_on_input_required = set_on_input_required

    def _callback_for(self, channel_id: str) -> OnInputRequiredCallback | None:
        callbacks = self._callbacks
        if channel_id in callbacks:
            return callbacks[channel_id]
        if not channel_id and len(callbacks) == 1:
            return next(iter(callbacks.values()))
        return self._on_input_required

    # -- creating requests -------------------------------------------------------------------

    async def create(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: ChannelType = ChannelType.AI,
        actor_id: str | None = None,
    ) -> PendingInput:
        """Register a pending request and schedule its notification; ``wait()`` owns cleanup.

        The request is answerable as soon as this returns; the notification callback
        (ON_USER_INPUT_REQUIRED through the framework) runs alongside, never in front of it.

        Raises:
            HandlerClosedError: the handler, or ``channel_id``'s scope, is closed.
        """
        return self._open(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, False
        )

    async def create_detached(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: ChannelType = ChannelType.AI,
        actor_id: str | None = None,
    ) -> PendingInput:
        """Like :meth:`create`, for a request no one will ``wait()`` on.

        The caller owns the cleanup and must :meth:`release` the request.
        """
        return self._open(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, True
        )

    def _open(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        room_id: str,
        tool_call_id: str,
        channel_id: str,
        channel_type: ChannelType,
        actor_id: str | None,
        detached: bool,
    ) -> PendingInput:
        if self._closed:
            raise HandlerClosedError(CLOSED)
        if channel_id in self._closed_channels:
            raise HandlerClosedError(f"Human input handler is closed for channel {channel_id}")
        if not isinstance(arguments, dict):
            raise TypeError(
                f"arguments must be a dict of the call's arguments, got {type(arguments).__name__}"
            )
        if not isinstance(tool_name, str):
            _check_text("tool_name", tool_name)
        # Every field by position: keyword arguments and the default factory cost more than
        # the rest of the dataclass's __init__.
        request = PendingInput(
            next(self._ids),
            tool_name,
            arguments,
            room_id,
            tool_call_id,
            channel_id,
            _PENDING,  # status
            None,  # result
            None,  # reject_reason
            detached,
            datetime.now(UTC),  # created_at
            actor_id,
            channel_type,
        )
        self._store.add(request)
        if self._callbacks or self._on_input_required is not None:
            callback = self._callback_for(channel_id)
            if callback is not None:
                self._announce(request, callback)
        return request

    def _announce(self, request: PendingInput, callback: OnInputRequiredCallback) -> None:
        event = PendingInputEvent.for_request(request)
        task = asyncio.get_running_loop().create_task(
            self._notify(callback, event), name=f"human-input-notify-{request.pending_id}"
        )
        self._notifications[task] = request.channel_id
        task.add_done_callback(self._forget_notification)

    def _forget_notification(self, task: asyncio.Task[None]) -> None:
        self._notifications.pop(task, None)

    async def _notify(self, callback: OnInputRequiredCallback, event: PendingInputEvent) -> None:
        if self._closed or event.channel_id in self._closed_channels:
            return
        try:
            allowed = await callback(event)
        except Exception:
            # Fail-open: a broken notification loses the broadcast, not the request.
            logger.exception("_on_input_required callback failed for pending %s", event.pending_id)
            return
        if allowed is False:
            self.reject(event.pending_id, DENIED)

    # -- waiting -----------------------------------------------------------------------------

    async def wait(self, pending_id: str, *, timeout: float | None = 300) -> str:
        """Block until the request is answered, rejected or times out; return the answer.

        ``wait()`` owns the cleanup: it retires the request once settled. A request that has
        already left the active set replays its recorded outcome from the retention.

        Raises:
            HumanInputRejectedError: a person or a hook rejected the request.
            HumanInputTimeoutError: the deadline passed (``timeout`` seconds from the first wait).
            RequestWithdrawnError: the handler gave the request up (closed or released).
            UnknownRequestError: the id was never seen here, or left the retention.
        """
        # The default (a non-negative int) passes without a call; the rest is checked in full.
        if type(timeout) is not int or timeout < 0:
            _check_timeout(timeout)
        request = self._store.get(pending_id)
        if request is None:
            return self._replay(pending_id)
        if request.status is _PENDING:
            # The fast path keeps few locals: each one is a slot in every suspended wait().
            try:
                await self._listen(request, timeout)
            except asyncio.CancelledError:
                # The waiting call was cut: withdraw the request so a late answer is refused.
                self.release(pending_id)
                raise
        self._store.retire(request)
        if request.status is _RESOLVED:
            return request.result or ""
        return _outcome(request)

    def _replay(self, pending_id: str) -> str:
        settled = self._store.get_settled(pending_id)
        if settled is None:
            raise UnknownRequestError(f"No pending request with id {pending_id}")
        return _outcome(settled)

    def _listen(self, request: PendingInput, timeout: float | None) -> asyncio.Future[None]:
        """Arm the request's deadline; return a new future that its settling completes."""
        loop = asyncio.get_running_loop()
        if timeout is not None:
            when = loop.time() + timeout
            deadline = request.deadline
            # A later wait may bring the deadline forward, never push it back.
            if deadline is None or when < deadline:
                request.deadline = when
                self._deadlines.add(loop, request, when)
        waiter: asyncio.Future[None] = loop.create_future()
        waiters = request._waiters
        if waiters is None:
            request._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            request._waiters = [waiters, waiter]
        return waiter

    def _expire(self, request: PendingInput) -> None:
        won = self._store.settle(request.pending_id, _TIMED_OUT)
        if won is not None:
            self._settled(won)

    def _settled(self, request: PendingInput) -> None:
        """Wake the request's waiters and drop its deadline, once the store recorded a win."""
        if request._deadline_entry is not None:
            self._deadlines.discard(request)
        waiters = request._waiters
        if waiters is None:
            return
        request._waiters = None
        if isinstance(waiters, list):
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        elif not waiters.done():
            waiters.set_result(None)

    # -- settling from outside ---------------------------------------------------------------

    def resolve(self, pending_id: str, result: str) -> bool:
        """Answer the request. Returns ``True`` if this call settled it.

        ``False`` means the id is not active or the request was already settled; the recorded
        outcome is then unchanged.
        """
        if not isinstance(result, str):
            _check_text("result", result)
        request = self._store.settle(pending_id, _RESOLVED, result=result)
        if request is None:
            return False
        self._settled(request)
        return True

    def reject(self, pending_id: str, reason: str = "") -> bool:
        """Reject the request; its waiter raises ``HumanInputRejectedError(reason)``.

        Returns ``True`` if this call settled it, ``False`` as :meth:`resolve` does.
        """
        if not isinstance(reason, str):
            _check_text("reason", reason)
        request = self._store.settle(pending_id, _REJECTED, reason=reason)
        if request is None:
            return False
        self._settled(request)
        return True

    def release(self, pending_id: str) -> bool:
        """Drop a request the caller owns, rejecting it first if it is still unanswered.

        A waiter still blocked on it raises :class:`RequestWithdrawnError` rather than
        hanging; a settled outcome stays replayable. Returns ``True`` if a request was dropped.
        """
        request = self._store.get(pending_id)
        if request is None:
            return False
        won = self._store.settle(pending_id, _REJECTED, reason=RELEASED, withdrawn=True)
        if won is not None:
            self._settled(won)
        self._store.retire(request)
        return True

    async def close(
        self, *, channel_id: str | None = None, registration: int | None = None
    ) -> None:
        """Reject active work and refuse later creates: globally, or for one channel only.

        Args:
            channel_id: close only this channel's scope; other owners stay available.
            registration: the token :meth:`set_on_input_required` returned; when it is no
                longer the channel's current one, the call does nothing (a displaced owner).
        """
        if channel_id is None:
            self._closed = True
            self._callbacks.clear()
            self._registrations.clear()
        else:
            current = self._registrations.get(channel_id)
            if registration is not None and registration != current:
                return
            self._closed_channels.add(channel_id)
            self._callbacks.pop(channel_id, None)
            self._registrations.pop(channel_id, None)
        for request in self._store.active():
            if channel_id is not None and request.channel_id != channel_id:
                continue
            won = self._store.settle(
                request.pending_id, _REJECTED, reason=HANDLER_CLOSED, withdrawn=True
            )
            if won is not None:
                self._settled(won)
            self._store.retire(request)
        me = asyncio.current_task()
        tasks = [
            task
            for task, owner in self._notifications.items()
            if task is not me and (channel_id is None or owner == channel_id)
        ]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- reading -----------------------------------------------------------------------------

    @property
    def pending(self) -> dict[str, PendingInput]:
        """A snapshot of the active requests, by id.

        A request answered but not yet collected by its ``wait()`` is still listed, with its
        new status, until ``wait()`` or ``release()`` retires it.
        """
        return {request.pending_id: request for request in self._store.active()}

    @property
    def closed(self) -> bool:
        """True once ``close()`` without a channel id was called."""
        return self._closed

    def is_closed_for(self, channel_id: str) -> bool:
        """True when creates for ``channel_id`` are refused."""
        return self._closed or channel_id in self._closed_channels
