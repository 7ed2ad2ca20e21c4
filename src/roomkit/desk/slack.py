"""Slack's clicks on the desk: ``POST /api/slack/interactions``.

Slack posts a click on a button of a roomkit message (see :mod:`roomkit.notify.slack_blocks`)
here. The desk checks Slack's signature and timestamp with the app's signing secret
(``slack_sdk.signature``), spends the signature in the store's ledger so that a payload is
taken once through every desk process on the store, maps the Slack user to an actor through
the directory, and settles the request as that actor under the desk's own rule of who may
answer (:class:`~roomkit.desk.auth.Access`, as for an actor token). Whoever may not answer
is told so in an ephemeral message, and nothing changes. A click on an approval decides on
the arguments its message showed (the digest its button names) or on none: after an edit,
the clicker is shown the new arguments instead. A request too long for its message
(:func:`~roomkit.notify.slack_blocks.too_long`) takes no click but a Reject, and an option
too long for its button (:func:`~roomkit.notify.slack_blocks.fits_button`) no click.

Every outcome is counted in ``roomkit_slack_interactions_total{outcome}``; a refusal is a
4xx with ``{"detail": str}``, never a 500: a body over 256 KiB gets 413, and a ``payload``
that is not JSON the desk takes (nested deeper than 64 levels, a number too long, a key
given twice: see :mod:`roomkit.bodies`) or that holds a lone surrogate, 400; a payload from
another workspace than the surface's ``team``, 403. A modal's submission (the desk opens
none) is answered by replacing the modal with one saying nothing was saved (see
:mod:`roomkit.desk._slack_payload`). Needs the ``slack`` extra.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import aiohttp
from fastapi import APIRouter
from fastapi.routing import APIRoute
from slack_sdk.errors import SlackClientError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.webhook.async_client import AsyncWebhookClient
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from roomkit._storable import unencodable_text
from roomkit.auth.gate import Refused
from roomkit.bodies import BodyLimits, BodyRefusedError, check_declared_size, load_json, read_capped
from roomkit.core.exceptions import ArgumentsChangedError, InvalidAnswerError, StoreError
from roomkit.desk._slack_payload import foreign_team, modal_refused
from roomkit.desk.answers import answer_text, quorum_progress, settled_detail, voted, voted_for
from roomkit.desk.auth import Principal
from roomkit.desk.headers import guard
from roomkit.desk.shapes import AnswerBody
from roomkit.models.kinds import option_labels
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify.slack_blocks import (
    Action,
    escape,
    fits_button,
    parse_action,
    settled_blocks,
    too_long,
)
from roomkit.notify.surface import Directory, Notice
from roomkit.notify.wording import asked_text, clip, outcome_line, request_kind
from roomkit.stores import approved_by

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["MAX_SLACK_BODY", "SlackInteractions", "signing_secret_of", "slack_router"]

logger = logging.getLogger("roomkit.desk")

MAX_SLACK_BODY = 256 * 1024
"""Bytes in an interaction's body (Slack sends the whole message back with a click)."""
SLACK_LIMITS = BodyLimits(max_bytes=MAX_SLACK_BODY)
"""What the ``payload`` field may hold: 64 levels of nesting, numbers of 100 characters."""
REPLAY_WINDOW = 600.0
"""Seconds a spent signature is kept: longer than the 5 minutes Slack's timestamp is good for."""
NOT_YOURS = "This question is not yours to answer, so nothing was changed."
NOT_AN_APPROVER = "Only this approval's approvers may decide it, so nothing was changed."
ROUTED_ON = "This question is with someone else now, so nothing was changed."
UNKNOWN_USER = (
    "Your Slack account is not linked to anyone on this desk, so nothing was changed: ask the "
    "desk's administrator to add your Slack member id ({user}) to the directory."
)
RATE_LIMITED = "Too many answers at once, so nothing was changed: try again in {wait} s."
UNFIT = "This button does not fit the question any more: answer it in the desk."
VOTED = "Your vote is in: {progress}."
VOTE_IN = "Your vote is in already: each approver votes once ({progress})."
VOTE_CAST = (
    "Your vote on this approval was cast by {delegate}, who stands in for you: each approver "
    "votes once ({progress})."
)
STALE = (
    "The arguments changed after this message was sent, so nothing was decided. They are "
    "now:\n{now}\nDecide on these in the desk, or on a newer message."
)
TOO_LONG = (
    "This request is too long for its Slack message, so nothing was changed: read it whole "
    "and decide in the desk."
)
UNNAMED = (
    "This button does not say which arguments it decides on (its message is older than this "
    "desk), so nothing was changed: decide in the desk."
)
_STALE_ARGUMENTS_MAX = 2000


