"""The answer desk: a kit's open questions over HTTP and WebSocket, answered by people.

:class:`Desk` puts the parts together (the handler whose requests it shows, the
authenticator, the access rules, the hub and the limits) from the options of
:class:`~roomkit.desk.options.DeskOptions`; :func:`desk_router` is the embeddable form::

    router = desk_router(kit, auth=TokenAuthenticator(secret))
    app.include_router(router)
    app.include_router(chat_router(kit, router.hub, channel_id="web"))

With SQLite or Redis the desk may run in its own process: give it a handler on the same
store as the agents (``desk_router(kit, handler=HumanInputHandler(store=...))``). A desk
built beforehand serves as well: ``desk_router(Desk(kit, **options))``.
"""

from __future__ import annotations

import time
from typing import Unpack

from fastapi import HTTPException

from roomkit._doors import routed_handler
from roomkit.auth.traffic import is_origin
from roomkit.core.framework import RoomKit
from roomkit.desk import notifications
from roomkit.desk.auth import (
    SIGN_IN_USED,
    Access,
    Authenticator,
    LinkLedger,
    Principal,
    TokenAuthenticator,
)
from roomkit.desk.gate import Gate
from roomkit.desk.hub import DeskHub
from roomkit.desk.limits import DeskLimits, HostRule, RateLimiter
from roomkit.desk.metrics import DeskMetrics
from roomkit.desk.options import DeskOptions, check_option_names
from roomkit.desk.places import Places
from roomkit.desk.push import push_router
from roomkit.desk.routes import DeskRouter, build_router
from roomkit.desk.tokens import SESSION_TTL, issue_token, resolve_secret
from roomkit.notify.notifier import Notifier
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["Desk", "default_handler", "desk_router"]

SIGN_IN_BEFORE_START = (
    "This sign-in link is from before this desk started: on the memory store a desk cannot "
    "tell whether it was used, so it takes only links issued since; open the link it printed "
    "when it started (or run it with a shared --store)"
)
"""Why a desk whose ledger lives in its process refuses a sign-in link issued before it."""


def default_handler(kit: RoomKit) -> HumanInputHandler:
    """The kit's one routed human-input handler.

    Raises:
        ValueError: the kit routes none, or several (pass ``handler=`` to choose).
    """
    return routed_handler(kit, door="the desk", shows="the desk shows")


