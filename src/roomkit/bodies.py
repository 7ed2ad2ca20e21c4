"""What a surface takes in a body from the network: a bounded size, and JSON that cannot hurt.

Every surface that reads a body from the network (the desk's API and its chat, Slack's clicks,
``roomkit mcp --http``, the auth frame of the desk's WebSocket) checks it here before anything
else parses it, and refuses it with a message that says what is taken instead:

- **size** (413): a declared ``Content-Length`` over :attr:`BodyLimits.max_bytes` is refused
  before a byte is read, and a streamed body as soon as it passes the cap;
- **time** (408): a body that has not arrived whole within :attr:`BodyLimits.read_timeout`
  seconds (a client that sends its body a byte at a time, or stops halfway, to hold the
  connection: slowloris) is refused, and its connection closed;
- **JSON** (400): UTF-8 text, arrays and objects nested at most :attr:`BodyLimits.max_depth`
  levels, no number literal longer than :attr:`BodyLimits.max_number_chars` characters nor
  one beyond a float's range (``1e999``), no ``NaN`` or ``Infinity``, and no object that
  names a key twice.

The nesting is measured before the parser sees the text, by steps that run in C over the
whole text and do not recurse (:mod:`roomkit._json_scan`), so no body reaches the parser's
recursion limit. A key given
twice is refused rather than read as its last value (what JavaScript and Python do) or its
first: a signed payload or an approved call must mean one thing to every reader. A lone
surrogate (``"\\ud800"``) and NUL (``"\\u0000"``) are valid JSON escapes and pass here; whatever
stores or shows the text checks it, and says where the bad character is (the desk answers 422).

:func:`load_json` checks and parses one text (a body, a form field, a WebSocket frame);
:class:`BoundedBodies` is ASGI middleware that checks the body of every HTTP request to the
app it wraps and hands the app the same bytes; :func:`bounded_route` is a FastAPI route class
that does it for a router's own routes, wherever the router is included.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    MutableMapping,
)
from dataclasses import KW_ONLY, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from roomkit._extras import requires_extra
from roomkit._json_scan import depth_over, json_depth, longest_number, outside_strings
from roomkit.core.exceptions import BodyRefusedError

if TYPE_CHECKING:
    from fastapi.routing import APIRoute

__all__ = [
    "BODY_METHODS",
    "DEFAULT_LIMITS",
    "BodyLimits",
    "BodyRefusedError",
    "BoundedBodies",
    "bounded_route",
    "check_declared_size",
    "detail_refusal",
    "json_depth",
    "json_rpc_refusal",
    "load_json",
    "read_capped",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Refusal = Callable[[BodyRefusedError], dict[str, Any]]
"""Makes the JSON answer to a refused body from its error."""
Check = Callable[[Any], None]
"""Looks at a body's JSON value once it is read; raises BodyRefusedError to refuse it."""

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods whose requests carry a body that is checked."""
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """What one body may hold; every limit is per body."""

    max_bytes: int = 256 * 1024
    """Bytes in the body; more gets 413."""
    max_depth: int = 64
    """Levels of arrays and objects nested in a JSON body; deeper gets 400."""
    max_number_chars: int = 100
    """Characters in one number literal of a JSON body; longer gets 400. A 64-bit integer
    takes 20, a float written out in full about 25."""
    read_timeout: float = 30.0
    """Seconds a body has to arrive whole, from when its headers are in; later gets 408 and
    the connection is closed (a client trickling its body in holds a connection no longer)."""

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_number_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BodyLimits.{name} must be a positive int, got {value!r}")
        timeout = self.read_timeout
        number = not isinstance(timeout, bool) and isinstance(timeout, int | float)
        if not (number and timeout > 0 and math.isfinite(timeout)):
            raise ValueError(
                f"BodyLimits.read_timeout must be a positive number of seconds, got {timeout!r}"
            )


DEFAULT_LIMITS = BodyLimits()
"""256 KiB, 64 levels, numbers of 100 characters, 30 seconds to arrive."""


# -- one text --------------------------------------------------------------------------------


def _shown(key: str) -> str:
    # ASCII only: the message goes back to the client as it is, surrogates and all.
    return ascii(key if len(key) <= 40 else key[:37] + "...")


def _first_repeated(keys: Iterable[str]) -> str:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    return ""


class _Unfit(ValueError):
    """What a parse hook found wrong, worded to follow the name of what was read."""


@lru_cache(maxsize=1)
def _decoder() -> json.JSONDecoder:
    def real(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise _Unfit(f"holds {literal}, beyond a float's range: send it as a string")
        return value

    def constant(name: str) -> Any:
        raise _Unfit(f"holds {name}, which is not a JSON number: send a number or null")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)
        if len(found) < len(pairs):
            twice = _first_repeated(key for key, _ in pairs)
            raise _Unfit(f"names the key {_shown(twice)} twice in one object: give it once")
        return found

    return json.JSONDecoder(parse_float=real, parse_constant=constant, object_pairs_hook=unique)


def _too_big(what: str, cap: int) -> BodyRefusedError:
    return BodyRefusedError(f"{what} is over the {cap}-byte limit: send less", status=413)


def load_json(
    data: bytes | bytearray | str, limits: BodyLimits = DEFAULT_LIMITS, *, what: str = "The body"
) -> Any:
    """The JSON value of ``data``, once it is checked against ``limits``.

    Args:
        data: the body, a form field or a frame: bytes in UTF-8, or text.
        limits: the size, depth and number length taken.
        what: names ``data`` at the start of a refusal's message (``"Slack's payload"``).

    Raises:
        BodyRefusedError: 413 over ``limits.max_bytes``; 400 for bytes that are not UTF-8,
            text that is not JSON, nesting deeper than ``limits.max_depth``, a number literal
            too long or out of range, ``NaN`` or ``Infinity``, or a key given twice.
    """
    if isinstance(data, str):
        text, encoded = data, data.encode("utf-8", "surrogatepass")
    else:
        encoded = bytes(data)
        if len(encoded) <= limits.max_bytes:
            try:
                text = encoded.decode("utf-8")
            except UnicodeDecodeError as error:
                raise BodyRefusedError(
                    f"{what} is not UTF-8 text (byte {error.start}): send JSON in UTF-8"
                ) from None
    if len(encoded) > limits.max_bytes:
        raise _too_big(what, limits.max_bytes)
    outside = outside_strings(encoded)
    # Counting the openers is cheap; the passes run only when they could go too deep.
    if outside.count(b"[") + outside.count(b"{") > limits.max_depth:
        depth = depth_over(outside, limits.max_depth)
        if depth is not None:
            raise BodyRefusedError(
                f"{what} nests arrays and objects {depth} levels deep; at most "
                f"{limits.max_depth} are taken"
            )
    length = longest_number(outside, limits.max_number_chars)
    if length is not None:
        raise BodyRefusedError(
            f"{what} holds a number {length} characters long; at most "
            f"{limits.max_number_chars} are taken: send a longer one as a string"
        )
    try:
        return _decoder().decode(text)
    except _Unfit as unfit:
        raise BodyRefusedError(f"{what} {unfit}") from None
    except RecursionError:  # the scan makes this unreachable; kept as the last line
        raise BodyRefusedError(f"{what} nests arrays and objects too deeply") from None
    except ValueError as error:
        raise BodyRefusedError(f"{what} is not valid JSON: {str(error)[:120]}") from None


# -- one request -----------------------------------------------------------------------------


def check_declared_size(content_length: str | None, cap: int) -> None:
    """Refuse a body whose declared ``Content-Length`` is over ``cap``, before reading it.

    Raises:
        BodyRefusedError: 413 when the length is over ``cap``.
    """
    if content_length is None:
        return
    declared = content_length.strip()
    # ASCII digits only (str.isdigit() takes "²"), and no int() of a thousand digits.
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > cap):
        raise _too_big("The body", cap)


async def read_capped(
    chunks: AsyncIterable[bytes], cap: int, *, timeout: float | None = None
) -> bytes:
    """The whole body from ``chunks``, refused as soon as it passes ``cap`` bytes, or once
    ``timeout`` seconds have passed before its end came.

    Raises:
        BodyRefusedError: 413 over ``cap``; 408 past ``timeout``.
    """
    body = bytearray()
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            async for chunk in chunks:
                body += chunk
                if len(body) > cap:
                    raise _too_big("The body", cap)
    except TimeoutError:
        if not deadline.expired():
            raise
        raise BodyRefusedError(
            f"The body did not arrive whole within {timeout:g} seconds: send it again, "
            "all of it at once",
            status=408,
        ) from None
    return bytes(body)


class _Gone(Exception):
    """The client left before its body was whole: there is no one to answer."""


async def _chunks(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _is_form(scope: Scope) -> bool:
    content_type = (_header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
    return content_type in _FORMS


def detail_refusal(error: BodyRefusedError) -> dict[str, Any]:
    """The answer to a refused body: ``{"detail": str}``, as the desk answers every error."""
    return {"detail": str(error)}


def json_rpc_refusal(error: BodyRefusedError) -> dict[str, Any]:
    """The answer to a refused body as JSON-RPC says: a parse error, or an invalid request."""
    code = -32700 if error.status == 400 else -32600
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": str(error)}}


async def _refuse(
    send: Send, error: BodyRefusedError, refusal: Refusal, status: int | None = None
) -> None:
    body = json.dumps(refusal(error), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if error.status == 408:
        # The rest of the body may never come: the connection cannot carry another request.
        headers.append((b"connection", b"close"))
    answered = error.status if status is None else status
    await send({"type": "http.response.start", "status": answered, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _bounded(
    app: ASGIApp,
    limits: BodyLimits,
    refusal: Refusal,
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int | None = None,
    check: Check | None = None,
    forms: bool = True,
) -> None:
    """Run ``app`` on the request once its body is read and checked; answer a refusal else.

    Where ``forms`` is true, a form's body (URL-encoded or multipart) is only measured: its
    fields are its reader's to check (:func:`load_json` on a field that holds JSON). Every
    other body is checked as JSON, then by ``check`` when there is one.
    """
    if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
        await app(scope, receive, send)
        return
    try:
        check_declared_size(_header(scope, b"content-length"), limits.max_bytes)
        body = await read_capped(_chunks(receive), limits.max_bytes, timeout=limits.read_timeout)
        if body and not (forms and _is_form(scope)):
            value = load_json(body, limits)
            if check is not None:
                check(value)
    except BodyRefusedError as error:
        await _refuse(send, error, refusal, status)
        return
    except _Gone:
        return
    sent = False

    async def replay() -> Message:
        # The body once, then the connection's own messages (its disconnect).
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    await app(scope, replay, send)


@dataclass(eq=False)
class BoundedBodies:
    """ASGI middleware: every HTTP request body checked (:func:`load_json`) before ``app``.

    Args:
        app: the app whose requests are checked; it reads the same bytes after.
        limits: the size, depth and number length taken.
        refusal: makes the JSON answer to a refused body; ``{"detail": str}`` by default,
            :func:`json_rpc_refusal` for a JSON-RPC endpoint.
        status: the HTTP status of every refusal; by default the error's own (413 or
            400). A JSON-RPC endpoint whose errors all travel as 200 (A2A's) gives 200.
        check: looks at each JSON body's value once it passed the limits, and raises
            :class:`BodyRefusedError` for one the app does not take (a JSON-RPC batch
            where batches are not served), so that it is answered by ``refusal`` too.
        forms: a form's body (its ``Content-Type`` URL-encoded or multipart) is only
            measured, its fields left to its reader. False checks every body as JSON, for
            an app that parses every body as JSON whatever its ``Content-Type`` says (the
            A2A SDK's routes): else a body labelled a form would reach it unchecked.
    """

    app: ASGIApp
    limits: BodyLimits = DEFAULT_LIMITS
    _: KW_ONLY
    refusal: Refusal = detail_refusal
    status: int | None = None
    check: Check | None = None
    forms: bool = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _bounded(
            self.app,
            self.limits,
            self.refusal,
            scope,
            receive,
            send,
            self.status,
            self.check,
            self.forms,
        )


def bounded_route(
    limits: BodyLimits = DEFAULT_LIMITS, *, refusal: Refusal = detail_refusal
) -> type[APIRoute]:
    """A FastAPI route class whose routes check their bodies as :class:`BoundedBodies` does.

    Use it as a router's ``route_class``: the check travels with the router into any app,
    before FastAPI parses a body. A request whose method the route does not take gets its
    405 without a byte of its body read.

    Raises:
        ImportError: FastAPI is not installed (the ``desk`` extra).
    """
    with requires_extra("bounded_route()", "desk"):
        from fastapi.routing import APIRoute

    class BoundedRoute(APIRoute):
        """Checks each request's body before FastAPI reads it."""

        async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
            if self.methods and scope.get("method") not in self.methods:
                # A method the route does not take is answered 405, its body not read.
                await super().handle(scope, receive, send)
                return
            await _bounded(super().handle, limits, refusal, scope, receive, send)

    return BoundedRoute
