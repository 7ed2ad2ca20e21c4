"""The desk's door: the FastAPI dependency over :class:`~roomkit.auth.gate.CredentialGate`.

:class:`Gate` is the dependency every desk route (the chat routes included) takes: it
refuses a request whose ``Host`` is not one of the desk's names (its :class:`HostRule`),
asks the one credential gate (:mod:`roomkit.auth.gate`) for the principal behind the
``Authorization: Bearer`` header, for the route's use (the desk's; a sign-in link's for
``POST /api/sign-in``, :meth:`Gate.sign_in_link`; an answer link's, spent or not, for
``GET /api/link``, :meth:`Gate.answer_link`), and spends one token of the caller's
rate-limit bucket. The WebSocket checks the same ``Host`` rule and calls :meth:`Gate.admit`
with the token of its auth frame; ``/metrics`` off loopback admits an administrator.
Tokens and the authenticator's error text never reach a log or a response.

A route that reads a body is gated before its body is read: :class:`Gate` is a
:class:`~roomkit._admission.BodyGate`, which the desk's route class runs first
(:func:`~roomkit._admission.admit_first`), so a caller without a valid token, over the rate
limit or calling through a foreign ``Host`` is refused without the desk reading or parsing a
byte of what it sent, and the route's own dependency then takes the caller admitted so.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import HTTPException, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from roomkit._admission import BodyGate, GateDependency, admit_before_body, gate_dependency
from roomkit.auth.authenticator import Authenticator
from roomkit.auth.door import TOO_MANY
from roomkit.auth.gate import CredentialGate, Refused, Use
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.principal import Principal
from roomkit.desk.limits import HostRule, RateLimiter

__all__ = [
    "Gate",
    "GateDependency",
    "admit_before_body",
    "gate_dependency",
    "refused_response",
    "signed_in",
]

_bearer = HTTPBearer(auto_error=False, description="A desk token (`roomkit token ACTOR`).")
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}

_Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]
"""The bearer token a route's dependency reads, if any: the ``Authorization`` header's."""


class Gate(BodyGate):
    """Authenticates callers for a use and applies the per-actor rate limit.

    Args:
        authenticator: turns tokens into principals.
        ledger: the answer links already spent and the tokens revoked.
        limiter: the per-actor token buckets.
        admin_limiter: the administrators' buckets; ``limiter`` serves them too when not
            given.
        hosts: the ``Host`` names the desk answers to; the default rule when not given.
    """

    def __init__(
        self,
        authenticator: Authenticator,
        ledger: LinkLedger,
        limiter: RateLimiter,
        *,
        admin_limiter: RateLimiter | None = None,
        hosts: HostRule | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.ledger = ledger
        self.limiter = limiter
        self.admin_limiter = admin_limiter if admin_limiter is not None else limiter
        self.hosts = hosts if hosts is not None else HostRule()
        self.credentials = CredentialGate(authenticator, ledger)
        """The one gate, which every surface shares."""

    async def admit(self, token: str | None, use: Use = Use.DESK) -> Principal:
        """The principal behind ``token``, for ``use`` (see :meth:`CredentialGate.admit`).

        Raises:
            Refused: the token is refused (the message is safe to show; its ``status``
                is the one to answer with).
            StoreError: the ledger cannot be read (the desk answers 503: it fails closed).
        """
        return await self.credentials.admit(token, use)

    async def authenticate(self, token: str, *, sign_in: bool = False) -> Principal:
        """The principal behind ``token``, for the desk's use, or with ``sign_in`` for
        ``POST /api/sign-in`` (:meth:`admit` with :attr:`Use.DESK` or :attr:`Use.SIGN_IN`).

        Raises:
            DeskAuthError: the token is refused (the message is safe to show).
            StoreError: the ledger cannot be read.
        """
        return await self.admit(token, Use.SIGN_IN if sign_in else Use.DESK)

    def spend(self, principal: Principal) -> float:
        """Spend one request of the principal's bucket (an administrator's own, when they
        are one): ``0.0`` if allowed, else the seconds to wait."""
        limiter = self.admin_limiter if principal.admin else self.limiter
        return limiter.take(principal.actor_id)

    def throttle(self, principal: Principal) -> None:
        """Spend one request of the principal's bucket.

        Raises:
            HTTPException: 429, with ``Retry-After``, when the bucket is empty.
        """
        wait = self.spend(principal)
        if wait > 0:
            raise HTTPException(
                status_code=429,
                detail=TOO_MANY,
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )

    async def __call__(self, request: Request, credentials: _Credentials) -> Principal:
        """The FastAPI dependency of the desk's routes: the caller's principal for
        :attr:`Use.DESK`, rate-limited.

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid token, 429.
        """
        return await self._caller(request, credentials, Use.DESK)

    async def sign_in_link(self, request: Request, credentials: _Credentials) -> Principal:
        """The dependency of ``POST /api/sign-in``: as :meth:`__call__`, for
        :attr:`Use.SIGN_IN` (a sign-in link).

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid sign-in link, 429.
        """
        return await self._caller(request, credentials, Use.SIGN_IN)

    async def answer_link(self, request: Request, credentials: _Credentials) -> Principal:
        """The dependency of ``GET /api/link``: as :meth:`__call__`, for
        :attr:`Use.ANSWER_LINK` (an answer link, spent or not, reading its one request).

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid answer link, 429.
        """
        return await self._caller(request, credentials, Use.ANSWER_LINK)

    async def _caller(
        self, request: Request, credentials: HTTPAuthorizationCredentials | None, use: Use
    ) -> Principal:
        # The caller this gate admitted, for this use: another desk's gate checks its own.
        admitted = self.admitted(request, (self, use))
        if admitted is not None:
            # Admitted before the body was read: the same caller, its bucket spent once.
            return admitted
        refusal = self.hosts.refusal(request.headers.get("host"), request.scope.get("server"))
        if refusal is not None:
            raise HTTPException(status_code=400, detail=refusal)
        try:
            principal = await self.admit(credentials.credentials if credentials else None, use)
        except Refused as refused:
            raise refused_response(refused) from None
        self.throttle(principal)
        self.remember(request, (self, use), principal)
        return principal


def refused_response(refused: Refused) -> HTTPException:
    """The HTTP error of a refused credential: its status and message, and the
    ``WWW-Authenticate`` challenge with a 401."""
    headers = _UNAUTHORIZED if refused.status == 401 else None
    return HTTPException(status_code=refused.status, detail=str(refused), headers=headers)


def signed_in(caller: Principal, what: str) -> str:
    """The actor of ``caller``, a person signed in to the desk (a token, not an answer link,
    which is good for its one question only).

    Raises:
        HTTPException: 403 saying that an answer link cannot do ``what``.
    """
    if caller.request_id is not None or caller.link_id is not None:
        raise HTTPException(
            status_code=403, detail=f"An answer link cannot {what}: sign in to the desk"
        )
    return caller.actor_id