def _counted(principal: Principal, request: PendingInput) -> str | None:
    """What a voter clicking again on an open quorum approval reads: their vote (or the one
    their delegate cast for them) is in already; ``None`` when they have none in."""
    if request.quorum is None or request.status is not PendingInputStatus.PENDING:
        return None
    progress = quorum_progress(len(approved_by(request)), request.quorum, request.approvers)
    if voted(principal.actor_id, request):
        return VOTE_IN.format(progress=progress)
    delegate = voted_for(principal.actor_id, request)
    if delegate is not None:
        return VOTE_CAST.format(delegate=delegate, progress=progress)
    return None


def signing_secret_of(slack: object) -> str:
    """The signing secret the desk's ``slack=`` option gives: a ``Slack`` surface's, or the
    text (without surrounding whitespace).

    Raises:
        TypeError: neither a surface with a ``signing_secret`` nor a non-empty string.
    """
    secret = getattr(slack, "signing_secret", slack)
    if not isinstance(secret, str) or not secret.strip():
        raise TypeError(
            "slack= takes the Slack surface (roomkit.notify.Slack) or the Slack app's signing "
            f"secret, not {slack!r}"
        )
    # Read from a file, it ends in a newline, with which no signature would match.
    return secret.strip()


class _Refused(Exception):
    """An interaction the desk does not take: its status, detail and counted outcome."""

    def __init__(self, status: int, detail: str, outcome: str) -> None:
        super().__init__(detail)
        self.status = status
        self.outcome = outcome


