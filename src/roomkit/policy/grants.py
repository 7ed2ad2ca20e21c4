"""Standing grants: a person approving may grant "the same again", for a bounded scope.

A grant covers later calls of the same tool — with exactly the arguments approved (their
digest), or arguments that match a JSON Schema narrowing the tool's — for the call's actor
and/or its room, until a time on the store's clock, for at most a number of uses. A held
call within a live grant's scope runs without anyone being asked; its approval request is
recorded all the same, settled by the grant at once, with a ``grant_used`` entry citing it,
so that ``roomkit audit verify`` vouches for why nobody was asked.

A grant never widens what the approval that made it allowed:

- its schema is checked together with the tool's (a call must match both), and the call it
  was made on must match it; its patterns keep to a shape that matches in linear time
  (:mod:`roomkit.policy._patterns`), as the caller chooses the strings they are matched on;
- it covers only calls whose approval needs no more than made it: a call needing a quorum of
  ``n`` is covered only by a grant made by ``n`` or more approvers, all listed on the call;
- a grant made on a quorum approval needs that quorum: every approving vote must offer the
  same grant (:func:`approve_and_grant` by each), else the approval stands and no grant is
  made (:class:`GrantRefusedError`).

Grants are listed and revoked with ``handler.grants`` (the store's, shared by every process),
``roomkit grants`` and the desk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from jsonschema.validators import Draft202012Validator, validator_for

from roomkit.core.exceptions import RoomKitError
from roomkit.models.history import Granted, GrantOffered
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.policy._narrowing import narrowing_problem
from roomkit.policy._patterns import schema_pattern_problem
from roomkit.stores import MakesGrant, approved_by, check_entry
from roomkit.stores.grants import (
    Grant,
    GrantStore,
    KeepsGrants,
    MemoryGrants,
    every_live_grant,
)
from roomkit.tools.approvals import approve
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = [
    "GRANT_SURFACE",
    "MAX_GRANT_SECONDS",
    "Grant",
    "GrantOutcome",
    "GrantRefusedError",
    "GrantScope",
    "GrantStore",
    "KeepsGrants",
    "MemoryGrants",
    "approve_and_grant",
    "covers",
    "grant_for",
    "use_grant",
]

logger = logging.getLogger("roomkit.policy.grants")

GRANT_SURFACE = "grant"
"""The surface a call's approval is recorded as decided through when a grant covered it."""

MAX_GRANT_SECONDS = 90 * 86_400.0
"""The longest a grant may stand: 90 days."""

MAX_USES = 2**53
"""The most uses a grant may count (what JSON numbers and every store hold exactly)."""


class GrantRefusedError(RoomKitError, ValueError):
    """A grant that would widen what was approved, or that the approval cannot make.

    The message says what to change. When it comes from :func:`approve_and_grant` after a
    vote was counted, the approval stands: only the grant was not made.
    """


class GrantOutcome(NamedTuple):
    """What :func:`approve_and_grant` did."""

    accepted: bool
    """Whether the approval (or, on a quorum approval, the vote) was recorded, as
    ``aresolve`` says it."""
    grant: Grant | None
    """The grant made; ``None`` while a quorum is not reached, or when nothing was accepted."""


