"""``A2AGate``: the SDK's A2A routes behind a person's desk token.

Each HTTP request's ``Authorization: Bearer`` token goes through the one credential gate
(:class:`~roomkit.auth.gate.CredentialGate`, a person's own session,
:attr:`~roomkit.auth.gate.Use.SESSION`): without a valid, unrevoked person's token the
request gets a 401 and never reaches the routes; with one, the token's subject is the
Starlette user the SDK's call context names, so :class:`~roomkit.adapters.a2a.RoomKitExecutor`
asks and answers as them. The agent card (``/.well-known/...``) is served to anyone.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.authentication import SimpleUser

from roomkit.auth.authenticator import Authenticator, TokenAuthenticator
from roomkit.auth.gate import CredentialGate, Refused, Use
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.tokens import resolve_secret
from roomkit.bodies import BoundedBodies
from roomkit.core.exceptions import StoreError
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["A2AGate"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
PUBLIC_PREFIX = "/.well-known/"


class A2AGate:
    """An ASGI app: ``app`` behind the desk's tokens, its request bodies checked as the
    other doors check theirs (over 256 KiB: 413; nested too deep, or not JSON: 400).

    Args:
        app: the A2A routes (a Starlette or FastAPI app).
        handler: the handler whose store's ledger holds the revoked tokens.
        auth: turns bearer tokens into principals, as the desk's option of that name.
        secret: the desk's secret (else ``ROOMKIT_DESK_SECRET``, else the key file), as
            the desk's option.
        data_dir: where that key file lives, as the desk's option.
    """

    def __init__(
        self,
        app: Any,
        *,
        handler: HumanInputHandler,
        auth: Authenticator | None = None,
        secret: str | bytes | None = None,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if auth is None:
            auth = TokenAuthenticator(resolve_secret(secret, data_dir=data_dir))
        # Bodies are checked as every other door checks them (size, depth, numbers), once
        # the caller is known and before the SDK parses them.
        self.app = BoundedBodies(app)
        self.gate = CredentialGate(auth, LinkLedger(handler.ledger))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith(PUBLIC_PREFIX):
            header = dict(scope.get("headers") or ()).get(b"authorization", b"")
            scheme, _, token = header.decode("latin-1").partition(" ")
            try:
                principal = await self.gate.admit(
                    token.strip() if scheme.lower() == "bearer" else None, Use.SESSION
                )
            except Refused as refused:
                await _plain(send, refused.status, str(refused))
                return
            except StoreError:
                await _plain(send, 503, "The store cannot be reached to check the token")
                return
            scope["user"] = SimpleUser(principal.actor_id)
        await self.app(scope, receive, send)


async def _plain(send: Send, status: int, message: str) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="roomkit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": message.encode()})
