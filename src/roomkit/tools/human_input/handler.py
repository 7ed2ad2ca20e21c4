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
from collections.abc import Awaitable, Callable, Collection, Iterable
from datetime import UTC, datetime
from typing import Any

from roomkit.core.exceptions import (
    AsyncSettleRequiredError,
    HandlerClosedError,
    InvalidAnswerError,
    StoreError,
    UnknownRequestError,
)
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
from roomkit.tools.human_input._checks import (
    check_answer,
    check_request_text,
    check_schema,
    check_text,
    check_timeout,
    id_stream,
    outcome,
)
from roomkit.tools.human_input._deadlines import DeadlineQueue
from roomkit.tools.human_input._durable import HANDLER_CLOSED, RELEASED, DurableWaits
from roomkit.tools.human_input.statistics import HandlerStatistics
from roomkit.tools.human_input.stores import MemoryLedger, MemoryStore, PendingStore
from roomkit.tools.human_input.stores.base import (
    ChangeListener,
    DurableSettledHistory,
    DurableStore,
    PendingChange,
    PendingChangeKind,
    SettledHistory,
    SpendLedger,
    check_settled_listing,
)

__all__ = ["HumanInputHandler", "OnInputRequiredCallback"]

logger = logging.getLogger("roomkit.tools.human_input")

OnInputRequiredCallback = Callable[[PendingInputEvent], Awaitable[bool | None]]
"""Announces a new request; returning ``False`` rejects it (a hook's denial)."""

CLOSED = "Human input handler is closed"
_ASYNC_ONLY = (
    "{method}() cannot settle a request on a durable store, where the outcome is a round "
    "trip: use `await handler.a{method}(...)`"
)
DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT


