"""The answer desk: a kit's open questions over HTTP and WebSocket, answered by people.

:class:`Desk` puts the parts together (the handler whose requests it shows, the
authenticator, the access rules, the hub and the limits); :func:`desk_router` is the
embeddable form::

    router = desk_router(kit, auth=TokenAuthenticator(secret))
    app.include_router(router)
    app.include_router(chat_router(kit, router.hub, channel_id="web"))

With SQLite or Redis the desk may run in its own process: give it a handler on the same
store as the agents (``desk_router(kit, handler=HumanInputHandler(store=...))``).
"""

from __future__ import annotations

import os
from collections.abc import Collection

from fastapi import HTTPException

from roomkit.core.framework import RoomKit
from roomkit.desk.auth import Access, Authenticator, LinkLedger, Principal, TokenAuthenticator
from roomkit.desk.gate import Gate
from roomkit.desk.hub import DeskHub
from roomkit.desk.limits import DeskLimits, HostRule, RateLimiter
from roomkit.desk.metrics import DeskMetrics
from roomkit.desk.routes import DeskRouter, build_router
from roomkit.desk.tokens import resolve_secret
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["Desk", "default_handler", "desk_router"]


def default_handler(kit: RoomKit) -> HumanInputHandler:
    """The kit's one routed human-input handler.

    Raises:
        ValueError: the kit routes none, or several (pass ``handler=`` to choose).
    """
    handlers = kit.human_input_handlers
    if len(handlers) == 1:
        return handlers[0]
    if not handlers:
        raise ValueError(
            "The kit routes no human-input handler: register a channel with "
            "human_input_handler=..., or pass handler=HumanInputHandler(store=...) to the desk"
        )
    raise ValueError(
        f"The kit routes {len(handlers)} human-input handlers: pass handler=... to choose "
        "the one the desk shows"
    )


class Desk:
    """The answer desk of one kit.

    Args:
        kit: the kit whose rooms' rosters decide who sees a request with no actor.
        handler: the handler whose requests the desk shows; the kit's only routed handler
            by default.
        auth: turns bearer tokens into principals; a :class:`TokenAuthenticator` on the
            desk's secret by default.
        secret: the desk's secret (else ``ROOMKIT_DESK_SECRET``, else the data folder's key
            file); used only when ``auth`` is not given.
        data_dir: where the key file lives (``~/.roomkit/desk`` by default).
        allowed_origins: the origins a browser may open the WebSocket from; the desk's own
            host only, by default.
        allowed_hosts: ``Host`` names the desk answers to besides IP addresses,
            ``localhost`` and the server's own name (see :class:`HostRule`); ``["*"]``
            turns the check off. Others are refused: 400, or 403 for a WebSocket upgrade.
        limits: body, frame, depth and rate limits.

    Raises:
        ValueError: an entry of ``allowed_hosts`` is not a host name.
    """

    def __init__(
        self,
        kit: RoomKit,
        *,
        handler: HumanInputHandler | None = None,
        auth: Authenticator | None = None,
        secret: str | bytes | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        allowed_hosts: Collection[str] | None = None,
        limits: DeskLimits | None = None,
    ) -> None:
        self.kit = kit
        self.handler = handler if handler is not None else default_handler(kit)
        self.limits = limits if limits is not None else DeskLimits()
        if auth is None:
            auth = TokenAuthenticator(resolve_secret(secret, data_dir=data_dir))
        elif not isinstance(auth, Authenticator):
            raise TypeError(
                f"auth must have `async authenticate(token) -> Principal`, got {auth!r}"
            )
        self.authenticator: Authenticator = auth
        self.allowed_origins = (
            None
            if allowed_origins is None
            else frozenset(origin.rstrip("/") for origin in allowed_origins)
        )
        self.ledger = LinkLedger(self.handler.ledger)
        self.access = Access(kit)
        self.hosts = HostRule(allowed_hosts)
        """The ``Host`` names the desk answers to."""
        limiter = RateLimiter(self.limits.rate, self.limits.burst)
        self.gate = Gate(auth, self.ledger, limiter, hosts=self.hosts)
        self.metrics = DeskMetrics()
        """The desk's figures, in a registry of its own (``GET /metrics`` serves them)."""
        self.hub = DeskHub(
            self.handler, self.access, self.gate, outbox=self.limits.outbox, metrics=self.metrics
        )
        self.router: DeskRouter = build_router(self)

    async def spend_link(self, principal: Principal) -> None:
        """Use up an answer link about to answer or reject (no-op for other principals).

        Raises:
            HTTPException: 401 when the link was already used (through any desk process).
        """
        if principal.link_id is not None and not await self.ledger.spend(principal):
            raise HTTPException(status_code=401, detail="This answer link was already used")

    async def aclose(self) -> None:
        """Stop the hub; connected clients are forgotten."""
        await self.hub.aclose()


def desk_router(
    kit: RoomKit,
    *,
    handler: HumanInputHandler | None = None,
    auth: Authenticator | None = None,
    secret: str | bytes | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    limits: DeskLimits | None = None,
) -> DeskRouter:
    """The desk's ``/api`` router, to ``app.include_router()``; see :class:`Desk`.

    The router's ``hub`` (and ``desk``) are what ``chat_router(kit, router.hub, ...)``
    takes. Its routes set the desk's security headers and ``Cache-Control: no-store`` on
    their responses and check ``Host``; the application's other routes are left as they are.
    """
    return Desk(
        kit,
        handler=handler,
        auth=auth,
        secret=secret,
        data_dir=data_dir,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        limits=limits,
    ).router