class SlackInteractions:
    """What the desk needs to take Slack's clicks.

    Args:
        desk: the desk whose handler, access rules, ledger and metrics the clicks go through.
        signing_secret: the Slack app's signing secret.
        directory: maps the clicking Slack user to an actor (``Person.slack_user``).
        team: the Slack workspace (or Enterprise Grid organisation) whose payloads are
            taken; ``None`` takes every workspace's the app is installed in.
    """

    def __init__(
        self,
        desk: Desk,
        signing_secret: str,
        directory: Directory | None,
        *,
        team: str | None = None,
    ) -> None:
        if not isinstance(directory, Directory):
            raise TypeError(
                "slack= needs directory=Directory({...}) naming each person's slack_user, "
                f"to know who clicked; got {directory!r}"
            )
        self.desk = desk
        self.verifier = SignatureVerifier(signing_secret)
        self.directory = directory
        self.team = team

    async def take(self, request: Request) -> Response:
        """Answer one interaction; refusals as ``{"detail": str}``, counted by outcome."""
        metrics = self.desk.metrics
        try:
            body = await self._signed_body(request)
            payload = _payload(body)
            other = foreign_team(payload, self.team)
            if other is not None:
                raise _Refused(403, other, "other_team")
            reply, outcome = await self._act(payload)
        except _Refused as refused:
            metrics.slack_interaction(refused.outcome)
            logger.warning(
                "Refused a Slack interaction: %s", refused, extra={"event": "slack_refused"}
            )
            # A body that never came whole leaves a connection that carries nothing more.
            close = {"Connection": "close"} if refused.status == 408 else None
            return JSONResponse({"detail": str(refused)}, status_code=refused.status, headers=close)
        metrics.slack_interaction(outcome)
        if reply is None:
            return Response(status_code=200)
        # A modal's answer is the response itself; every other goes to the response_url too.
        url = None if "response_action" in reply else payload.get("response_url")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            return JSONResponse(reply)
        # Slack wants its answer within 3 seconds: the response_url is told after it.
        return JSONResponse(reply, background=BackgroundTask(_respond, url, reply))

    async def _signed_body(self, request: Request) -> bytes:
        """The body, once its signature, its timestamp and its novelty are checked."""
        body = await _read(request, self.desk.limits.body_timeout)
        timestamp = request.headers.get("x-slack-request-timestamp")
        signature = request.headers.get("x-slack-signature")
        try:
            valid = self.verifier.is_valid(body, timestamp, signature)
        except ValueError:  # a timestamp that is not a number
            valid = False
        if not valid or timestamp is None or signature is None:
            raise _Refused(
                401,
                "Slack's signature or timestamp does not check out: the request is forged, "
                "older than 5 minutes, or signed with another app's signing secret",
                "forged",
            )
        entry = f"desk:slack:{signature}"
        try:
            fresh = await self.desk.handler.ledger.spend_once(
                entry, until=float(timestamp) + REPLAY_WINDOW
            )
        except StoreError as error:
            raise self._unavailable(error) from None
        if not fresh:
            raise _Refused(409, "This Slack interaction was already taken", "replayed")
        return body

    async def _act(self, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """Settle what the click asks; the message to show the clicker, and the outcome."""
        kind = payload.get("type")
        if kind == "view_submission":
            logger.warning(
                "A Slack modal was submitted to the desk, which opens none: nothing was saved "
                "(another feature of the app sends its interactions to the desk's Request URL)",
                extra={"event": "slack_refused"},
            )
            return modal_refused(), "modal"
        if kind != "block_actions":
            return None, "ignored"
        actions = payload.get("actions")
        first = actions[0] if isinstance(actions, list) and actions else None
        if not isinstance(first, dict) or not isinstance(first.get("action_id"), str):
            raise _Refused(400, "A block_actions payload names no action", "invalid")
        action = parse_action(first["action_id"])
        if action is None or action.verb == "open":
            return None, "ignored"
        user = payload.get("user")
        user_id = user.get("id") if isinstance(user, dict) else None
        pending_id = first.get("value")
        if not isinstance(user_id, str) or not isinstance(pending_id, str) or not pending_id:
            raise _Refused(400, "A block_actions payload names no user or no request", "invalid")
        actor = self.directory.actor_for_slack_user(user_id)
        if actor is None:
            return _ephemeral(UNKNOWN_USER.format(user=user_id)), "unknown_user"
        try:
            # Slack's signature and the directory authenticated the person; the gate
            # vouches for the actor they map to, as for any other surface.
            principal = await self.desk.gate.credentials.vouch(actor)
        except Refused:
            return _ephemeral(UNKNOWN_USER.format(user=user_id)), "unknown_user"
        # The actor's own rate, shared with their token's requests.
        wait = self.desk.gate.limiter.take(actor)
        if wait > 0:
            return _ephemeral(RATE_LIMITED.format(wait=max(1, math.ceil(wait)))), "rate_limited"
        return await self._settle(principal, pending_id, action)

    async def _settle(
        self, principal: Principal, pending_id: str, action: Action
    ) -> tuple[dict[str, Any], str]:
        desk, handler = self.desk, self.desk.handler
        try:
            found = await handler.get_request(pending_id)
            if found is None or not await desk.access.can_see(principal, found):
                return _ephemeral(NOT_YOURS), "not_yours"
            if not await desk.access.may_decide(principal, found):
                counted = _counted(principal, found)
                if counted is not None:
                    return _ephemeral(counted), "vote_in"
                refused = NOT_AN_APPROVER if found.kind == "approval" else ROUTED_ON
                return _ephemeral(refused), "not_yours"
            current = await handler.expire_overdue([found])
            request = current[0] if current else found
            if request.status is not PendingInputStatus.PENDING:
                return _ephemeral(settled_detail(request)), "already_settled"
            if action.verb != "reject" and too_long(request):
                # The message could not show it all, whatever buttons it carries (one sent by
                # an older release offers Approve): only a refusal, which runs nothing, counts.
                return _ephemeral(TOO_LONG), "too_long"
            text = _answer(request, action)
            if text is None:
                return _ephemeral(UNFIT), "unfit"
            if request_kind(request) == "approval" and action.digest is None:
                return _ephemeral(UNNAMED), "unfit"
            won = await handler.aresolve(
                pending_id, text, by=principal.actor_id, surface="slack", digest=action.digest
            )
            if not won:
                latest = await handler.get_request(pending_id)
                counted = None if latest is None else _counted(principal, latest)
                if counted is not None:
                    # The same vote clicked twice at once: it is in, the request still open.
                    return _ephemeral(counted), "vote_in"
                return _ephemeral(settled_detail(latest)), "already_settled"
            settled = await handler.get_request(pending_id) or request
            if settled.quorum is not None and settled.status is PendingInputStatus.PENDING:
                # A vote that counted: the message stays for the other approvers to click.
                rejected = action.verb == "reject"
                desk.metrics.settled(request, principal, rejected=rejected, surface="slack")
                progress = quorum_progress(
                    len(approved_by(settled)), settled.quorum, settled.approvers
                )
                return _ephemeral(VOTED.format(progress=progress)), "voted"
        except ArgumentsChangedError as changed:
            now = clip(asked_text(changed.request), _STALE_ARGUMENTS_MAX)
            return _ephemeral(STALE.format(now=now)), "stale"
        except InvalidAnswerError as invalid:
            return _ephemeral(f"{invalid}: answer it in the desk."), "unfit"
        except StoreError as error:
            raise self._unavailable(error) from None
        rejected = action.verb == "reject"
        desk.metrics.settled(request, principal, rejected=rejected, surface="slack")
        event = {
            "event": "reject" if rejected else "answer",
            "pending_id": pending_id,
            "actor": principal.actor_id,
            "surface": "slack",
            "room_id": request.room_id,
        }
        logger.info("%s %s", "Rejected" if rejected else "Answered", pending_id, extra=event)
        return _replacement(settled, principal.actor_id), "settled"

    def _unavailable(self, error: StoreError) -> _Refused:
        self.desk.metrics.store_error()
        logger.warning(
            "The desk could not reach the request store: %s", error, extra={"event": "store_error"}
        )
        return _Refused(503, "The request store is unavailable: try again", "store_error")

    def router(self) -> APIRouter:
        """The route, to include in the desk's ``/api`` router."""
        router = APIRouter(route_class=_SlackRoute)
        router.add_api_route(
            "/slack/interactions",
            self.take,
            methods=["POST"],
            include_in_schema=False,
        )
        return router


def slack_router(desk: Desk, slack: object, directory: Directory | None) -> APIRouter:
    """``POST /slack/interactions`` for ``desk`` (the desk adds it under ``/api``).

    Raises:
        TypeError: ``slack`` is neither a Slack surface nor a signing secret; no directory.
    """
    team = getattr(slack, "team", None)
    return SlackInteractions(desk, signing_secret_of(slack), directory, team=team).router()


class _SlackRoute(APIRoute):
    """Sets the desk's headers; the body is Slack's form, read and capped by the endpoint."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await guard(super().handle, scope, receive, send, api=True)


async def _read(request: Request, timeout: float) -> bytes:
    try:
        check_declared_size(request.headers.get("content-length"), MAX_SLACK_BODY)
        return await read_capped(request.stream(), MAX_SLACK_BODY, timeout=timeout)
    except BodyRefusedError as refused:
        raise _Refused(refused.status, str(refused), "invalid") from None


def _payload(body: bytes) -> dict[str, Any]:
    """The JSON of the form's ``payload`` field, checked as every body is (``SLACK_LIMITS``)."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True)
        text = fields["payload"][0]
    except (UnicodeDecodeError, ValueError, KeyError):
        raise _Refused(
            400, "Expected Slack's form body with a JSON 'payload' field", "invalid"
        ) from None
    try:
        payload = load_json(text, SLACK_LIMITS, what="Slack's 'payload'")
    except BodyRefusedError as refused:
        raise _Refused(400, str(refused), "invalid") from None
    if not isinstance(payload, dict):
        raise _Refused(400, "Slack's 'payload' must be a JSON object", "invalid")
    # Slack writes UTF-8: a lone surrogate would reach the reply and the logs, which cannot
    # encode it.
    unencodable = unencodable_text(payload)
    if unencodable is not None:
        raise _Refused(400, f"Slack's 'payload' holds {unencodable}", "invalid")
    return payload


def _answer(request: PendingInput, action: Action) -> str | None:
    """The answer text the click gives ``request``, or ``None`` if the button does not fit."""
    kind = request_kind(request)
    if kind == "approval":
        if action.verb == "approve":
            return json.dumps({"decision": "approve"})
        if action.verb == "reject":
            return json.dumps({"decision": "reject", "reason": ""})
        return None
    if action.verb == "confirm" and kind == "confirm":
        return answer_text(request, AnswerBody(confirmed=action.confirmed))
    if action.verb == "choose" and kind == "question" and action.option is not None:
        labels = option_labels(request.arguments.get("options")) or []
        if action.option < len(labels) and request.arguments.get("multiSelect") is not True:
            # A button sent before such options went to the desk showed the label cut short.
            label = labels[action.option]
            return answer_text(request, AnswerBody(answer=label)) if fits_button(label) else None
    return None


def _ephemeral(text: str) -> dict[str, Any]:
    # Slack reads the text as markup: a reason a person wrote must not become a mention.
    return {"response_type": "ephemeral", "replace_original": False, "text": escape(text)}


def _replacement(request: PendingInput, actor: str) -> dict[str, Any]:
    """The clicked message, replaced by what was asked and who answered it in Slack."""
    notice = Notice(
        type="question_settled",
        delivery_id=f"slack-click-{request.pending_id}",
        request=request,
        outcome=str(request.status),
        answered_by=actor,
        answered_via="slack",
    )
    return {
        "replace_original": True,
        "text": escape(outcome_line(notice)),
        "blocks": settled_blocks(notice),
    }


async def _respond(url: str, reply: dict[str, Any]) -> None:
    """Post ``reply`` to the interaction's ``response_url``; a failure is logged, not raised."""
    client = AsyncWebhookClient(url, timeout=5)
    send: Callable[..., Awaitable[Any]] = client.send
    try:
        response = await send(**reply)
    except (aiohttp.ClientError, SlackClientError, TimeoutError) as error:
        logger.warning("Could not answer Slack at its response_url: %s", error)
        return
    if response.status_code != 200:
        logger.warning("Slack's response_url answered HTTP %s", response.status_code)
