"""The desk's figures in the Prometheus text format, served at ``GET /metrics``.

:class:`DeskMetrics` holds one registry per desk, so that several desks in one process (tests,
an application serving two kits) never share a series. The desk counts what passes through
it (answers, refusals, the time a person took, store errors); the open requests, the
WebSocket clients and the handler's :meth:`~roomkit.tools.human_input.HumanInputHandler.statistics`
are read at each scrape.

=====================================  ===================================================
``roomkit_open_requests{kind}``        open requests in the store, by kind (every process's
                                       on a durable store)
``roomkit_answers_total{surface}``     answers given through the desk
``roomkit_rejections_total{surface}``  refusals given through the desk
``roomkit_time_to_answer_seconds``     from the question being asked to a person's answer
                                       or refusal on the desk (a histogram)
``roomkit_store_errors_total``         times the desk could not reach the request store
``roomkit_websocket_clients``          clients connected to the desk's WebSocket
``roomkit_handler_*``                  the handler's figures in this process: active
                                       requests, parked waits, armed deadlines, running
                                       notifications
``roomkit_policy_decisions{policy,     calls a policy decided in this process, per tool
tool, decision, enforced}``            and decision (``enforced="false"``: in shadow, what
                                       it would have done)
=====================================  ===================================================

``surface`` is ``desk`` for a person signed in with a token (the page, the API, the CLI) and
``link`` for a single-use answer link. :func:`metrics_router` serves the page of figures to a
connection made over loopback as it is, and to any other only with an administrator's token.
"""

from __future__ import annotations

import ipaddress
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException
from starlette.requests import Request
from starlette.responses import Response

from roomkit._extras import requires_extra
from roomkit.auth.gate import Refused, Use
from roomkit.core.exceptions import StoreError
from roomkit.desk.auth import Principal
from roomkit.desk.gate import refused_response
from roomkit.desk.shapes import Kind, request_kind
from roomkit.models.pending_input import PendingInput
from roomkit.policy import tally
from roomkit.tools.human_input import HandlerStatistics

with requires_extra("The answer desk's metrics", "desk"):
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        generate_latest,
    )

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["SURFACES", "TIME_TO_ANSWER_BUCKETS", "DeskMetrics", "metrics_router", "surface_of"]

SURFACES = ("desk", "link", "slack")
"""Where an answer came in: a signed-in person's token, a single-use answer link, or a
click in Slack."""

TIME_TO_ANSWER_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 86_400)
"""Seconds: people answer in seconds, minutes or hours, not milliseconds."""

_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def surface_of(principal: Principal) -> str:
    """The surface an answer from ``principal`` came in through."""
    return "link" if principal.link_id is not None else "desk"


