"""Approvals on the handler: their creation, their decisions, their approvers, their history.

An approval is a request of kind ``"approval"``: ``tool_name`` is the held tool,
``arguments`` its final validated arguments, ``arguments_digest`` their digest and
``answer_schema`` the tool's JSON Schema. A decision is the JSON of one of the builders of
:mod:`roomkit.tools.approvals`; anything else raises :class:`InvalidAnswerError` and leaves
the request as it was. An edit must match the tool's schema. A rejection settles the
request ``REJECTED`` with its reason; every other decision settles it ``RESOLVED`` with the
decision's JSON, which the tool loop reads back. Each step is written to the request's
history in the store (:class:`~roomkit.stores.HistoryLog`); the
``decided`` and ``settled`` entries of a decision in the settle's own transaction, so that
whoever hears of the outcome finds them.

On a quorum approval a decision is a vote (:meth:`Decisions.vote`): it needs the voter's
``by=``, and the store records it, and settles the request when it decides, in one operation
(with its ``voted`` and ``settled`` entries, in the same transaction or script).

A decision from a person names the digest of the arguments they were shown (``shown``): it
is refused with :class:`ArgumentsChangedError` when the arguments have another digest by the
time it is recorded. A quorum's vote is judged so inside the store's own atomic step (an
edit may change the arguments up to that instant); a single decision's arguments never
change while it is open, so the request as read has the digest its settle would hold.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, cast

from roomkit.core.context_vars import bound
from roomkit.core.exceptions import InvalidAnswerError, VoteNeedsActorError
from roomkit.models.decisions import ALL_DECISIONS, DECISIONS_KEY, Approve, allowed_decisions
from roomkit.models.history import Entry
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.stores import Ballot, check_entry, new_entry, settled_entry
from roomkit.tools._actor_ids import actor_ids
from roomkit.tools.approvals import Decision, read_decision
from roomkit.tools.human_input._at_once import at_once
from roomkit.tools.human_input._checks import check_digest
from roomkit.tools.human_input._edits import changed, checked_edit
from roomkit.tools.human_input._in_transaction import Settle, Settlement, answered
from roomkit.tools.human_input._keys import reattached
from roomkit.tools.human_input._offered import vote_grant, vote_offer, with_grant
from roomkit.tools.validation import check_tool_schema

if TYPE_CHECKING:
    from roomkit.routing import Router
    from roomkit.tools.human_input._durable_engine import DurableEngine, Reattaching
    from roomkit.tools.human_input._memory_engine import MemoryEngine

__all__ = [
    "APPROVAL",
    "DECISIONS_KEY",
    "Decisions",
    "HistoryKeeper",
    "allowed_decisions",
    "check_actors",
    "created_with",
    "opening_entries",
    "trail",
]

APPROVAL = "approval"
APPROVED = Approve().canonical
MAX_DESCRIPTION_CHARS = 4000
"""The longest tool description an approval's history keeps (a longer one is cut)."""

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED


_CREATED_WITH: ContextVar[tuple[dict[str, Any], ...]] = ContextVar(
    "roomkit_created_with", default=()
)


@contextmanager
def created_with(*entries: dict[str, Any] | Entry) -> Iterator[None]:
    """Approvals created inside start their history with ``entries`` after ``created``, in
    the store's one write of the request (a policy's decision on the call, say)."""
    with bound(_CREATED_WITH, tuple(check_entry(entry) for entry in entries)):
        yield


@contextmanager
def also_created_with(*entries: dict[str, Any] | Entry) -> Iterator[None]:
    """:func:`created_with`, the entries following those set already."""
    with created_with(*_CREATED_WITH.get(), *entries):
        yield


class HistoryKeeper(Protocol):
    """Where a handler's histories are kept: a durable store, or the requests in memory."""

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int: ...

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]: ...


def trail(
    status: PendingInputStatus, by: str | None, surface: str | None
) -> tuple[dict[str, Any], ...]:
    """What a settle by ``by`` through ``surface`` records in the request's history: its
    ``settled`` entry."""
    return (settled_entry(status.value, actor=by, surface=surface),)


def check_actors(actors: Iterable[str], *, name: str = "approvers") -> tuple[str, ...]:
    """``actors`` as a tuple of actor ids without repeats, in the order given; a ``set`` or
    ``frozenset`` (which has no order) sorted, so that every process lists them alike.

    Raises:
        TypeError: ``actors`` is one string.
        ValueError: an id is empty or no string, or longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters; or there are more
            than :data:`~roomkit.models.json_limits.MAX_APPROVERS` of them.
    """
    if isinstance(actors, str):
        raise TypeError(f"{name} is a collection of actor ids: pass [{actors!r}], not a string")
    return actor_ids(actors, name=name, single=f"{name} must hold non-empty actor ids")