class HumanInputHandler:
    """Pending requests for human input: create, wait, resolve, reject, release, close.

    Args:
        retention: how many settled outcomes stay replayable by ``wait()`` once the request
            has left the active set (oldest evicted first); ``0`` switches replay off.
        store: where requests and outcomes live; a :class:`MemoryStore` with ``retention``
            by default. A durable store (SQLite, Redis) is shared by processes: an answer
            given in any of them ends the wait in this one. On a durable store, settle with
            ``await aresolve()`` / ``areject()`` / ``arelease()``; the synchronous methods
            raise :class:`AsyncSettleRequiredError`.

    One handler may serve several channels: the framework registers a notification callback
    per channel id (:meth:`set_on_input_required`), and ``close(channel_id=...)`` settles and
    closes only that channel's scope.
    """

    def __init__(
        self, *, retention: int = 128, store: PendingStore | DurableStore | None = None
    ) -> None:
        self._durable: DurableWaits | None = None
        self._ledger: SpendLedger = store if isinstance(store, SpendLedger) else MemoryLedger()
        if isinstance(store, DurableStore):
            if not isinstance(store, SpendLedger):
                logger.warning(
                    "%s keeps no spend-once ledger: single-use links and revocations hold "
                    "in this process only",
                    type(store).__name__,
                )
            self._durable = DurableWaits(self, store)
            store = MemoryStore(retention=0)  # unused: every request lives in the durable store
        self._store: PendingStore = store if store is not None else MemoryStore(retention=retention)
        self._listeners: list[ChangeListener] = []
        self._on_input_required: OnInputRequiredCallback | None = None
        self._callbacks: dict[str, OnInputRequiredCallback] = {}
        self._registrations: dict[str, int] = {}
        self._issued: dict[str, int] = {}
        self._closed_channels: set[str] = set()
        self._closed = False
        self._notifications: dict[asyncio.Task[object], str] = {}
        self._announcing: set[str] = set()
        """Stored requests whose announcement task runs now (durable stores)."""
        self._deadlines = DeadlineQueue(self._expire)
        self._ids = id_stream()

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
        key: str | None = None,
        answer_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> PendingInput:
        """Register a pending request and schedule its notification; ``wait()`` owns cleanup.

        The request is answerable as soon as this returns; the notification callback
        (ON_USER_INPUT_REQUIRED through the framework) runs alongside, never in front of it.

        Args:
            key: an idempotency key. A create whose key matches an open request returns that
                request (no second notification: the person is not asked twice); one whose
                key matches a settled request still retained returns it settled, and
                ``wait()`` replays its outcome at once.
            answer_schema: a JSON Schema the answer (JSON text) must match; ``aresolve()``
                checks it. It is stored with the request, so every process checks the same.
            timeout: set the deadline now (``timeout`` seconds from creation) instead of at
                the first ``wait()``; a wait may bring it forward, never push it back. On a
                durable store the deadline is written with the request.

        Raises:
            HandlerClosedError: the handler, or ``channel_id``'s scope, is closed.
            InvalidTextError: a text field or the arguments hold text UTF-8 cannot encode
                (a lone surrogate); nothing was stored.
            StoreUnavailableError: a durable store cannot be reached.
        """
        if key is not None or answer_schema is not None or timeout is not None or self._durable:
            return await self._open_keyed(
                tool_name,
                arguments,
                room_id,
                tool_call_id,
                channel_id,
                channel_type,
                actor_id,
                False,
                key,
                answer_schema,
                timeout,
            )
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
        key: str | None = None,
        answer_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> PendingInput:
        """Like :meth:`create`, for a request no one will ``wait()`` on.

        The caller owns the cleanup and must :meth:`release` (or ``arelease``) the request.
        """
        if key is not None or answer_schema is not None or timeout is not None or self._durable:
            return await self._open_keyed(
                tool_name,
                arguments,
                room_id,
                tool_call_id,
                channel_id,
                channel_type,
                actor_id,
                True,
                key,
                answer_schema,
                timeout,
            )
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
        self._check_open(channel_id, tool_name, arguments, room_id, tool_call_id, actor_id)
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
        # _created() inlined: this is the hot path of every question.
        if self._callbacks or self._on_input_required is not None:
            callback = self._callback_for(channel_id)
            if callback is not None:
                self._announce(request, callback)
        if self._listeners:
            self._emit(PendingChange(PendingChangeKind.CREATED, request.pending_id))
        return request

    def _check_open(
        self,
        channel_id: str,
        tool_name: object,
        arguments: object,
        room_id: str,
        tool_call_id: str,
        actor_id: str | None,
    ) -> None:
        if self._closed:
            raise HandlerClosedError(CLOSED)
        if channel_id in self._closed_channels:
            raise HandlerClosedError(f"Human input handler is closed for channel {channel_id}")
        if not isinstance(arguments, dict):
            raise TypeError(
                f"arguments must be a dict of the call's arguments, got {type(arguments).__name__}"
            )
        check_request_text(tool_name, arguments, room_id, tool_call_id, channel_id, actor_id)

    def _created(self, request: PendingInput) -> None:
        """Announce a new request to its channel's callback and to change listeners."""
        if self._callbacks or self._on_input_required is not None:
            callback = self._callback_for(request.channel_id)
            if callback is not None:
                self._announce(request, callback)
        if self._listeners:
            self._emit(PendingChange(PendingChangeKind.CREATED, request.pending_id))

    async def _open_keyed(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        room_id: str,
        tool_call_id: str,
        channel_id: str,
        channel_type: ChannelType,
        actor_id: str | None,
        detached: bool,
        key: str | None,
        answer_schema: dict[str, Any] | None,
        timeout: float | None,
    ) -> PendingInput:
        """The create path with a key, an answer schema, a timeout or a durable store."""
        self._check_open(channel_id, tool_name, arguments, room_id, tool_call_id, actor_id)
        check_timeout(timeout)
        if key is not None and (type(key) is not str or not key.isascii()):
            check_text("key", key)
        if answer_schema is not None:
            check_schema(answer_schema)
        request = PendingInput(
            next(self._ids),
            tool_name,
            arguments,
            room_id,
            tool_call_id,
            channel_id,
            detached=detached,
            actor_id=actor_id,
            channel_type=channel_type,
            key=key,
            answer_schema=answer_schema,
        )
        durable = self._durable
        if durable is not None:
            if timeout is not None:
                request.deadline = durable.store.clock() + timeout
            record, created = await durable.store.insert(request)
            # A request created here and not collected yet is being announced already.
            owed = not created and record.pending_id not in durable.local
            durable.local[record.pending_id] = record
            if created or (owed and record.status is _PENDING):
                self._announce_durable(durable.store, record, owed=owed)
            return record
        if key is not None:
            existing = self._store.by_key(key)
            if existing is not None:
                return existing
        self._store.add(request)
        if timeout is not None:
            loop = asyncio.get_running_loop()
            request.deadline = when = loop.time() + timeout
            self._deadlines.add(loop, request, when)
        self._created(request)
        return request

    def _announce(self, request: PendingInput, callback: OnInputRequiredCallback) -> None:
        event = PendingInputEvent.for_request(request)
        task = asyncio.get_running_loop().create_task(
            self._notify(callback, event), name=f"human-input-notify-{request.pending_id}"
        )
        self._notifications[task] = request.channel_id
        task.add_done_callback(self._forget_notification)

    def _forget_notification(self, task: asyncio.Task[object]) -> None:
        self._notifications.pop(task, None)

    async def _notify(self, callback: OnInputRequiredCallback, event: PendingInputEvent) -> bool:
        """Run the callback; ``True`` when it ran through and allowed the request."""
        if self._closed or event.channel_id in self._closed_channels:
            return False
        try:
            allowed = await callback(event)
        except Exception:
            # Fail-open: a broken notification loses the broadcast, not the request.
            logger.exception("_on_input_required callback failed for pending %s", event.pending_id)
            return False
        if allowed is False:
            await self.areject(event.pending_id, DENIED)
            return False
        return True

    def _announce_durable(self, store: DurableStore, record: PendingInput, *, owed: bool) -> None:
        """Announce a stored request, and record in the store that it was announced.

        ``owed``: the request was re-attached by key; it is announced only if no process
        recorded its announcement (the one that stored it stopped before its hook ran).
        """
        callback = self._callback_for(record.channel_id)
        # Creates racing on one key may all return before any of them is recorded as
        # created here: one announcement at a time per request, whichever comes first.
        if callback is None or record.pending_id in self._announcing:
            return
        self._announcing.add(record.pending_id)
        event = PendingInputEvent.for_request(record)
        task = asyncio.get_running_loop().create_task(
            self._notify_durable(store, callback, event, owed=owed),
            name=f"human-input-notify-{record.pending_id}",
        )
        self._notifications[task] = record.channel_id
        task.add_done_callback(self._forget_notification)

    async def _notify_durable(
        self,
        store: DurableStore,
        callback: OnInputRequiredCallback,
        event: PendingInputEvent,
        *,
        owed: bool,
    ) -> None:
        try:
            await self._announce_once(store, callback, event, owed=owed)
        finally:
            self._announcing.discard(event.pending_id)

    async def _announce_once(
        self,
        store: DurableStore,
        callback: OnInputRequiredCallback,
        event: PendingInputEvent,
        *,
        owed: bool,
    ) -> None:
        pending_id = event.pending_id
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
            check_timeout(timeout)
        if self._durable is not None:
            return await self._wait_durable(self._durable, pending_id, timeout)
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
        return outcome(request)

    async def _wait_durable(
        self, durable: DurableWaits, pending_id: str, timeout: float | None
    ) -> str:
        try:
            record = await durable.wait(pending_id, timeout)
        except asyncio.CancelledError:
            request = durable.local.get(pending_id)
            # A keyed request outlives the wait that was cut (a turn cancelled, a process
            # shutting down): whoever re-attaches to it by key gets the answer. Any other
            # cut wait withdraws its request, as on the memory store.
            if request is None or request.key is None:
                await asyncio.shield(self.arelease(pending_id))
            raise
        return outcome(record)

    def _replay(self, pending_id: str) -> str:
        settled = self._store.get_settled(pending_id)
        if settled is None:
            raise UnknownRequestError(f"No pending request with id {pending_id}")
        return outcome(settled)

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
        if self._listeners:
            self._emit(PendingChange(PendingChangeKind.SETTLED, request.pending_id))
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

        Raises:
            InvalidAnswerError: ``result`` is not text UTF-8 can encode (a lone surrogate).
        """
        if type(result) is not str or not result.isascii():
            check_text("result", result, invalid=InvalidAnswerError)
        if self._durable is not None:
            raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="resolve"))
        request = self._store.settle(pending_id, _RESOLVED, result=result)
        if request is None:
            return False
        self._settled(request)
        return True

    def reject(self, pending_id: str, reason: str = "") -> bool:
        """Reject the request; its waiter raises ``HumanInputRejectedError(reason)``.

        Returns ``True`` if this call settled it, ``False`` as :meth:`resolve` does.

        Raises:
            InvalidTextError: ``reason`` is not text UTF-8 can encode (a lone surrogate).
        """
        if type(reason) is not str or not reason.isascii():
            check_text("reason", reason)
        if self._durable is not None:
            raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="reject"))
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
        if self._durable is not None:
            raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="release"))
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

        On a durable store, a request created here with a ``key`` stays open in the store
        (its waiters here raise :class:`HandlerClosedError`): the process that re-attaches
        to it after a restart gets the answer. Requests without a key are withdrawn.
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
        if self._durable is not None:
            await self._durable.close(channel_id)
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

    # -- settling from any process -----------------------------------------------------------

    async def aresolve(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """Answer the request, from any process sharing the store; ``True`` if this call won.

        The answer is idempotent per actor: ``True`` also comes back when the request is
        already resolved with this same ``result`` by this same ``by``. So a retry after
        :class:`StoreUnavailableError`, whose first try was in fact recorded, learns that
        the answer stands instead of being told it lost. A different answer, another actor,
        or ``by=None`` (no one to recognise) still gets ``False``.

        Args:
            result: the answer; JSON text when the request has an ``answer_schema``.
            by: who answered (an actor id), recorded with the outcome.

        Raises:
            InvalidAnswerError: the answer does not match the request's answer schema, or
                is not text UTF-8 can encode (a lone surrogate); the request stays open.
            InvalidTextError: ``by`` is not text UTF-8 can encode.
            StoreUnavailableError: a durable store stayed away after the store's retries;
                whether this answer was recorded is unknown, and the same call made again
                once the store is back says so.
        """
        if type(result) is not str or not result.isascii():
            check_text("result", result, invalid=InvalidAnswerError)
        if by is not None and (type(by) is not str or not by.isascii()):
            check_text("by", by)

        def answered(record: PendingInput | None) -> bool:
            # This actor's own answer, already recorded: the outcome this call asks for.
            return (
                by is not None
                and record is not None
                and record.status is _RESOLVED
                and record.settled_by == by
                and record.result == result
            )

        # A request this process created tells its schema without a read; the settle's
        # check-and-set decides whether it is still open.
        request = None if self._durable is None else self._durable.local.get(pending_id)
        if request is None:
            request = await self.get_request(pending_id)
            if request is None or request.status is not _PENDING:
                return answered(request)
        if request.answer_schema is not None:
            check_answer(request, result)
        if await self._asettle(pending_id, _RESOLVED, result=result, by=by):
            return True
        return by is not None and answered(await self.get_request(pending_id))

    async def areject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Reject the request, from any process sharing the store; ``True`` if this call won.

        Raises:
            InvalidTextError: ``reason`` or ``by`` is not text UTF-8 can encode (a lone
                surrogate); the request stays open.
            StoreUnavailableError: a durable store cannot be reached (nothing was settled).
        """
        if type(reason) is not str or not reason.isascii():
            check_text("reason", reason)
        if by is not None and (type(by) is not str or not by.isascii()):
            check_text("by", by)
        return await self._asettle(pending_id, _REJECTED, reason=reason, by=by)

    async def arelease(self, pending_id: str) -> bool:
        """:meth:`release` for any store: withdraw the request if it is still unanswered."""
        if self._durable is None:
            return self.release(pending_id)
        return await self._durable.release(pending_id)

    async def _asettle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> bool:
        durable = self._durable
        if durable is None:
            won = self._store.settle(
                pending_id, status, result=result, reason=reason, settled_by=by
            )
            if won is None:
                return False
            self._settled(won)
            return True
        record = await durable.store.settle(
            pending_id, status, result=result, reason=reason, settled_by=by
        )
        if record is None:
            return False
        durable.settled(record)
        return True

    # -- reading -----------------------------------------------------------------------------

    async def get_request(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``."""
        if self._durable is not None:
            return await self._durable.store.fetch(pending_id)
        return self._store.get(pending_id) or self._store.get_settled(pending_id)

    async def list_pending(
        self,
        *,
        room_id: str | None = None,
        actor_id: str | None = None,
        channel_id: str | None = None,
    ) -> list[PendingInput]:
        """The requests still waiting for an answer, oldest first; ``None`` filters nothing.

        On a durable store this lists every process's requests.
        """
        if self._durable is not None:
            return await self._durable.store.list_pending(
                room_id=room_id, actor_id=actor_id, channel_id=channel_id
            )
        return [
            request
            for request in self._store.active()
            if request.status is _PENDING
            and (room_id is None or request.room_id == room_id)
            and (actor_id is None or request.actor_id == actor_id)
            and (channel_id is None or request.channel_id == channel_id)
        ]

    def time_left(self, request: PendingInput) -> float | None:
        """Seconds until ``request``'s deadline (negative once past), ``None`` without one.

        Measured on the clock the deadline is set on: the store's, on a durable store.
        """
        if request.deadline is None:
            return None
        durable = self._durable
        now = durable.store.clock() if durable else asyncio.get_running_loop().time()
        return request.deadline - now

    async def expire_overdue(self, requests: Iterable[PendingInput]) -> list[PendingInput]:
        """``requests`` as they stand once those past their deadline have timed out.

        The process that waits on a request records its timeout; when none waits any more
        (its agent stopped), a list would show it open for ever. Each pending request past
        its deadline is settled ``TIMED_OUT`` here, through the same check-and-set as an
        answer. Requests that left the store are dropped.
        """
        current: list[PendingInput] = []
        for request in requests:
            left = self.time_left(request) if request.status is _PENDING else None
            if left is not None and left <= 0:
                durable = self._durable
                if durable is None:
                    self._expire(request)
                elif (won := await durable.store.settle(request.pending_id, _TIMED_OUT)) is None:
                    found = await durable.store.fetch(request.pending_id)
                    if found is None:
                        continue
                    request = found
                else:
                    durable.settled(won)
                    request = won
            current.append(request)
        return current

    @property
    def ledger(self) -> SpendLedger:
        """The spend-once ledger beside the requests: single-use links, revoked tokens.

        On a durable store it is the store's own, shared by every process on it; on the
        memory store it lives in this process.
        """
        return self._ledger

    async def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """The most recently settled requests the store still retains, newest first.

        Args:
            actor_ids: only the requests naming one of these actors (``None`` in it stands
                for requests that name no actor); every request when ``None``.
            limit: at most this many, from 1 to 200.

        On a durable store this lists every process's outcomes within the retention; on the
        memory store, the last ``retention`` outcomes. A store without ``list_settled``
        keeps no history here: the list is empty.
        """
        check_settled_listing(actor_ids, limit)
        if self._durable is not None:
            store = self._durable.store
            if isinstance(store, DurableSettledHistory):
                return await store.list_settled(actor_ids=actor_ids, limit=limit)
            return []
        if isinstance(self._store, SettledHistory):
            return self._store.list_settled(actor_ids=actor_ids, limit=limit)
        return []

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(change)`` when a request is created or settles; returns the undo.

        Changes are hints (:class:`PendingChange`): re-read the request with
        :meth:`get_request`. On a durable store they come from every process sharing it, may
        repeat, and a ``RESYNC`` says some may have been missed.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {listener!r}")
        if self._durable is not None:
            return self._durable.subscribe(listener)
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, change: PendingChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                logger.exception("Pending-change listener %r failed", listener)

    @property
    def durable(self) -> bool:
        """True when requests live in a durable store shared by processes."""
        return self._durable is not None

    @property
    def pending(self) -> dict[str, PendingInput]:
        """A snapshot of the active requests, by id.

        A request answered but not yet collected by its ``wait()`` is still listed, with its
        new status, until ``wait()`` or ``release()`` retires it.
        """
        if self._durable is not None:
            return dict(self._durable.local)
        return {request.pending_id: request for request in self._store.active()}

    def statistics(self) -> HandlerStatistics:
        """This process's figures: requests held, waits parked, deadlines, notifications."""
        durable = self._durable
        notifications = len(self._notifications)
        if durable is not None:
            return HandlerStatistics(
                len(durable.local), durable.parked, durable.deadlines, notifications
            )
        active = self._store.active()
        parked = 0
        for request in active:
            waiters = request._waiters
            if isinstance(waiters, list):
                parked += sum(1 for waiter in waiters if not waiter.done())
            elif waiters is not None and not waiters.done():
                parked += 1
        return HandlerStatistics(len(active), parked, len(self._deadlines), notifications)

    @property
    def closed(self) -> bool:
        """True once ``close()`` without a channel id was called."""
        return self._closed

    def is_closed_for(self, channel_id: str) -> bool:
        """True when creates for ``channel_id`` are refused."""
        return self._closed or channel_id in self._closed_channels
