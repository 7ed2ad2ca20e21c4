"""HumanInputHandler: the async primitive behind every question a tool asks a person.

``create()`` records a request (answerable at once) and schedules the notification callback
alongside; ``wait()`` blocks until an answer, a rejection or the deadline settles it and owns
the cleanup; ``resolve()`` / ``reject()`` settle it from outside. Every settle goes through
the store's check-and-set, so a request has exactly one outcome, and whoever was told ``True``
sees that outcome win, even when the deadline falls in the same loop tick.

The handler is a façade: it checks what callers pass, then hands the request to one of two
engines, chosen once when it is built: the memory engine (``_memory_engine``, requests in
this process) or the durable engine (``_durable_engine``, requests in a store that
processes share). Channel scopes and notifications are the :class:`Announcer`'s; what it
reads back (requests, histories, outcomes, changes) comes from the base class
:class:`~roomkit.tools.human_input._reading.HandlerReads`, and its approvals
(``create_approval``, ``add_approvers``) from
:class:`~roomkit.tools.human_input._approving.Approving`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pydantic import BaseModel

from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput
from roomkit.people import Directory
from roomkit.stores import AnchoredHistory, HistoryLog, MemoryStore, PendingStore
from roomkit.stores.base import DurableStore, SpendLedger
from roomkit.stores.grants import GrantStore, KeepsGrants, MemoryGrants
from roomkit.stores.outbox import KeepsOutbox
from roomkit.tools.human_input._announce import Announcer, OnInputRequiredCallback
from roomkit.tools.human_input._answer_checks import AnswerChecks
from roomkit.tools.human_input._answering import answer, refuse
from roomkit.tools.human_input._approving import Approving
from roomkit.tools.human_input._callbacks import Callbacks
from roomkit.tools.human_input._checks import (
    check_by,
    check_options,
    check_surface,
    check_text,
    check_timeout,
)
from roomkit.tools.human_input._decisions import Decisions, HistoryKeeper
from roomkit.tools.human_input._durable_engine import DurableEngine
from roomkit.tools.human_input._ids import check_id
from roomkit.tools.human_input._keys import check_same_call
from roomkit.tools.human_input._memory_engine import MemoryEngine
from roomkit.tools.human_input._memory_facets import memory_ledger, memory_outbox
from roomkit.tools.human_input._memory_trail import MemoryTrail
from roomkit.tools.human_input._reading import HandlerReads
from roomkit.tools.human_input._requests import RequestMaker
from roomkit.tools.human_input._routed import answered_for, routed
from roomkit.tools.human_input._typed_answers import (
    AnswerSchema,
    T,
    answer_schema_of,
    answer_text,
    typed_answer,
)

__all__ = ["HumanInputHandler", "OnInputRequiredCallback"]

logger = logging.getLogger("roomkit.tools.human_input")


class HumanInputHandler(HandlerReads, Callbacks, Approving):
    """Pending requests for human input: create, wait, resolve, reject, release, close.

    Args:
        retention: how many settled outcomes stay replayable by ``wait()`` once the request
            has left the active set (oldest evicted first); ``0`` switches replay off. On
            the memory store a request's history goes with its outcome
            (``MemoryStore(audit_retention=...)`` keeps more histories).
        store: where requests and outcomes live; a :class:`MemoryStore` with ``retention``
            by default. A durable store (SQLite, Redis) is shared by processes: an answer
            given in any of them ends the wait in this one. On a durable store, settle with
            ``await aresolve()`` / ``areject()`` / ``arelease()``; the synchronous methods
            raise :class:`AsyncSettleRequiredError`.

    One handler may serve several channels: the framework registers a notification callback
    per channel id (:meth:`set_on_input_required`), and ``close(channel_id=...)`` settles and
    closes only that channel's scope. Several kits may register one channel id: a request
    goes to the kit whose turn created it, and the scope closes with the last of them.
    """

    def __init__(
        self,
        *,
        retention: int = 128,
        store: PendingStore | DurableStore | None = None,
        directory: Directory | None = None,
    ) -> None:
        announcer = Announcer(self.areject)
        log: HistoryKeeper
        memory: PendingStore | None = None
        engine: MemoryEngine | DurableEngine
        if isinstance(store, DurableStore):
            engine = DurableEngine(store, announcer)
            log = store if isinstance(store, HistoryLog) else AnchoredHistory()
        else:
            memory = store if store is not None else MemoryStore(retention=retention)
            # A store keeping histories of its own keeps them; else the requests carry theirs.
            keeps = isinstance(memory, HistoryLog)
            engine = MemoryEngine(memory, announcer, trail=not keeps)
            log = memory if isinstance(memory, HistoryLog) else MemoryTrail(memory)
        super().__init__(
            engine,
            Decisions(engine, log),
            announcer,
            getattr(log, "trail", None),
            store if isinstance(store, SpendLedger) else memory_ledger(memory),
            store.outbox if isinstance(store, KeepsOutbox) else memory_outbox(memory),
        )
        self._new = RequestMaker(announcer).make
        self._answer_checks = AnswerChecks()
        self.grants: GrantStore = store.grants if isinstance(store, KeepsGrants) else MemoryGrants()
        """The standing grants beside the requests (:mod:`roomkit.policy.grants`): the
        store's, shared by every process on it; on the memory store, this handler's own."""
        self.directory = directory
        self.router = routed(self, directory)
        self._decisions.router = self.router

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
        answer_schema: AnswerSchema | None = None,
        timeout: float | None = None,
    ) -> PendingInput:
        """Register a pending request and schedule its notification; ``wait()`` owns cleanup.

        The request is answerable as soon as this returns; the notification callback
        (ON_USER_INPUT_REQUIRED through the framework) runs alongside, never in front of it.

        Args:
            key: an idempotency key, within its owner's scope: it names a request only for
                creates with the same ``room_id``, ``channel_id`` and ``actor_id`` (another
                actor's or channel's equal key makes a request of its own). A create whose
                key matches an open request returns that request (no second notification:
                the person is not asked twice); one whose key matches a settled request
                still retained returns it settled, and ``wait()`` replays its outcome at
                once. A key names one call: one naming a request made for another tool
                raises :class:`KeyConflictError`.
            answer_schema: a JSON Schema the answer (JSON text) must match; ``aresolve()``
                checks it. It is stored with the request, so every process checks the same.
                A Pydantic model class stands for its ``model_json_schema()``, and
                :meth:`wait_for` returns the answer as an instance of it.
            timeout: set the deadline now (``timeout`` seconds from creation) instead of at
                the first ``wait()``; a wait may bring it forward, never push it back. On a
                durable store the deadline is written with the request.

        Raises:
            HandlerClosedError: the handler, or ``channel_id``'s scope, is closed.
            InvalidTextError: a text field or the arguments hold text UTF-8 cannot encode
                (a lone surrogate); nothing was stored.
            KeyConflictError: ``key`` names a request made for another call.
            ValueError: the arguments hold NaN or an infinity (no JSON number), or hold
                themselves (a dict or list inside itself); or an id is longer than every
                store keeps (:mod:`roomkit.models.json_limits`: a ``tool_name``,
                ``room_id``, ``channel_id`` or ``actor_id`` over ``MAX_ID_CHARS``, 256
                characters; ``key`` or ``tool_call_id`` over ``MAX_KEY_CHARS``, 1,200; or
                ``key`` with its scope over ``MAX_SCOPED_KEY_BYTES``, 2,000 bytes as
                stored): the message names it, its length and the limit; or
                ``answer_schema`` is no valid JSON Schema, or holds a ``$ref`` that resolves
                to nothing in it (a ``$ref`` is looked up inside the schema only); nothing
                was stored.
            TypeError: ``answer_schema`` is neither a JSON Schema dict nor a Pydantic model
                class; nothing was stored.
            ArgumentsTooLargeError: a ``ValueError``: the arguments are longer as JSON than
                a request keeps on every store, memory included (56,000 characters). Checked
                before what else may be wrong with them, which arguments too large are
                refused without reading for.
            StoreUnavailableError: a durable store cannot be reached.
        """
        request = self._new(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, False
        )
        if key is not None or answer_schema is not None or timeout is not None:
            schema = None if answer_schema is None else answer_schema_of(answer_schema)
            check_options(request, key, schema, timeout)
        # Its created entry comes from the request itself (what was asked of whom, where).
        engine = self._engine
        if key is None and type(engine) is MemoryEngine:
            return engine.add(request, timeout, None)
        found = await engine.create(request, timeout, None)
        check_same_call(request, found)
        return found

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
        answer_schema: AnswerSchema | None = None,
        timeout: float | None = None,
    ) -> PendingInput:
        """Like :meth:`create`, for a request no one will ``wait()`` on.

        The caller owns the cleanup and must :meth:`release` (or ``arelease``) the request.
        """
        request = self._new(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, True
        )
        if key is not None or answer_schema is not None or timeout is not None:
            schema = None if answer_schema is None else answer_schema_of(answer_schema)
            check_options(request, key, schema, timeout)
        found = await self._engine.create(request, timeout, None)
        check_same_call(request, found)
        return found

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
        if type(pending_id) is not str:
            check_id("pending_id", pending_id)
        # The default (a non-negative int) passes without a call; the rest is checked in full.
        if type(timeout) is not int or not 0 <= timeout <= LONGEST_TIMEOUT:
            check_timeout(timeout)
        # Few locals and a short stack: each slot is 8 bytes of every suspended wait().
        try:
            settled = await self._engine.listen(pending_id, timeout)
        except asyncio.CancelledError:
            # The waiting call was cut: its request is withdrawn, so a late answer is refused.
            await self._abandon(pending_id)
            raise
        return self._engine.collect(settled)

    async def _abandon(self, pending_id: str) -> None:
        """The call that would wait on the request was cut: withdraw it, so that a late
        answer is refused (a keyed request on a durable store stays open to re-attach to)."""
        await self._engine.abandon(pending_id)

    async def wait_for(self, pending_id: str, model: type[T], *, timeout: float | None = 300) -> T:
        """:meth:`wait`, the answer returned as ``model``: a Pydantic model class (the
        request's ``answer_schema``), or a decision class of
        :mod:`roomkit.tools.approvals` on an approval (``Decision``, ``Edit``, ...).

        Raises:
            HumanInputRejectedError: as :meth:`wait`.
            HumanInputTimeoutError: as :meth:`wait`.
            RequestWithdrawnError: as :meth:`wait`.
            UnknownRequestError: as :meth:`wait`.
            InvalidAnswerError: the answer does not validate as ``model``, which a
                request created with ``answer_schema=model`` never gives (its answer was
                checked on the way in); the answer stays recorded.
            TypeError: ``model`` is no model class.
        """
        return typed_answer(pending_id, await self.wait(pending_id, timeout=timeout), model)

    # -- settling from outside ---------------------------------------------------------------

    def resolve(self, pending_id: str, result: str) -> bool:
        """Answer the request. Returns ``True`` if this call settled it.

        ``False`` means the id is not active or the request was already settled; the recorded
        outcome is then unchanged.

        Raises:
            InvalidAnswerError: ``result`` is not text UTF-8 can encode (a lone surrogate).
            AsyncSettleRequiredError: on a durable store (``await aresolve()`` instead).
        """
        if type(pending_id) is not str:
            check_id("pending_id", pending_id)
        if type(result) is not str or not result.isascii():
            result = answer_text(result)
        return self._engine.resolve(pending_id, result)

    def reject(self, pending_id: str, reason: str = "") -> bool:
        """Reject the request; its waiter raises ``HumanInputRejectedError(reason)``.

        Returns ``True`` if this call settled it, ``False`` as :meth:`resolve` does.

        Raises:
            InvalidTextError: ``reason`` is not text UTF-8 can encode (a lone surrogate).
            AsyncSettleRequiredError: on a durable store (``await areject()`` instead).
        """
        check_id("pending_id", pending_id)
        if type(reason) is not str or not reason.isascii():
            check_text("reason", reason)
        return self._engine.reject(pending_id, reason)

    def release(self, pending_id: str) -> bool:
        """Drop a request the caller owns, rejecting it first if it is still unanswered.

        A waiter still blocked on it raises :class:`RequestWithdrawnError` rather than
        hanging; a settled outcome stays replayable. Returns ``True`` if a request was dropped.

        Raises:
            AsyncSettleRequiredError: on a durable store (``await arelease()`` instead).
        """
        check_id("pending_id", pending_id)
        return self._engine.release(pending_id)

    # -- settling from any process -----------------------------------------------------------

    async def aresolve(
        self,
        pending_id: str,
        result: str | BaseModel,
        *,
        by: str | None = None,
        connection: Any = None,
        surface: str | None = None,
        digest: str | None = None,
    ) -> bool:
        """Answer the request, from any process sharing the store; ``True`` if this call won.

        The answer is idempotent per actor: ``True`` also comes back when the request is
        already resolved with this same ``result`` by this same ``by``. So a retry after
        :class:`StoreUnavailableError`, whose first try was in fact recorded, learns that
        the answer stands instead of being told it lost. A different answer, another actor,
        or ``by=None`` (no one to recognise) still gets ``False``.
        On a quorum approval the answer is a vote (it needs ``by=``), and ``True`` means
        it was recorded, not that it is the outcome: the one exception. What holds still:
        the request settles once, when a vote reaches the quorum, vetoes it or puts it out
        of reach, and ``wait()`` returns that. ``False``: ``by`` is not listed, voted on
        these arguments already, or the request is settled (nothing changed).
        ``False`` too when a check added with :meth:`add_answer_check` says nobody will
        take the answer (a workflow run that asked has ended): the request is withdrawn.

        Args:
            result: the answer; JSON text when the request has an ``answer_schema``, or
                an instance of a Pydantic model (sent as its JSON). On an
                approval, the decision: a :class:`~roomkit.tools.approvals.Decision`
                (``approve()``, ``edit()``, ``reject()`` or ``respond()`` of
                :mod:`roomkit.tools.approvals`, or ``Approve()``, ``Edit(arguments=...)``,
                ``Reject(reason=...)``, ``Respond(message=...)``), or its JSON text.
            by: who answered (an actor id), recorded with the outcome.
            surface: where the answer came from (``"desk"``, ``"cli"``, ...), for the
                request's history: at most
                :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters.
            digest: on an approval, the ``arguments_digest`` the person deciding was shown;
                the decision is refused when an edit has changed the arguments since.
                Every surface that shows a person the arguments passes it; ``None`` (the
                application's own decision) checks nothing, nor does any other request.
            connection: a ``psycopg.AsyncConnection`` with your transaction open, on a
                handler whose store is a ``PostgresStore``: the answer settles inside that
                transaction, and ``True`` means "settled if your transaction commits"
                (waiters wake after the commit; a rollback leaves the request pending).

        Raises:
            TypeError: ``connection`` is given and the store is not a ``PostgresStore``,
                or the request is a quorum approval (its votes cannot join a transaction);
                or ``surface`` is no ``str``.
            InvalidAnswerError: the answer does not match the request's answer schema, or
                is not text UTF-8 can encode (a lone surrogate); on an approval, it is no
                decision, or an edit breaks the tool's schema. The request stays open.
            InvalidTextError: ``by`` or ``surface`` is not text UTF-8 can encode.
            ValueError: ``by`` or ``surface`` is longer than
                :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters; the
                message says how long; nothing was recorded.
            VoteNeedsActorError: a vote on a quorum approval without ``by=``.
            ArgumentsChangedError: the approval's arguments no longer have ``digest``;
                nothing changed (the error's ``request`` holds them as they are now).
            StoreUnavailableError: a durable store stayed away after the store's retries;
                whether this answer was recorded is unknown, and the same call made again
                once the store is back says so.
        """
        check_id("pending_id", pending_id)
        if type(result) is not str or not result.isascii():
            result = answer_text(result)
        check_by(by)
        check_surface(surface)
        if self._answer_checks and await self._answer_checks.unwanted(self, pending_id):
            return False
        behalf = await answered_for(self, pending_id, by) if self.router is not None else None
        return await answer(
            self._engine,
            self._decisions,
            pending_id,
            result,
            by,
            surface,
            connection,
            digest,
            behalf,
        )

    async def areject(
        self,
        pending_id: str,
        reason: str = "",
        *,
        by: str | None = None,
        surface: str | None = None,
        digest: str | None = None,
    ) -> bool:
        """Reject the request, from any process sharing the store; ``True`` if this call won.

        On an approval this is ``aresolve(pending_id, reject(reason), by=by, digest=digest)``.

        Raises:
            InvalidTextError: ``reason``, ``by`` or ``surface`` is not text UTF-8 can
                encode (a lone surrogate); the request stays open.
            ValueError: ``by`` or ``surface`` is longer than
                :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters; the
                request stays open.
            ArgumentsChangedError: as :meth:`aresolve`.
            StoreUnavailableError: a durable store cannot be reached (nothing was settled).
        """
        check_id("pending_id", pending_id)
        if type(reason) is not str or not reason.isascii():
            check_text("reason", reason)
        check_by(by)
        check_surface(surface)
        if self._answer_checks and await self._answer_checks.unwanted(self, pending_id):
            return False
        return await refuse(self._engine, self._decisions, pending_id, reason, by, surface, digest)

    async def arelease(self, pending_id: str, *, reason: str | None = None) -> bool:
        """:meth:`release` for any store: withdraw the request if it is still unanswered.

        Returns ``True`` if this call withdrew it, on every store: ``False`` for an unknown
        id and for a request settled already (answered, refused, timed out, withdrawn),
        which is still dropped here and keeps its outcome for a wait to replay. Of releases
        racing, from this process or any other sharing the store, one returns ``True``.
        (:meth:`release` returns ``True`` for a settled request it drops too.)

        Args:
            reason: why it is withdrawn (a run that asked has ended, ...): its
                ``reject_reason``, which the desk shows (``Withdrawn: <reason>``) and a
                waiter's :class:`RequestWithdrawnError` carries, and the ``reason`` of its
                history's ``settled`` entry. By default the reason is "Released before an
                answer arrived", which the history does not repeat.

        Raises:
            TypeError: ``reason`` is neither a ``str`` nor ``None``.
            InvalidTextError: ``reason`` is not text UTF-8 can encode (a lone surrogate).
            StoreUnavailableError: a durable store cannot be reached.
        """
        check_id("pending_id", pending_id)
        if reason is not None:
            check_text("reason", reason)
        return await self._engine.arelease(pending_id, reason)
