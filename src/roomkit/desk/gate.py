"""The desk's door: a bearer token in, a :class:`Principal` out, or 400 / 401 / 429.

:class:`Gate` is the FastAPI dependency every desk route (the chat routes included) takes:
it refuses a request whose ``Host`` is not one of the desk's names (its :class:`HostRule`),
authenticates the ``Authorization: Bearer`` header, refuses an answer or sign-in link
already spent and a revoked token (both read from the store's ledger, so every desk process
on the store agrees), and a sign-in link anywhere but ``POST /api/sign-in``
(:meth:`Gate.sign_in_link`), and spends one token of the caller's rate-limit bucket. The
WebSocket checks the same ``Host`` rule and calls :meth:`Gate.authenticate` with the token
of its auth frame.
Tokens and the authenticator's error text never reach a log or a response.
"""

from __future__ import annotations

import logging
import math
from typing import Annotated

from fastapi import HTTPException, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from roomkit.core.exceptions import DeskAuthError
from roomkit.desk.auth import LINK_USED, Authenticator, LinkLedger, Principal, principal_problem
from roomkit.desk.limits import HostRule, RateLimiter

__all__ = ["Gate"]

logger = logging.getLogger("roomkit.desk")

_bearer = HTTPBearer(auto_error=False, description="A desk token (`roomkit token ACTOR`).")
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}
_SIGN_IN_ONLY = "A sign-in link only signs in: open it in the desk's page"
_NOT_SIGN_IN = "Not a sign-in link: send the token itself with each request"


_REFUSED = (
    "Invalid or expired token: a token from `roomkit token` works only when it is signed "
    "with this desk's key (run both with the same --data-dir, or the same ROOMKIT_DESK_SECRET)"
)
"""What the desk answers a token it cannot read: forged, expired, or signed with another key."""


class Gate:
    """Authenticates callers and applies the per-actor rate limit.

    Args:
        authenticator: turns tokens into principals.
        ledger: the answer links already spent and the tokens revoked.
        limiter: the per-actor token buckets.
        hosts: the ``Host`` names the desk answers to; the default rule when not given.
    """

    def __init__(
        self,
        authenticator: Authenticator,
        ledger: LinkLedger,
        limiter: RateLimiter,
        *,
        hosts: HostRule | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.ledger = ledger
        self.limiter = limiter
        self.hosts = hosts if hosts is not None else HostRule()

    async def authenticate(
        self, token: str, *, sign_in: bool = False, spent: bool = False
    ) -> Principal:
        """The principal behind ``token``.

        Args:
            token: the bearer token.
            sign_in: take a sign-in link, and only that (``POST /api/sign-in``); every
                other use refuses one.
            spent: take an answer link once spent too (``GET /api/link``: how its one
                request ended).

        Raises:
            DeskAuthError: the token is refused (the message is safe to show).
            StoreError: the ledger cannot be read (the desk answers 503: it fails closed).
        """
        try:
            principal = await self.authenticator.authenticate(token)
        except PermissionError:
            raise DeskAuthError(_REFUSED) from None
        except Exception as error:
            # Fail closed; name only the error's type, since its text may quote the token.
            logger.warning("The desk's authenticator failed with %s", type(error).__name__)
            raise DeskAuthError(_REFUSED) from None
        if not isinstance(principal, Principal):
            logger.warning("The desk's authenticator returned %s", type(principal).__name__)
            raise DeskAuthError(_REFUSED)
        problem = principal_problem(principal)
        if problem is not None:
            logger.warning("The desk's authenticator returned a principal whose %s", problem)
            raise DeskAuthError(f"The token names an actor the desk cannot use: {problem}")
        if principal.sign_in != sign_in:
            raise DeskAuthError(_NOT_SIGN_IN if sign_in else _SIGN_IN_ONLY)
        refusal = await self.ledger.refusal(principal)
        if refusal is not None and not (spent and principal.request_id and refusal == LINK_USED):
            raise DeskAuthError(refusal)
        return principal

    def throttle(self, principal: Principal) -> None:
        """Spend one request of the principal's bucket.

        Raises:
            HTTPException: 429, with ``Retry-After``, when the bucket is empty.
        """
        wait = self.limiter.take(principal.actor_id)
        if wait > 0:
            raise HTTPException(
                status_code=429,
                detail="Too many requests: slow down",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> Principal:
        """The FastAPI dependency: the caller's principal, rate-limited.

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid token, 429.
        """
        return await self._caller(request, credentials, sign_in=False)

    async def sign_in_link(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> Principal:
        """The dependency of ``POST /api/sign-in``: as :meth:`__call__`, for a sign-in link.

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid sign-in link, 429.
        """
        return await self._caller(request, credentials, sign_in=True)

    async def answer_link(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> Principal:
        """The dependency of ``GET /api/link``: as :meth:`__call__`, spent answer links too.

        Raises:
            HTTPException: 400 for a foreign ``Host``, 401 without a valid token, 429.
        """
        return await self._caller(request, credentials, sign_in=False, spent=True)

    async def _caller(
        self,
        request: Request,
        credentials: HTTPAuthorizationCredentials | None,
        *,
        sign_in: bool,
        spent: bool = False,
    ) -> Principal:
        refusal = self.hosts.refusal(request.headers.get("host"), request.scope.get("server"))
        if refusal is not None:
            raise HTTPException(status_code=400, detail=refusal)
        if credentials is None or not credentials.credentials:
            raise HTTPException(
                status_code=401, detail="Missing bearer token", headers=_UNAUTHORIZED
            )
        try:
            principal = await self.authenticate(
                credentials.credentials, sign_in=sign_in, spent=spent
            )
        except PermissionError as refused:
            raise HTTPException(
                status_code=401, detail=str(refused), headers=_UNAUTHORIZED
            ) from None
        self.throttle(principal)
        return principal
