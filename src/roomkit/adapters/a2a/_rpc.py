"""What the gate answers on the SDK's JSON-RPC routes: JSON-RPC 2.0 error objects.

A JSON-RPC client reads every answer as a JSON-RPC response, so a refusal on a JSON-RPC route
is one: ``{"jsonrpc": "2.0", "id": null, "error": {"code", "message", "data"}}``, its id null
since a caller not admitted has none of its body read. A refused credential keeps the HTTP
status A2A gives it (401 with its ``WWW-Authenticate`` challenge, 403), as does a ``Host``
the door does not answer to (400) and a caller over its rate (429, with ``Retry-After``),
each with the code JSON-RPC leaves to the server (-32000) and a ``google.rpc.ErrorInfo``
detail naming the reason; a store that cannot be reached is a 503 with the internal
error's code. A refused
body is answered as the SDK answers a body it cannot take: HTTP 200, a parse error (-32700)
or an invalid request (-32600).

:func:`route_of` tells a request to one of the SDK's JSON-RPC routes (the routes
``create_jsonrpc_routes`` makes, served by its ``JsonRpcDispatcher``) from the others, and
names the methods a path takes when no route there takes the request's own, even where
Starlette's router would answer it 404 (through the SDK's ``/{tenant}`` mount). It also says
whether the route taking a request is declared under ``/.well-known/`` (the agent card's),
which the gate serves to anyone: a path under it that the SDK's ``/{tenant}`` mount takes
(``/.well-known/message:send``, tenant ``.well-known``) is an A2A call like any other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from starlette.routing import Match

__all__ = ["PUBLIC_PREFIX", "SERVER_ERROR", "Routed", "refuse", "route_of"]

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

SERVER_ERROR = -32000
"""The code of a refused credential: JSON-RPC's own server-error code, which A2A's codes
(-32001 and below) leave free."""
INTERNAL_ERROR = -32603
"""JSON-RPC's internal error: what A2A names for a server that cannot answer now."""
REASONS = {
    400: "HOST_NOT_ALLOWED",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RATE_LIMIT_EXCEEDED",
    503: "UNAVAILABLE",
}
"""The ``ErrorInfo`` reason of each status the gate answers with."""
CHALLENGE = b'Bearer realm="roomkit"'
"""The ``WWW-Authenticate`` challenge of every 401."""
_PARAMETER = re.compile(r"{[^}]*}")
"""A parameter in a route's path template."""
PUBLIC_PREFIX = "/.well-known/"
"""Where the routes served to anyone are declared: the agent card's."""


@dataclass(frozen=True, slots=True)
class Routed:
    """Where the app's router sends a request."""

    json_rpc: bool = False
    """Whether it goes to one of the SDK's JSON-RPC routes (or would, but for its method)."""
    allowed: frozenset[str] = frozenset()
    """The methods its path takes when no route takes its own: answered 405. Empty when a
    route takes it, or none takes its path."""
    taken: bool = False
    """Whether a route takes it, path and method."""
    public: bool = False
    """Whether the route taking it is declared under :data:`PUBLIC_PREFIX` (the agent
    card's), not merely reached by a path there through a mount's parameter."""


def route_of(app: Any, scope: Scope) -> Routed:
    """Where ``app``'s router sends ``scope``, as Starlette's router matches it (the first
    full match, else the first match on the path alone), through mounted apps, except where
    that match would answer a method a route of the path does not take with a 404: a mount
    that takes the path (the SDK's ``/{tenant}``) but holds no route for it, or a route whose
    parameter takes a path a more specific route names (``GET /tasks/{id}`` reading
    ``/tasks/t1:cancel`` as task ``t1:cancel``). Those are the methods' 405. An app wrapped
    in middleware (``CORSMiddleware(app)``) is read through to the routes it wraps; one
    without routes has no JSON-RPC route, takes every method, and serves its paths under
    :data:`PUBLIC_PREFIX` to anyone."""
    routes = _routes(app)
    if routes is None:
        return Routed(public=str(scope.get("path", "")).startswith(PUBLIC_PREFIX))
    return _matched(routes, scope, "")


def _routes(app: Any) -> Iterable[Any] | None:
    """The routes of ``app``, or of the app its middleware wraps (each keeps it as ``app``,
    as Starlette's do); ``None`` when none has routes."""
    for _ in range(_WRAPPERS):
        routes: Iterable[Any] | None = getattr(app, "routes", None)
        if routes is not None:
            return routes
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


_WRAPPERS = 64
"""The most middleware read through to find the routes."""


def _matched(routes: Iterable[Any], scope: Scope, declared: str) -> Routed:
    """``scope``'s route among ``routes``, declared under the path template ``declared``."""
    partial: list[Any] = []
    chosen: tuple[Any, Routed] | None = None
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL and chosen is None:
            inner = getattr(route, "routes", None)
            template = declared + str(getattr(route, "path", ""))
            if inner is not None:  # a mount or a host: its own routes decide
                chosen = (route, _matched(inner, {**scope, **child}, template))
            else:
                public = template.startswith(PUBLIC_PREFIX)
                chosen = (route, Routed(json_rpc=_dispatches(route), taken=True, public=public))
        elif match is Match.PARTIAL:
            partial.append(route)
    # Of the routes naming the path, the most specific say what it is: ``/tasks/t1:cancel``
    # is the cancel route's path, not task ``t1:cancel``.
    most = max((_literal(route) for route in partial), default=-1)
    partial = [route for route in partial if _literal(route) == most]
    if chosen is not None:
        route, routed = chosen
        if getattr(route, "routes", None) is not None:
            # A mount that holds no route for the path gives way to those that name it.
            if routed.taken or routed.allowed or not partial:
                return routed
        elif _literal(route) >= most:
            return routed
    if not partial:
        return Routed()
    # The 405 names every method the path takes, whichever of its routes takes it.
    allowed = frozenset(m for route in partial for m in getattr(route, "methods", None) or ())
    return Routed(json_rpc=_dispatches(partial[0]), allowed=allowed)


def _literal(route: Any) -> int:
    """How much of ``route``'s path is written out rather than a parameter."""
    return len(_PARAMETER.sub("", str(getattr(route, "path", ""))))


def _dispatches(route: Any) -> bool:
    owner = getattr(getattr(route, "endpoint", None), "__self__", None)
    return isinstance(owner, JsonRpcDispatcher)


async def refuse(
    send: Send,
    status: int,
    message: str,
    rpc_id: str | int | None,
    *,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """Answer a refused request as a JSON-RPC error with ``status`` and ``headers``."""
    code = INTERNAL_ERROR if status >= 500 else SERVER_ERROR
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": REASONS.get(status, "REFUSED"),
        "domain": "roomkit",
        "metadata": {},
    }
    answer = {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "error": {"code": code, "message": message, "data": [info]},
    }
    body = json.dumps(answer, separators=(",", ":")).encode()
    sent = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 401:
        sent.append((b"www-authenticate", CHALLENGE))
    sent.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": body})
