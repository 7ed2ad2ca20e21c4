"""The desk's standing grants: granting while approving, listing and revoking.

- ``POST /api/requests/{id}/answer`` with ``{"decision": "approve", "grant": {...}}``
  approves and grants the same again (:func:`granting`); the grant's fields are those of
  :class:`~roomkit.policy.grants.GrantScope` (``expires_in`` in seconds, ``max_uses``,
  ``schema``, ``for_actor``, ``for_room``). A grant the approval cannot make is a 422 and,
  on a single approval, nothing is decided.
- ``GET /api/grants`` lists the grants (``?tool=`` one tool's, ``?live=true`` only those
  still in force): an administrator sees every grant, anyone else the grants they made.
- ``POST /api/grants/{grant_id}/revoke`` revokes one, for every process on the store: an
  administrator or one of those who granted it may; anyone else gets 404, as for a grant
  that does not exist. A grant revoked already gets 409. A grant whose stored row a hand
  edit left unreadable is revoked all the same, as ``roomkit grants revoke`` does, by an
  administrator only (who granted it cannot be read): the answer is an
  :class:`UnreadableGrant`.

An answer link, good for its one question only, neither lists nor revokes grants (403).
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations at
# runtime, and they name objects local to grants_router (the desk's gate).

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from roomkit.core.exceptions import CorruptRecordError, InvalidAnswerError
from roomkit.desk.auth import Principal
from roomkit.desk.gate import signed_in
from roomkit.desk.shapes import error_responses, shown_texts
from roomkit.models.pending_input import PendingInput
from roomkit.policy.grants import Grant, GrantRefusedError, GrantScope, approve_and_grant
from roomkit.tools.human_input import HumanInputHandler

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["GrantList", "GrantView", "UnreadableGrant", "granting", "grants_router"]

logger = logging.getLogger("roomkit.desk")

NOT_FOUND = "Grant not found"

_ERRORS: dict[int, str] = {
    401: "Missing, invalid or expired token",
    403: "An answer link, which is good for its one question only: sign in to the desk",
    404: "No such grant, or not one the caller granted (administrators see every one)",
    409: "The grant is revoked already",
    422: "A parameter the desk does not take (the detail names it)",
    429: "Rate limited (see Retry-After)",
}


_errors = partial(error_responses, _ERRORS)


class GrantView(BaseModel):
    """A standing grant as the desk shows it."""

    model_config = ConfigDict(populate_by_name=True)

    grant_id: str
    tool: str
    state: str
    """``live``, ``revoked``, ``expired`` or ``used up``, on the store's clock now."""
    granted_by: list[str]
    quorum: int
    digest: str | None = None
    """Covers only the arguments with this digest."""
    arguments_schema: dict[str, Any] | None = Field(default=None, serialization_alias="schema")
    """Covers only the arguments matching this JSON Schema (and the tool's)."""
    actor_id: str | None = None
    room_id: str | None = None
    expires_at: float
    max_uses: int | None = None
    uses: int
    created_at: float
    revoked_at: float | None = None
    revoked_by: str | None = None
    source: str | None = None
    """The approval request it was made on."""


class UnreadableGrant(BaseModel):
    """A grant revoked although its stored row cannot be read (a hand edit broke it)."""

    grant_id: str
    state: Literal["revoked"] = "revoked"
    revoked_by: str | None = None
    detail: str
    """Why the rest of it is not shown: what the store could not read."""


class GrantList(BaseModel):
    """Grants, newest first."""

    grants: list[GrantView]


def view_of_grant(grant: Grant, now: float) -> GrantView:
    """``grant`` as the desk shows it at ``now``."""
    # Every field but the state (the grant's own at ``now``) is the grant's, as it holds it
    # (with U+FFFD for a lone surrogate an earlier version stored); what the view does not
    # show (``extra``) is left out.
    fields = dataclasses.asdict(grant)
    del fields["extra"]
    shown = shown_texts(fields, f"grant {grant.grant_id}")
    shown["arguments_schema"] = shown.pop("schema")
    return GrantView.model_validate({**shown, "state": grant.state(now)})