def _check_decisions(decisions: Iterable[str] | None) -> list[str] | None:
    """``decisions`` as a list, in the builders' order; ``None`` for all of them.

    Raises:
        TypeError, ValueError: it is one string, names an unknown decision, or lacks
            ``reject`` (every approval can be refused).
    """
    if decisions is None:
        return None
    if isinstance(decisions, str):
        raise TypeError(f"decisions is a collection of names: pass [{decisions!r}]")
    chosen = list(dict.fromkeys(decisions))
    unknown = [kind for kind in chosen if kind not in ALL_DECISIONS]
    if unknown:
        raise ValueError(f"decisions takes {list(ALL_DECISIONS)}, got {unknown!r}")
    if "reject" not in chosen:
        raise ValueError("decisions must include 'reject': every approval can be refused")
    return [kind for kind in ALL_DECISIONS if kind in chosen]


class Decisions:
    """The approval half of a handler, over its engine and its history log."""

    __slots__ = ("_engine", "log", "router")

    def __init__(self, engine: MemoryEngine | DurableEngine, log: HistoryKeeper) -> None:
        self._engine = engine
        self.log = log
        """Where the histories are kept: the durable store, or one in memory."""
        self.router: Router | None = None
        """The handler's routing, when it has a directory: a delegate's decision is recorded
        on behalf of the approver of record."""

    def prepare(
        self,
        request: PendingInput,
        approvers: tuple[str, ...],
        tool_schema: dict[str, Any] | None,
        quorum: int | None = None,
        veto: bool = True,
        decisions: Iterable[str] | None = None,
        digest: str | None = None,
    ) -> None:
        """Make ``request`` an approval of its tool and arguments, to be decided by
        ``approvers``; an edit must match ``tool_schema``; only ``decisions`` (all four
        when ``None``) are taken. ``digest`` is the arguments' digest when the caller has
        it already (``arguments_digest`` of the same tool and arguments).

        Raises:
            TypeError: ``tool_schema`` is not a dict.
            ValueError: ``tool_schema`` is no valid JSON Schema of an object (an edit could
                never be checked against it).
            TypeError, ValueError: ``decisions`` is not a list of decision names with
                ``reject`` among them.
        """
        if tool_schema is not None:
            if not isinstance(tool_schema, dict):
                raise TypeError(f"tool_schema must be a JSON Schema dict, got {tool_schema!r}")
            # Compiled once per schema and kept: a tool's schema costs one look per call.
            check_tool_schema(request.tool_name, tool_schema)
        allowed = _check_decisions(decisions)
        if allowed is not None and allowed != list(ALL_DECISIONS):
            tool_schema = {**(tool_schema or {"type": "object"}), DECISIONS_KEY: allowed}
        request.answer_schema = tool_schema
        request.kind = APPROVAL
        request.approvers = approvers
        request.arguments_digest = digest or arguments_digest(request.tool_name, request.arguments)
        if quorum is not None:
            if isinstance(quorum, bool) or not isinstance(quorum, int):
                raise TypeError(f"quorum is a count of approvals, got {type(quorum).__name__}")
            if not 1 <= quorum <= len(approvers):
                raise ValueError(
                    f"quorum must be from 1 to the {len(approvers)} approvers, got {quorum}"
                )
            request.quorum, request.veto, request.voters = quorum, bool(veto), approvers

    @property
    def engine(self) -> MemoryEngine | DurableEngine:
        """The engine the approvals are stored and settled by."""
        return self._engine

    async def hold(
        self,
        request: PendingInput,
        timeout: float | None,
        *,
        surface: str | None,
        about: str | None = None,
        reattaching: Reattaching | None = None,
    ) -> PendingInput:
        """Store the approval ``request``; its first history entry (with ``about``, the
        tool's description, when given) goes into the store in the same write. Inside
        :func:`~roomkit.tools.human_input._at_once.decided_at_once` it is stored unannounced
        and settled at once (as is a still open one its key re-attaches to). ``reattaching``
        brings an open request its key re-attaches to up to date before it is announced
        (see :meth:`~roomkit.tools.human_input._durable_engine.DurableEngine.create`)."""
        entries = opening_entries(request, surface, about)
        settling = at_once()
        engine = self._engine
        if settling is None:
            found = await engine.create(request, timeout, entries, reattaching=reattaching)
            return await reattached(request, found, self.history)
        decision, by, through = settling
        if engine.durable and request.quorum is None and engine.inserts_settled:
            # One write: a process stopped here leaves the request settled, or nothing.
            judged = self._decision(request, decision)
            settlement = await self.settlement(request, judged, by, through)
            durable = cast("DurableEngine", engine)
            record = await durable.create_settled(request, timeout, entries, settlement)
        else:
            record = await engine.create(request, timeout, entries, announce=False)
        await reattached(request, record, self.history)
        if record.status is _PENDING:
            if record.pending_id != request.pending_id:
                # Re-attached by its key, still open: this decision joins its history too.
                for entry in entries[1:]:
                    await self.log.append_history(record.pending_id, entry)
            await self.decide(record, decision, by, through)
        return record

    async def decide(
        self,
        request: PendingInput,
        text: str,
        by: str | None,
        surface: str | None,
        settle: Settle | None = None,
        shown: str | None = None,
    ) -> bool:
        """Settle the approval ``request`` with the decision ``text``; ``True`` if this won.

        ``settle`` is the check-and-set to run, the engine's own unless given (the one
        that joins the caller's transaction). ``shown`` is the digest of the arguments
        the decider was shown (``None``: not checked).

        Raises:
            InvalidAnswerError: ``text`` is not a decision, or an edit breaks the tool's
                schema; nothing changed.
            ArgumentsChangedError: the arguments no longer have the digest ``shown``.
            TypeError, ValueError: ``shown`` is not an arguments digest.
        """
        if shown is not None:
            check_digest(shown)
        decision = self._decision(request, text)
        if request.quorum is not None:
            return await self.vote(request, decision, by, surface, shown)
        digest = request.arguments_digest
        if decision.arguments is not None:
            digest = checked_edit(request, decision.arguments)
        canonical = decision.canonical
        engine = self._engine
        if request.status is not _PENDING:
            return answered(request, canonical, by)
        if shown is not None and shown != request.arguments_digest:
            raise changed(request)
        # The decision and the outcome (and a grant offered) join the history in the
        # settle's own transaction.
        settlement = await self.settlement(request, decision, by, surface, digest)
        if decision.kind == "approve":
            settlement = with_grant(settlement, engine.store)
        if await (settle or engine.settle)(settlement):
            return True
        settled = await engine.get_request(request.pending_id)
        return by is not None and answered(settled, canonical, by)

    def _decision(self, request: PendingInput, text: str | Decision) -> Decision:
        """The decision ``text`` on the approval ``request``, one it takes.

        Raises:
            InvalidAnswerError: ``text`` is not a decision, or one ``request`` does not take.
        """
        decision = read_decision(text)
        allowed = allowed_decisions(request)
        if decision.kind not in allowed:
            raise InvalidAnswerError(
                f"approval {request.pending_id} of {request.tool_name!r} takes "
                f"{', '.join(allowed)} only, not {decision.kind}"
            )
        return decision

    async def settlement(
        self,
        request: PendingInput,
        decision: Decision,
        by: str | None,
        surface: str | None,
        digest: str | None = None,
    ) -> Settlement:
        """The settle of the open approval ``request`` with ``decision`` by ``by`` (through
        ``surface``): its outcome, its ``decided`` and ``settled`` entries. ``digest`` is
        that of the arguments approved, checked already (an edit's is checked here when
        not given).

        Raises:
            InvalidAnswerError: an edit breaks the tool's schema.
        """
        fields: dict[str, Any] = {"decision": decision.kind}
        if decision.arguments is not None:
            if digest is None:
                digest = checked_edit(request, decision.arguments)
            fields["arguments"] = decision.arguments
        if decision.kind == "reject":
            status, text = _REJECTED, decision.text
            fields["reason"] = decision.text
        else:
            status, text = _RESOLVED, decision.canonical
            if decision.kind == "respond":
                fields["result"] = decision.text
        if decision.kind in ("approve", "edit"):
            fields["digest"] = digest or request.arguments_digest
        if self.router is not None and by is not None:
            fields.update(await _on_behalf(self.router, request, by))
        decided = new_entry("decided", actor=by, surface=surface, **fields)
        return Settlement(
            request.pending_id, status, text, by, (decided, *trail(status, by, surface))
        )

    async def vote(
        self,
        request: PendingInput,
        decision: Decision,
        by: str | None,
        surface: str | None,
        shown: str | None = None,
    ) -> bool:
        """Record ``by``'s vote on the quorum approval ``request``; ``True`` if it counts.

        ``True`` means the vote was recorded (or was, by this same call run again), not
        that the request is settled: it settles once the quorum approves, a veto rejects
        it, or approval is out of reach. ``False``: ``by`` is not listed, voted on these
        arguments already, or the request is no longer open (nothing changed).

        Raises:
            VoteNeedsActorError: ``by`` is ``None``.
            InvalidAnswerError: a ``respond`` decision, or an edit that breaks the tool's
                schema (nothing changed).
            ArgumentsChangedError: the arguments no longer have the digest ``shown`` when
                the store judges the vote (nothing changed).
        """
        if by is None:
            raise VoteNeedsActorError(
                f"request {request.pending_id} needs {request.quorum} approvals: each vote "
                f"names its approver, pass by= (one of {list(request.voters)})"
            )
        if decision.kind == "respond":
            raise InvalidAnswerError(
                "a quorum approval takes votes: approve(), edit(arguments) or reject(reason), "
                "not respond()"
            )
        edited = None
        if decision.arguments is not None:
            edited = checked_edit(request, decision.arguments)
        stands: tuple[tuple[str, str | None], ...] = ()
        if self.router is not None:
            standing = await self.router.standing(request, by)
            stands = tuple((found.principal, found.delegation_id) for found in standing)
        approving = decision.kind == "approve"
        ballot = Ballot(
            by,
            decision.kind,
            secrets.token_hex(8),
            decision.arguments,
            edited,
            decision.text if decision.kind == "reject" else "",
            surface,
            shown,
            stands,
            # An approving vote offers the grant offered with it: the vote that approves
            # the request makes it in its own transaction.
            vote_grant(request.pending_id, self._engine.store) if approving else None,
            # Its offer is written with it, never on its own: a retry offers once.
            vote_offer(request.pending_id) if approving else None,
        )
        judgement = await self._engine.vote(request.pending_id, ballot)
        if judgement.stale and judgement.record is not None:
            raise changed(judgement.record)
        return judgement.accepted

    async def record(self, pending_id: str, entry: dict[str, Any] | Entry) -> int:
        """Append ``entry`` to the request's history; its ``seq``."""
        return await self.log.append_history(pending_id, check_entry(entry))

    async def history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first."""
        return await self.log.read_history(pending_id)

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], by: str | None, surface: str | None
    ) -> bool:
        """Let ``actors`` answer the open request too; ``False`` when it is not open.

        On an approval they join its approvers, who alone may decide it. On a question they
        join whoever may see and answer it already: the first escalation names its actor
        first among the approvers, so that reminders keep reaching them.
        """
        engine = self._engine
        request = engine.local(pending_id) or await engine.get_request(pending_id)
        if request is None:
            return False
        kept: tuple[str, ...] = ()
        if request.kind != APPROVAL and not request.approvers and request.actor_id is not None:
            kept = (request.actor_id,)
        escalated = new_entry("escalated", actor=by, surface=surface, approvers=list(actors))
        if engine.durable:
            # One write: a decision never lands between the approvers and the entry naming
            # who added them, and a process killed there never leaves one without the other.
            durable = cast("DurableEngine", engine)
            return await durable.add_approvers(pending_id, (*kept, *actors), escalated)
        # In memory neither step awaits anything: no decision lands between them.
        memory = cast("MemoryEngine", engine)
        if not await memory.add_approvers(pending_id, (*kept, *actors)):
            return False
        await self.log.append_history(pending_id, escalated)
        return True


def opening_entries(
    request: PendingInput, surface: str | None, about: str | None
) -> tuple[dict[str, Any], ...]:
    """The entries the approval ``request``'s history starts with: ``created``, then those
    of :func:`created_with` (a policy's decision on the call)."""
    return (_created(request, surface, about), *_CREATED_WITH.get())


def _created(request: PendingInput, surface: str | None, about: str | None) -> dict[str, Any]:
    """The first entry of the approval ``request``'s history (with ``about``, the tool's
    description, when given)."""
    described = {} if not about else {"description": about[:MAX_DESCRIPTION_CHARS]}
    return new_entry(
        "created",
        actor=request.actor_id,
        surface=surface,
        tool=request.tool_name,
        digest=request.arguments_digest,
        arguments=request.arguments,
        approvers=list(request.approvers),
        room=request.room_id,
        channel=request.channel_id,
        **described,
    )


async def _on_behalf(router: Router, request: PendingInput, by: str) -> dict[str, Any]:
    """The fields a decision by ``by`` adds: whom they decide for and through which
    delegation, when they stand in for an approver of record (nothing when they decide as
    themself)."""
    standing = await router.standing(request, by)
    if not standing or standing[0].on_behalf_of is None:
        return {}
    found = standing[0]
    fields: dict[str, Any] = {"on_behalf_of": found.on_behalf_of}
    if found.delegation_id is not None:
        fields["delegation_id"] = found.delegation_id
    return fields
