"""The desk's HTTP endpoints and its WebSocket route, under ``/api``.

Every error is ``{"detail": str}``: 401 without a valid token, 404 for a request that is
unknown, another room's or someone else's (one answer for all three, so ids leak nothing),
409 once a request is settled (saying how), or for a decision on an approval whose
arguments an edit changed after the person was shown them (the body's ``digest``; the
detail quotes the arguments as they are now, and nothing was decided), 413 over the body
cap (a decision on an approval has a cap of its own, room for an edit of every argument:
:attr:`~roomkit.desk.limits.DeskLimits.max_answer_body`), 400 for a body that is not JSON
the desk takes (nested too deep, a number too long, a key given twice: see
:mod:`roomkit.bodies`), 415 for a body not sent as ``Content-Type: application/json``
(:mod:`roomkit.desk.media`), 422 for an answer that does not fit (the request stays open),
429 past the rate limit, and 405 for a method a route does not take.

An open request returned to a person (not an administrator) by ``GET /api/requests`` or
``GET /api/requests/{id}`` is recorded in its history as ``shown`` on the ``desk`` surface,
once (see :meth:`~roomkit.desk.hub.DeskHub.record_shown`); ``/api/history``, a request's
``/history`` and the answers' responses show nothing new and record nothing.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations at
# runtime, and they name objects local to build_router (the desk's gate).

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from fastapi import APIRouter, Depends, HTTPException, Path, Query, WebSocket
from starlette.requests import Request

from roomkit.core.exceptions import (
    ArgumentsChangedError,
    InvalidAnswerError,
    StoreError,
    StoreUnavailableError,
)
from roomkit.desk import notifications
from roomkit.desk.answers import answer_text, settled_detail, voted, voted_for
from roomkit.desk.auth import Principal
from roomkit.desk.gate import signed_in
from roomkit.desk.grants import granting, grants_router
from roomkit.desk.hub import DeskHub
from roomkit.desk.metrics import surface_of
from roomkit.desk.route_class import desk_route_class
from roomkit.desk.routed_views import routed_view, routed_views
from roomkit.desk.shapes import (
    AnswerBody,
    HistoryList,
    HistoryView,
    MeView,
    RejectBody,
    RequestList,
    RequestView,
    SessionView,
    error_responses,
    shown_texts,
    view_of,
)
from roomkit.desk.ws import serve_socket
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import SETTLED_LIMIT

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["DeskRouter", "build_router"]

logger = logging.getLogger("roomkit.desk")

NOT_FOUND = "Request not found"
UNKNOWN = (
    "The request store did not answer, so whether this decision was recorded is unknown: "
    "send it again once the store is back (the same answer gets 200 if it was recorded; "
    "a 409 shows how the request was settled)"
)
"""Why an answer or a refusal got 503 when the store stopped answering as it settled."""
LINK_KEPT = (
    "The request store {}, and this answer link could not be given back, so it works no "
    "more: open it again to see how the request stands once the store is back, and sign in to "
    "the desk to answer it there if it is still open"
)
"""Why an answer through a link got 503 when the store went before the link was given back;
the blank says what the store did (``did not answer``, ``is unavailable``)."""
SURFACE = "desk"
"""The surface of the requests the HTTP API shows, in their history's ``shown`` entries."""
HISTORY_LIMIT = 50
"""The most settled requests ``GET /api/history`` returns."""
_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_VOTE_IN = "Your vote on this approval is in already: each approver votes once"
_ROUTED_ON = "This question is with someone else now: you may read it, not answer it"
_OVER_ANSWER_CAP = (
    "The body is over the {}-byte limit of an answer to a question: send less (only a "
    "decision on an approval, which may carry every argument back, may be longer)"
)


_ERRORS = {
    400: "The body is not JSON the desk takes (the detail says why)",
    401: "Missing, invalid or expired token",
    403: "Not one of the approval's approvers",
    404: "Unknown, another room's, or not yours",
    409: "Already settled (the detail says how), or the arguments changed since shown",
    413: "Body over the size cap",
    415: "The body was not sent as JSON (Content-Type: application/json)",
    422: "The body or the answer does not fit (the detail names the problem)",
    429: "Rate limited (see Retry-After)",
}
_errors = partial(error_responses, _ERRORS)


