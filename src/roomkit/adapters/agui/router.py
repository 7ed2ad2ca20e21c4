"""``agui_router``: a RoomKit agent as an AG-UI endpoint, beside the desk.

``POST {path}`` takes a ``RunAgentInput`` and answers a ``text/event-stream`` of AG-UI events
(:mod:`roomkit.adapters.agui._run` says which, in what order). The thread id is the room id:
the room is created on a thread's first run the endpoint takes (a refused one leaves none),
with the caller on its roster and the agent's channel attached; a thread already in the kit
is served only to those who may follow its room. ``GET {path}/capabilities`` answers the
agent's ``AgentCapabilities``. Every request carries a person's desk token
(``Authorization: Bearer``, from ``roomkit token ACTOR``), checked by the one credential
gate (:class:`~roomkit.auth.gate.CredentialGate`) on the desk's secret and the store's
ledger, so a revoked token is refused here as on the desk; the token's subject answers the
interrupts, and sees only what the desk would show them. A run's body is read only once its
caller is admitted: no token, a refused one or an empty rate-limit bucket is answered
without a byte of the body read.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations at run
# time, and they name the gate dependency local to agui_router.

import os
from collections.abc import AsyncIterator, Collection
from typing import Annotated, Any

from ag_ui.core import AgentCapabilities, HumanInTheLoopCapabilities, RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Body, Depends, HTTPException, Request, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import Receive, Scope, Send

from roomkit._admission import BodyGate, admit_first, route_dependencies, route_overrides
from roomkit._doors import door_channel, routed_handler
from roomkit._storable import unencodable_text
from roomkit.adapters._feed import may_open_room, room_id_problem
from roomkit.adapters.agui._run import NOT_YOURS, AGUIChannel, Thread, run_events
from roomkit.adapters.agui._turns import MAX_NEW_MESSAGES
from roomkit.auth.access import Access
from roomkit.auth.authenticator import Authenticator
from roomkit.auth.door import Turned, admit_session, session_gate
from roomkit.auth.gate import CredentialGate
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.principal import Principal
from roomkit.auth.traffic import HostRule, RateLimiter
from roomkit.bodies import BodyLimits, bounded_route
from roomkit.core.framework import RoomKit
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CAPABILITIES", "agui_router"]

CAPABILITIES = AgentCapabilities(
    human_in_the_loop=HumanInTheLoopCapabilities(
        supported=True,
        approvals=True,
        interventions=False,
        feedback=False,
        interrupts=True,
        approve_with_edits=True,
    )
)
"""What the endpoint advertises: interrupts, approvals with edits."""
_NO_OBJECT = "Not a RunAgentInput: the body must be a RunAgentInput object"
_bearer = HTTPBearer(auto_error=False, description="A desk token (`roomkit token ACTOR`).")


def _handler_of(kit: RoomKit, handler: HumanInputHandler | None) -> HumanInputHandler:
    if handler is not None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(f"handler must be a HumanInputHandler, got {shown(handler)}")
        return handler
    return routed_handler(kit, door="agui_router()", shows="whose requests the endpoint shows")


class _Gate(BodyGate):
    """The FastAPI dependency: the caller's principal, a person's token only, from a
    ``Host`` the endpoint answers to, within the person's rate. A run's body is read only
    once its caller is admitted (:func:`~roomkit._admission.admit_first`)."""

    def __init__(self, gate: CredentialGate, hosts: HostRule, limiter: RateLimiter) -> None:
        self.gate = gate
        self.hosts = hosts
        self.limiter = limiter

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> Principal:
        admitted = self.admitted(request, self)
        if admitted is not None:
            # Admitted before the body was read: the same caller, its bucket spent once.
            return admitted
        refusal = self.hosts.refusal(request.headers.get("host"), request.scope.get("server"))
        if refusal is not None:
            raise HTTPException(400, refusal)
        token = credentials.credentials if credentials else None
        principal = await admit_session(self.gate, token, self.limiter)
        if isinstance(principal, Turned):
            headers = None
            if principal.status == 401:
                headers = {"WWW-Authenticate": "Bearer"}
            elif principal.retry_after is not None:
                headers = {"Retry-After": str(principal.retry_after)}
            raise HTTPException(principal.status, principal.message, headers=headers)
        self.remember(request, self, principal)
        return principal


def _route_class(max_body: int) -> Any:
    """The endpoint's route class: the caller admitted, then the body checked
    (:func:`~roomkit.bodies.bounded_route`), before anything reads the body."""
    bounded: Any = bounded_route(BodyLimits(max_bytes=max_body))

    class AGUIRoute(bounded):  # type: ignore[misc]  # a class made at run time
        """Admits the caller before its body is read; then checks the body."""

        async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
            overrides = route_overrides(self, scope)
            dependencies = route_dependencies(self, scope)
            await admit_first(dependencies, self.methods, scope, overrides=overrides)
            await super().handle(scope, receive, send)

    return AGUIRoute


def agui_router(
    kit: RoomKit,
    *,
    agent: str,
    path: str = "/agui",
    channel_id: str = "agui",
    handler: HumanInputHandler | None = None,
    auth: Authenticator | None = None,
    secret: str | bytes | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    rate: float = 20.0,
    burst: int = 40,
    max_body: int = 256 * 1024,
    max_new_messages: int = MAX_NEW_MESSAGES,
) -> APIRouter:
    """The AG-UI endpoint of the kit's agent, for ``app.include_router``.

    Args:
        kit: the kit whose agent runs.
        agent: the id of the kit's AI channel that answers a thread; attached to a thread's
            room when the room is created.
        path: where the endpoint is served.
        channel_id: the id the front end's messages are recorded under (an
            :class:`~roomkit.adapters.agui.AGUIChannel` registered in the kit).
        handler: the handler whose requests become interrupts (the kit's only routed one
            by default), as the desk's option of that name (``roomkit.desk.DeskOptions``).
        auth: turns bearer tokens into principals, as the desk's option.
        secret: the desk's secret (else ``ROOMKIT_DESK_SECRET``, else the data folder's
            key file), as the desk's option.
        data_dir: where that key file lives, as the desk's option.
        allowed_hosts: as the desk's option: ``Host`` names answered besides addresses,
            ``localhost`` and the server's own (others get 400).
        rate: the requests a person may make per second, on average (then 429).
        burst: the requests a person may make at once, before ``rate`` applies.
        max_body: bytes a request body may hold (413 past it); JSON too deep, with a key
            twice or a number out of range gets 400, before anything parses it.
        max_new_messages: the unanswered user messages (after the last assistant, tool,
            reasoning or activity message of the run's ``messages``) the thread does not
            hold yet that one run may start, each a turn of the agent; a run sending more
            ends with ``RUN_ERROR`` (code ``too_many_messages``), settling and starting
            nothing. The answered ones start no turn and do not count.

    Raises:
        TypeError, ValueError: ``channel_id`` is another kind of channel of the kit;
            ``agent`` is no channel of the kit; no handler, or several, to choose from;
            the secret is too short; ``max_new_messages`` is no positive int; ``rate``
            is no positive number, or ``burst`` no positive int.
    """
    if (
        isinstance(max_new_messages, bool)
        or not isinstance(max_new_messages, int)
        or max_new_messages < 1
    ):
        raise ValueError(
            f"max_new_messages must be a positive int (the user messages one run may "
            f"start), got {shown(max_new_messages)}"
        )
    if kit.get_channel(agent) is None:
        raise ValueError(
            f"No channel {shown(agent)} in the kit: register the agent's AIChannel first"
        )
    handler = _handler_of(kit, handler)
    access = Access.of(kit, handler)
    channel = door_channel(kit, channel_id, AGUIChannel, door="the AG-UI endpoint")
    thread = Thread(kit, handler, access, channel, agent, max_new_messages=max_new_messages)
    router = APIRouter(tags=["agui"], route_class=_route_class(max_body))
    credentials = session_gate(LinkLedger(handler.ledger), auth, secret, data_dir)
    gate = _Gate(credentials, HostRule(allowed_hosts), RateLimiter(rate, burst))
    Caller = Annotated[Principal, Depends(gate)]

    @router.post(
        path,
        response_class=StreamingResponse,
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "AG-UI events"},
            401: {"description": "Missing, invalid or expired token"},
            404: {"description": "The thread is a room the caller may not follow"},
            422: {
                "description": "The body is no RunAgentInput, its threadId no room id, or it "
                "holds text UTF-8 cannot encode"
            },
        },
    )
    async def run(
        body: Annotated[Any, Body(description="A RunAgentInput object")], principal: Caller
    ) -> StreamingResponse:
        """Run the agent on the thread; the answer is the run's AG-UI event stream."""
        # Taken as any JSON and refused here: FastAPI's own refusal of a body that is no
        # object quotes the body back, and fails on text UTF-8 cannot encode.
        if not isinstance(body, dict):
            raise HTTPException(status_code=422, detail=_NO_OBJECT)
        try:
            run_input = RunAgentInput.model_validate(body)
        except ValueError as error:
            raise HTTPException(status_code=422, detail=f"Not a RunAgentInput: {error}") from None
        problem = room_id_problem(run_input.thread_id, what="threadId")
        if problem is not None:
            raise HTTPException(status_code=422, detail=problem)
        # The resume's payloads are each refused with their interrupt (RUN_ERROR); the rest
        # is stored (a message in the room) or quoted in the stream (an interrupt id): text
        # no store takes and no stream encodes is refused here, whole.
        checked = dict(body)
        if body.get("resume"):
            checked["resume"] = [
                {k: v for k, v in entry.items() if k != "payload"} for entry in body["resume"]
            ]
        unstorable = unencodable_text(checked)
        if unstorable is not None:
            raise HTTPException(
                status_code=422,
                detail=f"The body holds {unstorable}, which UTF-8 cannot encode: send UTF-8 text",
            )
        # Checked, not opened: the run makes the room once it takes the run (a run it
        # refuses leaves none).
        if not await may_open_room(kit, access, principal, run_input.thread_id, handler):
            raise HTTPException(status_code=404, detail=NOT_YOURS)
        encoder = EventEncoder()

        async def stream() -> AsyncIterator[str]:
            async for event in run_events(thread, principal, run_input):
                yield encoder.encode(event)

        return StreamingResponse(stream(), media_type=encoder.get_content_type())

    @router.get(f"{path}/capabilities")
    async def capabilities(principal: Caller) -> dict[str, Any]:
        """The agent's AG-UI capabilities: human in the loop, with interrupts."""
        return CAPABILITIES.model_dump(mode="json", by_alias=True, exclude_none=True)

    return router