class Desk:
    """The answer desk of one kit.

    Args:
        kit: the kit whose rooms' rosters decide who sees a request with no actor.
        **options: the desk's options, each described in
            :class:`~roomkit.desk.options.DeskOptions` (``handler``, ``auth``, ``secret``,
            ``data_dir``, ``allowed_origins``, ``allowed_hosts``, ``limits``, ``notifier``).

    Raises:
        TypeError: ``kit`` is no ``RoomKit``; an option is not one of those, or not of its
            type (one string for a collection of origins or hosts, an object without
            ``authenticate``).
        ValueError: an entry of ``allowed_hosts`` is not a host name, or one of
            ``allowed_origins`` no origin (``scheme://host[:port]`` in lower case, or ``*``);
            the secret is too short.
    """

    def __init__(self, kit: RoomKit, **options: Unpack[DeskOptions]) -> None:
        if not isinstance(kit, RoomKit):
            hint = (
                ": a desk over a handler alone takes RoomKit() first and the handler as handler=..."
                if isinstance(kit, HumanInputHandler)
                else ""
            )
            raise TypeError(f"the desk takes a RoomKit first, got {type(kit).__name__}{hint}")
        check_option_names(options, where="Desk()")
        handler = options.get("handler")
        if handler is not None and not isinstance(handler, HumanInputHandler):
            raise TypeError(f"handler must be a HumanInputHandler, got {handler!r}")
        limits = options.get("limits")
        if limits is not None and not isinstance(limits, DeskLimits):
            raise TypeError(f"limits must be a DeskLimits, got {limits!r}")
        notifier = options.get("notifier")
        if notifier is not None and not isinstance(notifier, Notifier):
            raise TypeError(f"notifier must be a roomkit.notify.Notifier, got {notifier!r}")
        auth = options.get("auth")
        self._secret: bytes | None = None
        if auth is None:
            self._secret = resolve_secret(options.get("secret"), data_dir=options.get("data_dir"))
            auth = TokenAuthenticator(self._secret)
        elif not isinstance(auth, Authenticator):
            raise TypeError(
                f"auth must have `async authenticate(token) -> Principal`, got {auth!r}"
            )
        origins = options.get("allowed_origins")
        if isinstance(origins, str):
            raise TypeError(
                f"allowed_origins is a collection of origins: pass [{origins!r}], not a string"
            )
        for origin in origins or ():
            if not isinstance(origin, str) or (origin != "*" and not is_origin(origin)):
                raise ValueError(
                    "allowed_origins holds origins as a browser sends them, "
                    f"scheme://host[:port] in lower case (or * for any): got {origin!r}"
                )
        self.kit = kit
        self.handler = handler if handler is not None else default_handler(kit)
        # A ledger in this process forgot, at the last restart, which links were spent.
        self._started = time.time()
        self.limits = limits if limits is not None else DeskLimits()
        self.authenticator: Authenticator = auth
        self.allowed_origins = (
            None if origins is None else frozenset(origin.rstrip("/") for origin in origins)
        )
        self.ledger = LinkLedger(self.handler.ledger)
        self.access = Access.of(kit, self.handler)
        self.hosts = HostRule(options.get("allowed_hosts"))
        """The ``Host`` names the desk answers to."""
        limiter = RateLimiter(self.limits.rate, self.limits.burst)
        admins = RateLimiter(self.limits.admin_rate, self.limits.admin_burst)
        self.gate = Gate(auth, self.ledger, limiter, admin_limiter=admins, hosts=self.hosts)
        self.metrics = DeskMetrics()
        """The desk's figures, in a registry of its own (``GET /metrics`` serves them)."""
        self.notifier = notifier
        """The notifier the desk runs while its app runs, or ``None``."""
        if notifier is not None:
            notifications.watch(self.metrics.registry, notifier)
        self.hub = DeskHub(
            self.handler, self.access, self.gate, outbox=self.limits.outbox, metrics=self.metrics
        )
        self.places = Places(per_person=self.limits.sockets_per_person, total=self.limits.sockets)
        """The WebSocket's open connections, counted against the limits' caps."""
        self.router: DeskRouter = build_router(self)
        # Web Push from the page: the desk's key and each person's devices, in its data folder.
        self.router.include_router(
            push_router(self, options.get("data_dir"), options.get("push_hosts"))
        )
        slack: object = options.get("slack")
        directory = options.get("directory")
        if slack is None and notifier is not None:
            # A notifier posting to Slack gives the desk the app's signing secret and its
            # directory: Slack's clicks come back here.
            slack = next(
                (s for s in notifier.surfaces.values() if hasattr(s, "signing_secret")), None
            )
        if slack is not None:
            if directory is None and notifier is not None:
                directory = notifier.directory
            if directory is None:
                # The handler's directory routes its requests: it says who is who on Slack too.
                directory = getattr(self.handler, "directory", None)
            # Loaded only for a desk that takes Slack's clicks: it needs the slack extra.
            from roomkit.desk.slack import slack_router

            self.router.include_router(slack_router(self, slack, directory))

    @classmethod
    def of(cls, kit: RoomKit | Desk, options: DeskOptions, *, where: str) -> Desk:
        """``kit`` itself when it is a desk already (then ``options`` must be empty), else
        a new desk of ``kit`` with ``options``.

        Raises:
            TypeError: a desk and options both, or an option that is not one.
        """
        if not isinstance(kit, Desk):
            check_option_names(options, where=where)
            return cls(kit, **options)
        if options:
            raise TypeError(
                f"{where} got a Desk and the options {', '.join(sorted(options))}: "
                "give the options to Desk(kit, ...) instead"
            )
        return kit

    async def sign_in(self, principal: Principal) -> tuple[str, float]:
        """Trade a sign-in link for an actor token of its person, once: the token and when
        it expires (:data:`~roomkit.desk.tokens.SESSION_TTL` from now).

        Raises:
            HTTPException: 401 when the link was already used (through any desk process),
                or, on the memory store, was issued before this desk started; 404 when the
                desk has an authenticator of the application's own, and so no secret to sign
                with.
        """
        if self._secret is None:
            raise HTTPException(status_code=404, detail="This desk signs no tokens")
        issued = principal.issued_at
        if not self.handler.durable and (issued is None or issued < self._started):
            raise HTTPException(status_code=401, detail=SIGN_IN_BEFORE_START)
        if not await self.ledger.spend(principal):
            raise HTTPException(status_code=401, detail=SIGN_IN_USED)
        now = time.time()
        token = issue_token(
            self._secret, principal.actor_id, admin=principal.admin, ttl=SESSION_TTL, now=now
        )
        return token, now + SESSION_TTL

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


def desk_router(kit: RoomKit | Desk, **options: Unpack[DeskOptions]) -> DeskRouter:
    """The desk's ``/api`` router, to ``app.include_router()``.

    Args:
        kit: the kit to serve a new :class:`Desk` of, or a ``Desk`` already built.
        **options: the new desk's options (see :class:`~roomkit.desk.options.DeskOptions`);
            none with a ``Desk``.

    The router's ``hub`` (and ``desk``) are what ``chat_router(kit, router.hub, ...)``
    takes. Its routes set the desk's security headers and ``Cache-Control: no-store`` on
    their responses and check ``Host``; the application's other routes are left as they are.

    Raises:
        TypeError, ValueError: as :class:`Desk`; a ``Desk`` given with options.
    """
    return Desk.of(kit, options, where="desk_router()").router
