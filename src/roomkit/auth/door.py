"""How a door other systems call through admits a person's session, before it reads a body.

The AG-UI endpoint, the A2A routes and ``roomkit mcp --http`` take a person's own token
(:attr:`~roomkit.auth.gate.Use.SESSION`) the same way: the bearer token goes through the one
:class:`~roomkit.auth.gate.CredentialGate` (a refused one answers with its own status, a store
that cannot be read to check it 503), then the person's
:class:`~roomkit.auth.traffic.RateLimiter` bucket (429 once it is empty). :func:`admit_session`
makes those checks once; each door writes the :class:`Turned` it returns in its own protocol.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from roomkit.auth.authenticator import Authenticator, TokenAuthenticator
from roomkit.auth.gate import CredentialGate, Refused, Use
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.principal import Principal
from roomkit.auth.tokens import resolve_secret
from roomkit.auth.traffic import RateLimiter
from roomkit.core.exceptions import StoreError

__all__ = ["STORE_DOWN", "TOO_MANY", "Turned", "admit_session", "bearer_token", "session_gate"]

STORE_DOWN = "The store cannot be reached to check the token"
"""The 503's message: the revoked tokens cannot be read, so no token is taken."""
TOO_MANY = "Too many requests: slow down"
"""The 429's message."""


class Turned(NamedTuple):
    """Why a door turns a request away."""

    status: int
    """The HTTP status to answer with."""
    message: str
    """What the caller reads; safe to show."""
    retry_after: int | None = None
    """For a 429, the whole seconds before the person's bucket takes a request again."""


def session_gate(
    ledger: LinkLedger,
    auth: Authenticator | None,
    secret: str | bytes | None,
    data_dir: str | os.PathLike[str] | None,
) -> CredentialGate:
    """The gate of a door that takes the desk's options ``auth``, ``secret`` and
    ``data_dir``: ``auth``, else the desk's own tokens signed with the secret they name.

    Raises:
        ValueError: the secret is too short.
    """
    if auth is None:
        auth = TokenAuthenticator(resolve_secret(secret, data_dir=data_dir))
    return CredentialGate(auth, ledger)


def bearer_token(headers: Iterable[tuple[bytes, bytes]] | None) -> str | None:
    """The token of an ASGI request's ``Authorization: Bearer`` header, ``None`` without one."""
    header: Mapping[bytes, bytes] = dict(headers or ())
    scheme, _, token = header.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


async def admit_session(
    gate: CredentialGate, token: str | None, limiter: RateLimiter | None = None
) -> Principal | Turned:
    """The person whose session ``token`` is, with one request taken from their bucket in
    ``limiter``; or why the door turns them away.

    Args:
        gate: the door's credential gate.
        token: the bearer token the request carries, if any.
        limiter: the door's per-person buckets; ``None`` for a door without a rate.
    """
    try:
        principal = await gate.admit(token, Use.SESSION)
    except Refused as refused:
        return Turned(refused.status, str(refused))
    except StoreError:
        return Turned(503, STORE_DOWN)
    wait = 0.0 if limiter is None else limiter.take(principal.actor_id)
    if wait > 0:
        return Turned(429, TOO_MANY, retry_after=max(1, math.ceil(wait)))
    return principal