def granting(
    handler: HumanInputHandler,
    request: PendingInput,
    grant: dict[str, Any],
    by: str,
    surface: str,
    digest: str | None,
) -> Callable[[], Awaitable[bool]]:
    """The settle of an approve decision that grants ``grant`` too: ``True`` when the
    approval (the vote) was recorded.

    A grant the approval cannot make is an :class:`InvalidAnswerError` (the desk's 422).
    """

    async def settle() -> bool:
        if request.kind != "approval":
            raise InvalidAnswerError("only an approval of a tool call can be granted again")
        try:
            scope = GrantScope.from_json(grant)
            accepted, made = await approve_and_grant(
                handler, request.pending_id, scope, by=by, surface=surface, digest=digest
            )
        except GrantRefusedError as refused:
            raise InvalidAnswerError(f"grant: {refused}") from None
        if made is not None:
            event = {"event": "grant", "grant": made.grant_id, "actor": by}
            logger.info("Granted %s on %s", made.grant_id, request.pending_id, extra=event)
        return accepted

    return settle


def _mine(grant: Grant, caller: Principal) -> bool:
    return caller.admin or caller.actor_id in grant.granted_by


def grants_router(desk: "Desk", route_class: type[Any]) -> APIRouter:
    """The grants' routes of ``desk`` (the desk adds them under ``/api``)."""
    router = APIRouter(tags=["desk"], route_class=route_class)
    Caller = Annotated[Principal, Depends(desk.gate)]
    GrantId = Annotated[str, Path(min_length=1, max_length=128)]
    grants = desk.handler.grants

    @router.get("/grants", response_model=GrantList, responses=_errors(401, 403, 422, 429))
    async def list_grants(
        caller: Caller,
        tool: Annotated[str | None, Query(max_length=256)] = None,
        live: bool = False,
    ) -> GrantList:
        """The standing grants the caller may see, newest first: every one for an
        administrator, else the caller's own; an answer link sees none (403)."""
        signed_in(caller, "list standing grants")
        now = grants.clock()
        found = await grants.list(tool=tool, live=live)
        return GrantList(grants=[view_of_grant(g, now) for g in found if _mine(g, caller)])

    @router.post(
        "/grants/{grant_id}/revoke",
        response_model=GrantView | UnreadableGrant,
        responses=_errors(401, 403, 404, 409, 422, 429),
    )
    async def revoke_grant(caller: Caller, grant_id: GrantId) -> GrantView | UnreadableGrant:
        """Revoke a grant, for every process on the store: it covers no call from now on.
        An answer link revokes none (403)."""
        signed_in(caller, "revoke standing grants")
        unreadable: CorruptRecordError | None = None
        try:
            grant = await grants.get(grant_id)
        except CorruptRecordError as error:
            # Who granted it cannot be read: only an administrator may revoke it.
            grant, unreadable = None, error
        except ValueError:  # not a grant id at all (a control character): no such grant
            grant = None
        if not (caller.admin and unreadable is not None) and (
            grant is None or not _mine(grant, caller)
        ):
            raise HTTPException(status_code=404, detail=NOT_FOUND)
        if not await grants.revoke(grant_id, by=caller.actor_id):
            raise HTTPException(status_code=409, detail=f"Grant {grant_id} is revoked already")
        event = {"event": "revoke_grant", "grant": grant_id, "actor": caller.actor_id}
        logger.info("Revoked grant %s", grant_id, extra=event)
        if grant is None:
            detail = f"revoked, but {unreadable}"
            return UnreadableGrant(grant_id=grant_id, revoked_by=caller.actor_id, detail=detail)
        revoked = await grants.get(grant_id) or grant
        return view_of_grant(revoked, grants.clock())

    return router