class DeskMetrics:
    """The figures of one desk, in a registry of its own.

    Args:
        clock: seconds since the epoch, to time answers against their requests' creation.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.registry = CollectorRegistry()
        """The registry the desk's series live in (none of them in the global one)."""
        registry = self.registry
        self._open = Gauge(
            "roomkit_open_requests", "Open requests in the store, by kind.", ["kind"],
            registry=registry,
        )  # fmt: skip
        self._answers = Counter(
            "roomkit_answers", "Answers given through the desk.", ["surface"], registry=registry
        )
        self._rejections = Counter(
            "roomkit_rejections", "Refusals given through the desk.", ["surface"],
            registry=registry,
        )  # fmt: skip
        self._time_to_answer = Histogram(
            "roomkit_time_to_answer_seconds",
            "Seconds from a question being asked to a person's answer or refusal on the desk.",
            buckets=TIME_TO_ANSWER_BUCKETS,
            registry=registry,
        )
        self._store_errors = Counter(
            "roomkit_store_errors", "Times the desk could not reach the request store.",
            registry=registry,
        )  # fmt: skip
        self._clients = Gauge(
            "roomkit_websocket_clients", "Clients connected to the desk's WebSocket.",
            registry=registry,
        )  # fmt: skip
        self._handler = {
            name: Gauge(f"roomkit_handler_{name}", text, registry=registry)
            for name, text in (
                ("active_requests", "Requests the desk's handler holds in this process."),
                ("parked_waits", "wait() calls blocked in this process."),
                ("armed_deadlines", "Deadlines this process watches."),
                ("running_notifications", "Notification callbacks still running."),
                ("deadline_timers", "Event-loop timers armed for those deadlines."),
            )
        }
        for surface in SURFACES:
            self._answers.labels(surface)
            self._rejections.labels(surface)
        self._policy = Gauge(
            "roomkit_policy_decisions",
            "Calls a policy decided in this process, per tool and decision (enforced or shadow).",
            ["policy", "tool", "decision", "enforced"],
            registry=registry,
        )
        self._slack = Counter(
            "roomkit_slack_interactions", "Clicks Slack posted to the desk, by what came of them.",
            ["outcome"], registry=registry,
        )  # fmt: skip

    def settled(
        self,
        request: PendingInput,
        principal: Principal,
        *,
        rejected: bool,
        surface: str | None = None,
    ) -> None:
        """Count an answer (or a refusal) a person gave through the desk, and its delay;
        ``surface`` when it came from elsewhere than the principal's token (``slack``)."""
        counter = self._rejections if rejected else self._answers
        counter.labels(surface or surface_of(principal)).inc()
        waited = self.clock() - request.created_at.timestamp()
        # Clocks of different processes may disagree a little: a delay is never negative.
        self._time_to_answer.observe(max(0.0, waited))

    def slack_interaction(self, outcome: str) -> None:
        """Count a click Slack posted: ``settled``, ``voted`` (a vote on a quorum approval
        that leaves it open), ``vote_in`` (a voter clicking again: their vote is in
        already), ``forged``, ``replayed``, ``not_yours``, ``unknown_user``,
        ``already_settled``, ``stale`` (a decision on arguments since edited), ``unfit``,
        ``too_long`` (an answer to a request longer than its message showed),
        ``rate_limited``, ``invalid``, ``other_team`` (from a workspace other than the
        surface's ``team``), ``modal`` (a modal's submission, refused), ``ignored`` or
        ``store_error``."""
        self._slack.labels(outcome).inc()

    def store_error(self) -> None:
        """Count a failure to reach the request store."""
        self._store_errors.inc()

    def observe(
        self,
        *,
        open_requests: Iterable[PendingInput] | None,
        statistics: HandlerStatistics,
        clients: int,
    ) -> None:
        """Set the figures read at a scrape; ``open_requests=None`` when the store failed
        (the series is then left out rather than shown stale)."""
        if open_requests is None:
            self._open.clear()
        else:
            kinds = Tally(request_kind(request) for request in open_requests)
            for kind in Kind:
                self._open.labels(kind.value).set(kinds[kind])
        self._clients.set(clients)
        for count in tally.counts():
            enforced = "true" if count.enforced else "false"
            self._policy.labels(count.policy, count.tool, count.decision, enforced).set(count.calls)
        for name, gauge in self._handler.items():
            gauge.set(getattr(statistics, name))

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        data: bytes = generate_latest(self.registry)
        return data


def from_loopback(scope: Mapping[str, Any]) -> bool:
    """Whether the connection was made to a loopback address of this machine."""
    server = scope.get("server")
    if not server or not isinstance(server[0], str):
        return False
    try:
        address = ipaddress.ip_address(server[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


async def _admit(desk: Desk, request: Request) -> None:
    """Let an administrator's token through; 401 or 403 for anything else."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(
            status_code=401,
            detail="Missing bearer token: /metrics off loopback needs an administrator's token",
            headers=_UNAUTHORIZED,
        )
    try:
        principal = await desk.gate.admit(token, Use.ADMIN)
    except Refused as refused:
        raise refused_response(refused) from None
    desk.gate.throttle(principal)


def metrics_router(desk: Desk) -> APIRouter:
    """The ``GET /metrics`` route of ``desk`` (``app.include_router(metrics_router(desk))``)."""
    router = APIRouter()

    @router.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        if not from_loopback(request.scope):
            try:
                await _admit(desk, request)
            except StoreError:
                # The token's revocations live in the store: without it, fail closed.
                desk.metrics.store_error()
                raise HTTPException(
                    status_code=503,
                    detail="The request store is unavailable, so the token cannot be checked: "
                    "try again, or scrape over loopback",
                ) from None
        handler = desk.handler
        try:
            open_requests: list[PendingInput] | None = await handler.list_pending()
        except StoreError:
            desk.metrics.store_error()
            open_requests = None
        desk.metrics.observe(
            open_requests=open_requests,
            statistics=handler.statistics(),
            clients=desk.hub.clients,
        )
        return Response(desk.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return router