class _Decide(Protocol):
    """The handler's ``aresolve`` or ``areject``, as a desk route settles a request with it."""

    def __call__(
        self, pending_id: str, text: str, /, *, by: str, surface: str, digest: str | None
    ) -> Awaitable[bool]: ...


class DeskRouter(APIRouter):
    """The desk's router; :attr:`desk` and :attr:`hub` are what a chat router builds on."""

    def __init__(self, desk: "Desk", **options: Any) -> None:
        super().__init__(**options)
        self.desk = desk

    @property
    def hub(self) -> DeskHub:
        """The desk's :class:`~roomkit.desk.hub.DeskHub`."""
        return self.desk.hub


def build_router(desk: "Desk") -> DeskRouter:
    """The ``/api`` router of ``desk``."""
    metrics = desk.metrics
    limits = desk.limits
    route_class = desk_route_class(limits, on_store_error=metrics.store_error)
    answer_limits = replace(limits, max_body=limits.max_answer_body)
    answer_route_class = desk_route_class(answer_limits, on_store_error=metrics.store_error)
    max_body = limits.max_body
    router = DeskRouter(
        desk,
        prefix="/api",
        tags=["desk"],
        route_class=route_class,
        # The app that includes the router runs the desk's notifier (FastAPI merges this).
        lifespan=partial(notifications.running, desk.notifier),
    )
    router.include_router(grants_router(desk, route_class))
    handler = desk.handler
    Caller = Annotated[Principal, Depends(desk.gate)]
    RequestId = Annotated[str, Path(min_length=1, max_length=256)]

    async def visible(caller: Principal, request_id: str) -> PendingInput:
        found = await handler.get_request(request_id)
        if found is None or not await desk.access.can_see(caller, found):
            raise HTTPException(status_code=404, detail=NOT_FOUND)
        # Past its deadline, a request shows (and answers) as timed out, waited on or not.
        current = await handler.expire_overdue([found])
        if not current:
            raise HTTPException(status_code=404, detail=NOT_FOUND)
        return current[0]

    async def check_decider(caller: Principal, request: PendingInput) -> None:
        if not await desk.access.may_decide(caller, request):
            if voted(caller.actor_id, request):
                raise HTTPException(status_code=403, detail=_VOTE_IN)
            delegate = voted_for(caller.actor_id, request)
            if delegate is not None:
                detail = f"Your vote on this approval was cast by {delegate}, who stands in for you"
                raise HTTPException(status_code=403, detail=f"{detail}: each approver votes once")
            if request.kind != "approval":
                raise HTTPException(status_code=403, detail=_ROUTED_ON)
            raise HTTPException(
                status_code=403, detail="Only the approval's approvers may decide it"
            )

    async def settle(
        caller: Principal,
        request: PendingInput,
        outcome: Callable[[], Awaitable[bool]],
        *,
        rejected: bool = False,
        again: bool = False,
    ) -> dict[str, Any]:
        """Spend the caller's link, settle the request with ``outcome()``, and report it.

        The link is refunded when nothing was settled because the answer did not fit (422),
        the arguments changed after they were shown (409), or the store could not be reached
        (503, saying that whether it was recorded is unknown when the store stopped
        answering, and where to answer when the link could not be refunded); a request
        settled first by someone else gets 409. Returns the request
        as it stands once settled.
        """
        request_id = request.pending_id
        await desk.spend_link(caller)
        try:
            won = await outcome()
        except InvalidAnswerError as invalid:
            await desk.ledger.refund(caller)
            raise HTTPException(status_code=422, detail=str(invalid)) from None
        except ArgumentsChangedError as changed:
            await desk.ledger.refund(caller)
            raise HTTPException(status_code=409, detail=str(changed)) from None
        except StoreError as error:
            given_back = await desk.ledger.refund(caller)
            metrics.store_error()
            logger.warning(
                "The desk could not reach the request store: %s",
                error,
                extra={"event": "store_error"},
            )
            unknown = isinstance(error, StoreUnavailableError)
            detail = UNKNOWN if unknown else "The request store is unavailable"
            if not given_back:
                # Sent again through the link, it would be refused as used.
                detail = LINK_KEPT.format("did not answer" if unknown else "is unavailable")
            raise HTTPException(status_code=503, detail=detail) from None
        if not won:
            latest = await handler.get_request(request_id)
            if latest is not None and latest.status is _PENDING and voted(caller.actor_id, latest):
                # The same vote sent twice at once, or a delegate voting again for another
                # approver they stand for: it is in, and the request is still open.
                await desk.ledger.refund(caller)
                raise HTTPException(status_code=403, detail=_VOTE_IN)
            raise HTTPException(status_code=409, detail=settled_detail(latest))
        if again:
            # The caller's own answer sent again: counted and logged when it was recorded.
            return view_of(await handler.get_request(request_id) or request)
        metrics.settled(request, caller, rejected=rejected)
        event = {
            "event": "reject" if rejected else "answer",
            "pending_id": request_id,
            "actor": caller.actor_id,
            "surface": surface_of(caller),
            "room_id": request.room_id,
        }
        logger.info("%s %s", "Rejected" if rejected else "Answered", request_id, extra=event)
        # A store with no retention forgets at once: the object read before stands in.
        return view_of(await handler.get_request(request_id) or request)

    def decision(
        caller: Principal, decide: _Decide, request_id: str, text: str, shown: str | None
    ) -> Callable[[], Awaitable[bool]]:
        """The outcome :func:`settle` takes: ``decide`` on ``request_id`` with ``text``, by
        ``caller`` through its surface, on the arguments whose digest was ``shown``."""
        surface = surface_of(caller)
        return lambda: decide(request_id, text, by=caller.actor_id, surface=surface, digest=shown)

    @router.post("/sign-in", response_model=SessionView, responses=_errors(400, 401, 404, 413, 429))
    async def sign_in(
        caller: Annotated[Principal, Depends(desk.gate.sign_in_link)],
    ) -> SessionView:
        """Trade a sign-in link (``roomkit desk`` prints one) for a token, once.

        The link works once, through any desk process on the store, until it expires; the
        token lasts 12 hours. A desk with an authenticator of its own signs none (404).
        """
        token, expires_at = await desk.sign_in(caller)
        event = {"event": "sign_in", "actor": caller.actor_id, "admin": caller.admin}
        logger.info("Signed in %s", caller.actor_id, extra=event)
        return SessionView(
            token=token, actor_id=caller.actor_id, admin=caller.admin, expires_at=expires_at
        )

    @router.get("/link", response_model=RequestView, responses=_errors(401, 404, 429))
    async def link(
        caller: Annotated[Principal, Depends(desk.gate.answer_link)],
    ) -> dict[str, Any]:
        """An answer link's one request as it stands: open, or how it ended (and who ended
        it), read with the link even once spent; any other credential gets 401, and a
        request the store no longer holds, 404."""
        if caller.request_id is None:
            # The gate admits answer links only, which all name their request.
            raise HTTPException(status_code=404, detail=NOT_FOUND)
        return view_of(await visible(caller, caller.request_id))

    @router.get("/me", response_model=MeView, responses=_errors(401, 429))
    async def me(caller: Caller) -> MeView:
        """Who the token speaks for."""
        return MeView(actor_id=caller.actor_id, admin=caller.admin)

    @router.get("/requests", response_model=RequestList, responses=_errors(401, 422, 429))
    async def list_requests(
        caller: Caller, room_id: Annotated[str | None, Query(max_length=256)] = None
    ) -> dict[str, Any]:
        """The caller's open questions, oldest first (optionally one room's)."""
        listed = await handler.expire_overdue(await handler.list_pending(room_id=room_id))
        pending = [request for request in listed if request.status is _PENDING]
        shown = await desk.access.visible(caller, pending)
        await desk.hub.record_shown(caller, [r.pending_id for r in shown], SURFACE)
        return {"requests": await routed_views(handler, shown)}

    @router.get("/history", response_model=HistoryList, responses=_errors(401, 422, 429))
    async def history(
        caller: Caller, limit: Annotated[int, Query(ge=1, le=HISTORY_LIMIT)] = HISTORY_LIMIT
    ) -> dict[str, Any]:
        """The caller's recently settled requests, newest first, within the store's retention.

        The requests naming the caller, and those of the caller's rooms that name no one
        (an administrator's: everyone's; an answer link's: its own, once settled).
        """
        if caller.request_id is not None:
            own = await handler.get_request(caller.request_id)
            found = [] if own is None or own.status is _PENDING else [own]
        elif caller.admin:
            found = await handler.list_settled(limit=limit)
        else:
            # Those naming no one are each shown only to their room: read as many as the
            # store gives, so that other rooms' do not crowd the caller's own out.
            found = await handler.list_settled(
                actor_ids=(caller.actor_id, None), limit=SETTLED_LIMIT
            )
        shown = await desk.access.visible(caller, found)
        return {"requests": [view_of(r) for r in shown[:limit]]}

    @router.get(
        "/requests/{request_id}", response_model=RequestView, responses=_errors(401, 404, 422, 429)
    )
    async def get_request(caller: Caller, request_id: RequestId) -> dict[str, Any]:
        """One request, open or recently settled."""
        request = await visible(caller, request_id)
        if request.status is _PENDING:
            await desk.hub.record_shown(caller, [request.pending_id], SURFACE)
        return await routed_view(handler, request)

    async def answer(
        caller: Caller, request_id: RequestId, body: AnswerBody, sent: Request
    ) -> dict[str, Any]:
        """Answer a request; the body depends on its kind. Returns it settled.

        A decision on an approval may be as long as an edit of every argument needs
        (``DeskLimits.max_answer_body``); any other answer is held to ``max_body`` (413).
        The caller's own answer sent again (a retry after a 503 whose first try was
        recorded) gets 200 with the request as it stands; any other answer to a settled
        request gets 409.
        """
        request = await visible(caller, request_id)
        if request.kind != "approval" and len(await sent.body()) > max_body:
            raise HTTPException(status_code=413, detail=_OVER_ANSWER_CAP.format(max_body))
        await check_decider(caller, request)
        # The caller's own answer may be the one recorded: aresolve tells.
        own = request.status is _RESOLVED and request.settled_by == caller.actor_id
        if request.status is not _PENDING and not own:
            raise HTTPException(status_code=409, detail=settled_detail(request))
        try:
            text = answer_text(request, body)
        except InvalidAnswerError as invalid:
            raise HTTPException(status_code=422, detail=str(invalid)) from None
        shown = body.digest
        if body.grant is not None:
            # A standing grant speaks for its person beyond this one question.
            signed_in(caller, "grant a call again")
            surface = surface_of(caller)
            granted = granting(handler, request, body.grant, caller.actor_id, surface, shown)
            return await settle(caller, request, granted)
        outcome = decision(caller, handler.aresolve, request_id, text, shown)
        return await settle(caller, request, outcome, again=own)

    # Its own route class: the body cap of a decision that carries every argument back.
    router.add_api_route(
        "/requests/{request_id}/answer",
        answer,
        methods=["POST"],
        response_model=RequestView,
        responses=_errors(400, 401, 403, 404, 409, 413, 415, 422, 429),
        route_class_override=answer_route_class,
    )

    @router.post(
        "/requests/{request_id}/reject",
        response_model=RequestView,
        responses=_errors(400, 401, 403, 404, 409, 413, 415, 422, 429),
    )
    async def reject(
        caller: Caller, request_id: RequestId, body: RejectBody | None = None
    ) -> dict[str, Any]:
        """Refuse a request; the model reads the reason. Returns it settled."""
        request = await visible(caller, request_id)
        await check_decider(caller, request)
        if request.status is not _PENDING:
            raise HTTPException(status_code=409, detail=settled_detail(request))
        reason = body.reason if body else ""
        shown = body.digest if body else None
        if shown is not None and request.kind != "approval":
            raise HTTPException(
                status_code=422, detail="digest: only a decision on an approval takes one"
            )
        outcome = decision(caller, handler.areject, request_id, reason, shown)
        return await settle(caller, request, outcome, rejected=True)

    @router.get(
        "/requests/{request_id}/history",
        response_model=HistoryView,
        responses=_errors(401, 404, 422, 429),
    )
    async def request_history(caller: Caller, request_id: RequestId) -> dict[str, Any]:
        """The request's history, oldest first: who decided what, when, through which
        surface, and the digest of the arguments that ran."""
        request = await visible(caller, request_id)
        entries = await handler.history(request.pending_id)
        return {"entries": shown_texts(entries, f"the history of request {request.pending_id}")}

    @router.websocket("/ws")
    async def socket(websocket: WebSocket) -> None:
        await serve_socket(
            websocket,
            desk.hub,
            desk.limits,
            allowed_origins=desk.allowed_origins,
            places=desk.places,
        )

    return router
