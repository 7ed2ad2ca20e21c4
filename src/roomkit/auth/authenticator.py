"""Turning a bearer token into a :class:`~roomkit.auth.principal.Principal`.

An :class:`Authenticator` is anything with ``async authenticate(token) -> Principal``; the
default, :class:`TokenAuthenticator`, reads the desk's own signed tokens
(:mod:`roomkit.auth.tokens`). Which uses a principal is good for is the gate's to decide
(:mod:`roomkit.auth.gate`), from its :attr:`~roomkit.auth.principal.Principal.kind`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from roomkit.auth.principal import CredentialKind, Principal
from roomkit.auth.tokens import read_token, secret_key, token_kind

__all__ = ["Authenticator", "TokenAuthenticator"]


@runtime_checkable
class Authenticator(Protocol):
    """Turns a bearer token into a :class:`~roomkit.auth.principal.Principal`.

    ``authenticate`` raises (``DeskAuthError``, a ``PermissionError``, by convention) to
    refuse a token; the desk answers 401 and never logs the token or the error's text.
    """

    async def authenticate(self, token: str) -> Principal:
        """The principal the token speaks for."""
        ...


class TokenAuthenticator:
    """Reads the desk's HMAC-signed tokens (see :mod:`roomkit.auth.tokens`).

    Args:
        secret: the desk's secret, as the tokens were signed with it.
        clock: seconds since the epoch; ``time.time`` by default.
    """

    def __init__(self, secret: str | bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret_key(secret)
        self.clock = clock

    async def authenticate(self, token: str) -> Principal:
        """The principal of a valid token, of the kind the token names.

        Raises:
            DeskAuthError: malformed, forged, tampered with or expired.
        """
        claims = read_token(self._secret, token, now=self.clock())
        expires = claims.get("exp")
        expires_at = None if expires is None else float(expires)
        # A token from before issue times were written counts as issued before any revocation.
        issued_at = float(claims.get("iat", 0.0))
        kind = token_kind(claims)
        if kind is CredentialKind.SIGN_IN_LINK:
            return Principal(
                claims["sub"],
                bool(claims.get("adm", False)),
                link_id=claims["jti"],
                expires_at=expires_at,
                issued_at=issued_at,
                sign_in=True,
            )
        if kind is CredentialKind.ANSWER_LINK:
            return Principal(
                claims["sub"],
                False,
                request_id=claims["req"],
                link_id=claims["jti"],
                expires_at=expires_at,
                issued_at=issued_at,
            )
        return Principal(
            claims["sub"],
            bool(claims.get("adm", False)),
            expires_at=expires_at,
            token_id=claims.get("jti"),
            issued_at=issued_at,
        )
