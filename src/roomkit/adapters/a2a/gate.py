"""``A2AGate``: the SDK's A2A routes behind a person's desk token.

Each HTTP request's ``Authorization: Bearer`` token goes through the one credential gate
(:class:`~roomkit.auth.gate.CredentialGate`, a person's own session,
:attr:`~roomkit.auth.gate.Use.SESSION`): without a valid, unrevoked person's token the
request gets a 401 and never reaches the routes; with one, the token's subject is the
Starlette user the SDK's call context names, so :class:`~roomkit.adapters.a2a.RoomKitExecutor`
asks and answers as them. As on the desk and the AG-UI endpoint, a request whose ``Host`` is
not a name the door answers to (:class:`~roomkit.auth.traffic.HostRule`, against DNS
rebinding) gets a 400, and a person over their rate (:class:`~roomkit.auth.traffic.RateLimiter`)
a 429 with ``Retry-After``. The agent card (a route declared under ``/.well-known/``) is
served to anyone whose ``Host`` the door answers to; the SDK's ``/{tenant}`` routes are not,
with the tenant ``.well-known`` either.

The caller is admitted before a byte of its body is read: a request without a valid token
is refused on its head alone, so it cannot make the server read, let alone parse, what it
sends. On the SDK's JSON-RPC routes every refusal is a JSON-RPC error object, which a
JSON-RPC client reads (a refused credential's with a null ``id``, since the request was not
read); on the others (REST) it stays text for a credential and ``{"detail": ...}`` for a
body. A method a route does not take (``PUT /rpc``, ``DELETE /message:send``,
``GET /tasks/{id}:cancel``) is answered 405, with the ``Allow`` its path takes, on the SDK's
``/{tenant}`` paths as on the others (where the SDK's router would answer 404:
:func:`~roomkit.adapters.a2a._rpc.route_of`), and its body is not read either.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection, Iterable, MutableMapping
from typing import Any

from starlette.authentication import SimpleUser

from roomkit.adapters.a2a._rpc import refuse, route_of
from roomkit.auth.authenticator import Authenticator
from roomkit.auth.door import Turned, admit_session, bearer_token, session_gate
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.traffic import HostRule, RateLimiter
from roomkit.bodies import BoundedBodies, json_rpc_refusal
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["A2AGate"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class A2AGate:
    """An ASGI app: ``app`` behind the desk's tokens, its request bodies checked as the
    other doors check theirs (over 256 KiB: 413; nested too deep, or not JSON: 400).

    A request to one of the SDK's JSON-RPC routes in ``app`` (``create_jsonrpc_routes``,
    found among ``app.routes`` and the apps mounted there) is refused with a JSON-RPC error
    object: a refused credential with the status above (401 keeps its ``WWW-Authenticate``),
    a foreign ``Host`` (400) or a caller over its rate (429, with ``Retry-After``), each with
    code -32000 and a null ``id`` (its body is not read), a refused body as the SDK refuses
    one (HTTP 200, -32600 over the size limit, -32700 else); elsewhere these refusals are
    ``text/plain``. An admitted request whose method no route on its path takes gets its
    405 (``text/plain``, with ``Allow``) here, its body unread.

    Args:
        app: the A2A routes (a Starlette or FastAPI app, or one wrapped in middleware,
            whose routes are read through it).
        handler: the handler whose store's ledger holds the revoked tokens.
        auth: turns bearer tokens into principals, as the desk's option of that name.
        secret: the desk's secret (else ``ROOMKIT_DESK_SECRET``, else the key file), as
            the desk's option.
        data_dir: where that key file lives, as the desk's option.
        allowed_hosts: as the desk's option: ``Host`` names answered besides addresses,
            ``localhost`` and the server's own (others get 400).
        rate: the requests a person may make per second, on average (then 429).
        burst: the requests a person may make at once, before ``rate`` applies.

    Raises:
        TypeError, ValueError: ``allowed_hosts`` is one string, or holds no host name; the
            secret is too short; ``rate`` is no positive number, or ``burst`` no positive
            int.
    """

    def __init__(
        self,
        app: Any,
        *,
        handler: HumanInputHandler,
        auth: Authenticator | None = None,
        secret: str | bytes | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        allowed_hosts: Collection[str] | None = None,
        rate: float = 20.0,
        burst: int = 40,
    ) -> None:
        self.routes = app
        """The app whose routes say which requests are JSON-RPC ones."""
        # Bodies are checked as every other door checks them (size, depth, numbers), once
        # the caller is known and before the SDK parses them. The SDK parses every body as
        # JSON, whatever its Content-Type: one labelled a form is checked as JSON too.
        self.app = BoundedBodies(app, forms=False)
        self.json_rpc_app = BoundedBodies(app, refusal=json_rpc_refusal, status=200, forms=False)
        self.gate = session_gate(LinkLedger(handler.ledger), auth, secret, data_dir)
        self.hosts = HostRule(allowed_hosts)
        """The ``Host`` names the door answers to."""
        self.limiter = RateLimiter(rate, burst)
        """Each person's requests: ``burst`` at once, then ``rate`` per second."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        routed = route_of(self.routes, scope)
        json_rpc = routed.json_rpc
        host = next((v for k, v in scope.get("headers") or () if k == b"host"), None)
        refusal = self.hosts.refusal(
            None if host is None else host.decode("latin-1"), scope.get("server")
        )
        if refusal is not None:
            await _refuse(send, json_rpc, 400, refusal)
            return
        if not routed.public:
            token = bearer_token(scope.get("headers"))
            admitted = await admit_session(self.gate, token, self.limiter)
            if isinstance(admitted, Turned):
                retry = admitted.retry_after
                headers = [] if retry is None else [(b"retry-after", b"%d" % retry)]
                await _refuse(send, json_rpc, admitted.status, admitted.message, headers=headers)
                return
            scope["user"] = SimpleUser(admitted.actor_id)
        if routed.allowed:
            # Refused for its method here, where the router could answer 404 (a mount
            # taking the path, a parameter taking a verb): its body is not read either.
            await _plain(send, 405, "Method Not Allowed", allow=routed.allowed)
            return
        await (self.json_rpc_app if json_rpc else self.app)(scope, receive, send)


async def _refuse(
    send: Send,
    json_rpc: bool,
    status: int,
    message: str,
    *,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    # The body is not read for a caller not admitted: a JSON-RPC refusal names no id.
    if json_rpc:
        await refuse(send, status, message, None, headers=headers)
    else:
        await _plain(send, status, message, extra=headers)


async def _plain(
    send: Send,
    status: int,
    message: str,
    *,
    allow: frozenset[str] = frozenset(),
    extra: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *extra]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="roomkit"'))
    if allow:
        headers.append((b"allow", ", ".join(sorted(allow)).encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": message.encode()})
