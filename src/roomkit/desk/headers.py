"""The headers on the desk's responses, and the ``Host`` check in front of them.

Every response the desk sends, its errors, 404s and 500s included, carries a strict
Content-Security-Policy and ``X-Content-Type-Options: nosniff``; the API's also carry
``Cache-Control: no-store``, so that no cache keeps a question, an answer or who asked.
:class:`SecurityHeaders` guards a whole app (``create_desk_app`` adds it) and refuses a
request whose ``Host`` is not one of the desk's names (400; a WebSocket upgrade gets 403).
:func:`guard` sets the headers around one route: that is how the routes of a ``desk_router``
embedded in an application carry them, and the application's own routes do not.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roomkit.desk.limits import HostRule

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeaders", "guard"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
"""The policy on every response: the page loads only its own files, in no frame, and its
scripts connect only to the desk they came from (its WebSocket included)."""

_SECURITY = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
)
_API = (*_SECURITY, (b"cache-control", b"no-store"))

Header = tuple[bytes, bytes]


def _completed(headers: Iterable[Header], extra: tuple[Header, ...]) -> list[Header]:
    """``headers`` and those of ``extra`` they lack (a header set by the route stays)."""
    given = list(headers)
    names = {name.lower() for name, _ in given}
    return [*given, *(header for header in extra if header[0] not in names)]


async def guard(app: ASGIApp, scope: Scope, receive: Receive, send: Send, *, api: bool) -> None:
    """Run the HTTP ``app`` with the desk's headers added to its response.

    An exception that escapes before the response started is answered here, so that it too
    carries the headers: an ``HTTPException`` as ``{"detail": ...}``, anything else as a 500,
    and then raised again for the server to log.
    """
    extra = _API if api else _SECURITY
    started = False

    async def send_with_headers(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
            message = {**message, "headers": _completed(message.get("headers", ()), extra)}
        await send(message)

    try:
        await app(scope, receive, send_with_headers)
    except HTTPException as error:
        if started:
            raise
        reply = JSONResponse(
            {"detail": error.detail}, status_code=error.status_code, headers=error.headers
        )
        await reply(scope, receive, send_with_headers)
    except Exception:
        if not started:
            reply = JSONResponse({"detail": "Internal Server Error"}, status_code=500)
            await reply(scope, receive, send_with_headers)
        raise


class SecurityHeaders:
    """ASGI middleware: the desk's headers on every HTTP response, and its ``Host`` check.

    Args:
        app: the app to guard.
        hosts: the names the app answers to; the default rule when not given.
        api_prefix: responses under this path also get ``Cache-Control: no-store``.
    """

    def __init__(
        self, app: ASGIApp, *, hosts: HostRule | None = None, api_prefix: str = "/api"
    ) -> None:
        self.app = app
        self.hosts = hosts if hosts is not None else HostRule()
        self.api_prefix = api_prefix.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = next((value for name, value in scope["headers"] if name == b"host"), None)
        refusal = self.hosts.refusal(
            None if host is None else host.decode("latin-1"), scope.get("server")
        )
        if kind == "websocket":
            if refusal is not None:
                # Closing before the handshake is accepted refuses the upgrade with 403.
                await send({"type": "websocket.close", "code": 1008, "reason": ""})
                return
            await self.app(scope, receive, send)
            return
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        api = path == self.api_prefix or path.startswith(self.api_prefix + "/")
        if refusal is not None:
            reply = JSONResponse({"detail": refusal}, status_code=400)
            await guard(reply, scope, receive, send, api=api)
            return
        await guard(self.app, scope, receive, send, api=api)