@dataclass(frozen=True, slots=True)
class GrantScope:
    """What a person grants while approving: the same call again, within these bounds."""

    expires_in: float
    """Seconds from now (on the store's clock) until the grant ends; at most 90 days."""
    max_uses: int | None = None
    """Calls it may cover; ``None``: any number until it ends."""
    schema: dict[str, Any] | None = None
    """A JSON Schema the arguments must match (besides the tool's); ``None``: exactly the
    arguments approved."""
    for_actor: bool = True
    """Cover only calls of the approved call's actor."""
    for_room: bool = False
    """Cover only calls in the approved call's room."""

    def __post_init__(self) -> None:
        seconds = self.expires_in
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise GrantRefusedError(f"expires_in is a number of seconds, got {seconds!r}")
        if not (math.isfinite(seconds) and 0 < seconds <= MAX_GRANT_SECONDS):
            raise GrantRefusedError(
                f"expires_in must be above 0 and at most {MAX_GRANT_SECONDS:.0f} seconds "
                f"(90 days), got {seconds!r}: a grant always ends"
            )
        most = self.max_uses
        if most is not None and (
            isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= MAX_USES
        ):
            raise GrantRefusedError(
                f"max_uses is a count from 1 to {MAX_USES} or None, got {most!r}"
            )
        if self.schema is not None:
            if not isinstance(self.schema, dict):
                raise GrantRefusedError(f"schema is a JSON Schema object, got {self.schema!r}")
            problem = (
                schema_pattern_problem(self.schema)
                or narrowing_problem(self.schema)
                or _endless_problem(self.schema)
            )
            if problem is not None:
                raise GrantRefusedError(problem)
        if not (self.for_actor or self.for_room):
            raise GrantRefusedError(
                "a grant covers the call's actor, its room, or both: set for_actor or for_room"
            )

    def to_json(self) -> dict[str, Any]:
        """The scope as a JSON object (what the desk's approve route takes as ``grant``)."""
        return {
            "expires_in": self.expires_in,
            "max_uses": self.max_uses,
            "schema": self.schema,
            "for_actor": self.for_actor,
            "for_room": self.for_room,
        }

    @classmethod
    def from_json(cls, data: object) -> GrantScope:
        """A scope from :meth:`to_json`'s object.

        Raises:
            GrantRefusedError: ``data`` is not such an object, or says what no grant may.
        """
        if not isinstance(data, Mapping):
            raise GrantRefusedError(f"a grant is a JSON object, got {type(data).__name__}")
        known = {"expires_in", "max_uses", "schema", "for_actor", "for_room"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise GrantRefusedError(f"a grant takes {sorted(known)}, not {unknown}")
        if "expires_in" not in data:
            raise GrantRefusedError("a grant needs expires_in: the seconds until it ends")
        for flag in ("for_actor", "for_room"):
            if flag in data and not isinstance(data[flag], bool):
                raise GrantRefusedError(f"{flag} is true or false, got {data[flag]!r}")
        return cls(**dict(data))

    def digest(self) -> str:
        """The SHA-256 hex digest of the scope's canonical JSON."""
        text = json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def _endless_problem(schema: dict[str, Any]) -> str | None:
    """Why checking any arguments against ``schema`` never ends, or ``None``: a ``$ref``
    that leads back to where it started before reading a single argument. Probed on an
    empty object, so that the arguments' own nesting cannot be the cause."""
    try:
        validator_for(schema, default=Draft202012Validator)(schema).is_valid({})
    except RecursionError:
        return (
            "the grant's schema refers to itself without end (a $ref leads back to where it "
            "started before reading any argument): write the bounds out instead"
        )
    except Exception:
        # Its other faults (no JSON Schema, a $ref resolving nowhere) are told, worded,
        # when it is checked against the call approved.
        return None
    return None


def grant_for(
    request: PendingInput,
    scope: GrantScope,
    granted_by: tuple[str, ...],
    *,
    now: float,
) -> Grant:
    """The grant ``scope`` makes on the approval ``request``, approved by ``granted_by``.

    Raises:
        GrantRefusedError: ``request`` is no approval, the call it holds is outside the
            scope's schema, or the scope asks for an actor or a room the call has not.
    """
    if request.kind != "approval":
        raise GrantRefusedError(
            f"request {request.pending_id} is a question, not an approval: only an approval "
            "of a tool call can be granted again"
        )
    if scope.schema is not None:
        try:
            problem = validate_tool_arguments(scope.schema, request.arguments)
        except ValueError as error:
            raise GrantRefusedError(f"the grant's schema is no JSON Schema: {error}") from None
        if problem is not None:
            raise GrantRefusedError(
                f"the grant's schema does not cover the call approved ({problem}): a grant "
                "covers the call it is made on, and narrower ones"
            )
    if scope.for_actor and request.actor_id is None:
        raise GrantRefusedError(
            f"the call of {request.pending_id} names no actor: grant it for its room instead"
        )
    if scope.for_room and not request.room_id:
        raise GrantRefusedError(
            f"the call of {request.pending_id} has no room: grant it for its actor instead"
        )
    digest = hashlib.sha256(request.pending_id.encode()).hexdigest()[:24]
    return Grant(
        grant_id=f"g-{digest}",
        tool=request.tool_name,
        granted_by=granted_by,
        expires_at=now + scope.expires_in,
        digest=request.arguments_digest if scope.schema is None else None,
        schema=scope.schema,
        actor_id=request.actor_id if scope.for_actor else None,
        room_id=request.room_id if scope.for_room else None,
        max_uses=scope.max_uses,
        quorum=len(granted_by),
        source=request.pending_id,
    )


def covers(grant: Grant, request: PendingInput) -> str | None:
    """Why ``grant`` does not cover the approval ``request`` (``None`` when it does).

    Whether it is live (unrevoked, unexpired, not used up) is the store's to say, at its use.
    """
    if grant.tool != request.tool_name:
        return f"it is for {grant.tool!r}"
    if grant.actor_id is not None and grant.actor_id != request.actor_id:
        return "it is for another actor"
    if grant.room_id is not None and grant.room_id != request.room_id:
        return "it is for another room"
    if grant.digest is not None and grant.digest != request.arguments_digest:
        return "it is for other arguments"
    if grant.schema is not None:
        try:
            # A grant stored before its patterns were checked is not matched with them; one
            # stored with a schema that is no schema covers nothing either.
            unsafe = schema_pattern_problem(grant.schema)
            if unsafe is not None:
                return f"its schema is broken ({unsafe})"
            problem = validate_tool_arguments(grant.schema, request.arguments)
        except (ValueError, TypeError, AttributeError) as error:
            return f"its schema is broken ({error})"
        if problem is None and request.answer_schema:
            # The tool's own schema bounds it too: a grant narrows, never widens.
            problem = validate_tool_arguments(request.answer_schema, request.arguments)
        if problem is not None:
            return f"the arguments are outside it ({problem})"
    needed = request.quorum or 1
    if grant.quorum < needed:
        return f"the call needs {needed} approvals and {grant.quorum} made it"
    if request.approvers:
        listed = [actor for actor in grant.granted_by if actor in request.approvers]
        if len(listed) < needed:
            return "those who granted it may not approve this call"
    return None


async def use_grant(grants: GrantStore, request: PendingInput) -> Grant | None:
    """Use a live grant that covers the approval ``request``: the grant, with the use
    counted, or ``None`` when none does (a person is asked, as usual).

    Every live grant on the call's tool is looked at, however many there are. A grant
    another process revokes, uses up or sees expire meanwhile is passed over: the use
    itself is the store's check-and-set. Grants that cannot be read cover nothing: the
    failure is logged and a person is asked.

    The use is counted here, on its own: a handler holding a call counts it in the write
    that records the call's request instead, so that no use goes unrecorded.
    """
    try:
        for grant in await every_live_grant(grants, request.tool_name):
            if covers(grant, request) is not None:
                continue
            used = await grants.use(grant.grant_id)
            if used is not None:
                return used
    except Exception:
        # A grant only spares a question: without the grants, the person is asked.
        logger.exception("The grants of %r could not be read: asking a person", request.tool_name)
    return None


async def approve_and_grant(
    handler: HumanInputHandler,
    pending_id: str,
    scope: GrantScope,
    *,
    by: str,
    surface: str | None = None,
    digest: str | None = None,
) -> GrantOutcome:
    """Approve the held call ``pending_id`` as ``by``, and grant the same again within
    ``scope``.

    On a single approval the grant is made with the approval, when this call approved it
    (or had: a retry finds its grant): on a durable store in the approval's own settle
    transaction (one script on Redis), so that a process stopped anywhere leaves both or
    neither. On a quorum approval this is ``by``'s vote, offering the grant (its
    ``grant_offered`` entry written with the vote, once, when the vote counts); the grant is
    made by the vote that reaches the quorum, when every approving vote offered the same
    scope: on a durable store in that vote's own transaction (script), with its entry.
    Returns whether the approval (the vote) was accepted and the grant made, if any.

    Raises:
        GrantRefusedError: the scope is not one this approval can grant (nothing changed);
            or, on a quorum approval reached by votes that did not all offer it, no grant was
            made (the approval stands).
        UnknownRequestError: no request has this id.
        ArgumentsChangedError, InvalidAnswerError, StoreUnavailableError: as
            :meth:`~roomkit.tools.human_input.HumanInputHandler.aresolve`.
    """
    from roomkit.core.exceptions import UnknownRequestError
    from roomkit.tools.human_input import granted_by_quorum, granted_with

    if not isinstance(by, str) or not by:
        raise GrantRefusedError("a grant names who grants it: pass by= (an approver's id)")
    request = await handler.get_request(pending_id)
    if request is None:
        raise UnknownRequestError(f"No pending request with id {pending_id}")
    # On a quorum approval ``approvers`` is who may still vote: one who voted already is
    # listed among the voters, and their vote sent again is told as ``aresolve`` tells it.
    listed = request.voters if request.quorum is not None else request.approvers
    if listed and by not in listed:
        raise GrantRefusedError(
            f"{by!r} is not an approver of {pending_id} ({list(listed)}): only "
            "someone who may approve the call may grant it again"
        )
    grants = handler.grants
    # Checked before the approval is given: a scope that cannot be granted changes nothing.
    made = grant_for(request, scope, (by,), now=grants.clock())
    if request.quorum is None:
        # The approval's settle writes the grant's entry, and on a store that can, the grant.
        with granted_with(pending_id, made, _entry(made, scope, surface), grants):
            accepted = await handler.aresolve(
                pending_id, approve(), by=by, surface=surface, digest=digest
            )
        if not accepted:
            return GrantOutcome(False, None)
        return GrantOutcome(True, await _make(handler, request, scope, (by,), surface))
    offered = GrantOffered(
        actor=by, surface=surface, scope=scope.to_json(), scope_digest=scope.digest()
    )
    # The offer is written with the vote, when it counts: a process stopped before the vote
    # leaves no offer, and the vote run again offers once. The vote that approves the
    # request makes the grant, on a store that can, in its own transaction; elsewhere it is
    # made below, and a retry makes it if the process stopped.
    made_by_quorum = _made_by_quorum(scope, surface, grants)
    with granted_by_quorum(pending_id, made_by_quorum, grants, offered=offered):
        accepted = await handler.aresolve(
            pending_id, approve(), by=by, surface=surface, digest=digest
        )
    if not accepted:
        return GrantOutcome(False, None)
    final = await handler.get_request(pending_id)
    if final is None or final.status is not PendingInputStatus.RESOLVED:
        return GrantOutcome(True, None)
    approvers = tuple(approved_by(final))
    missing = _not_offered(approvers, await handler.history(pending_id), scope)
    if missing:
        raise GrantRefusedError(
            f"the quorum approved {pending_id}, but {missing} approved without offering this "
            "grant: a grant made under a quorum needs every approving vote to offer it, so "
            "no grant was made (the approval stands)"
        )
    return GrantOutcome(True, await _make(handler, final, scope, approvers, surface))


def _not_offered(
    approvers: tuple[str, ...], history: Sequence[Mapping[str, Any]], scope: GrantScope
) -> list[str]:
    """Those of ``approvers`` whose ``grant_offered`` entry for ``scope`` ``history`` lacks."""
    offers = {
        entry.get("actor")
        for entry in history
        if entry.get("type") == "grant_offered" and entry.get("scope_digest") == scope.digest()
    }
    return [actor for actor in approvers if actor not in offers]


def _made_by_quorum(scope: GrantScope, surface: str | None, grants: GrantStore) -> MakesGrant:
    """What makes the grant ``scope`` on a quorum approval as a vote approves it: the grant
    of every approver, with its ``granted`` entry, when each offered ``scope``; none when
    one did not, or the arguments approved are outside it (the caller then says so)."""

    def make(
        record: PendingInput, history: Sequence[dict[str, Any]]
    ) -> tuple[Grant, dict[str, Any]] | None:
        approvers = tuple(approved_by(record))
        if not approvers or _not_offered(approvers, history, scope):
            return None
        try:
            made = grant_for(record, scope, approvers, now=grants.clock())
        except GrantRefusedError:
            return None
        return made, check_entry(_entry(made, scope, surface))

    return make


async def _make(
    handler: HumanInputHandler,
    request: PendingInput,
    scope: GrantScope,
    granted_by: tuple[str, ...],
    surface: str | None,
) -> Grant:
    """The grant made on ``request``, recorded once (a retry finds it), with its
    ``granted`` entry in the request's history (written once too).

    On a single approval the settle wrote the entry, and on a store that records grants in
    a settle, the grant: both are found here. Elsewhere the grant is added now, and a retry
    adds it when the process that settled stopped before it did."""
    grants = handler.grants
    made = grant_for(request, scope, granted_by, now=grants.clock())
    recorded = await grants.get(made.grant_id)
    if recorded is None:
        try:
            recorded = await grants.add(made)
        except ValueError:
            recorded = await grants.get(made.grant_id)
            if recorded is None:
                raise
    if _same_grant(recorded, made) and not await _entered(handler, request, recorded):
        await handler.record(request.pending_id, _entry(recorded, scope, surface))
    return recorded


def _entry(grant: Grant, scope: GrantScope, surface: str | None) -> Granted:
    """The ``granted`` entry of ``grant``, made within ``scope`` through ``surface``."""
    return Granted(
        actor=grant.granted_by[-1],
        surface=surface,
        grant=grant.grant_id,
        granted_by=list(grant.granted_by),
        quorum=grant.quorum,
        scope=scope.to_json(),
    )


def _same_grant(one: Grant, other: Grant) -> bool:
    """Whether ``one`` and ``other`` grant the same, whenever each was made."""
    return (one.tool, one.max_uses, one.body()) == (other.tool, other.max_uses, other.body())


async def _entered(handler: HumanInputHandler, request: PendingInput, grant: Grant) -> bool:
    """Whether ``request``'s history holds the ``granted`` entry of ``grant``."""
    return any(
        entry.get("type") == "granted" and entry.get("grant") == grant.grant_id
        for entry in await handler.history(request.pending_id)
    )
