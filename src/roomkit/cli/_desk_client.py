"""How the ``roomkit pending`` commands call a running desk, and what they check first.

What a person typed is checked before any call, so that a mistake in an argument is one line
and exit status 2, never a traceback or a misleading "cannot reach": ``--url`` must be an
``http://`` or ``https://`` address (a host name DNS takes, a port from 1 to 65535),
``--timeout`` a positive number of seconds, the token text a header can carry, a request id
no longer than the desk takes and without a path separator or a control character, a
``--digest`` of 64 hex digits, and every text that goes to the desk valid UTF-8 (an argument
holding bytes that are not, which Python reads as lone surrogates, is named). A JSON object
typed on the command line is read strictly: no ``NaN`` or infinite number, and no key given
twice (the desk refuses both in a body; the command says so first, instead of sending one
reading of it); one nested deeper than Python reads is refused too. Arguments read from
standard input (``pending edit ID -``) are UTF-8, and no longer than any request's arguments
may be.

A desk that cannot be reached, a URL that answers as no desk does, or a desk that refuses,
is one line and exit status 1: the line says what to do (start the desk, or point ``--url``
at it; give it longer with ``--timeout``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from typing import Any

from roomkit._storable import unencodable_text
from roomkit.cli._common import Failure, printable

__all__ = [
    "DEFAULT_URL",
    "MAX_ID_CHARS",
    "TOKEN_ENV",
    "call",
    "check_typed",
    "standard_input",
    "strict_json",
]

TOKEN_ENV = "ROOMKIT_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8765"
MAX_ID_CHARS = 256
"""The longest request id the desk takes in a path."""
_PASSWORD = re.compile(r"^([^:/?#]*://[^:/?#@]*):[^/?#]*@")
"""The password in a URL's user information, and what comes before it."""
_NO_REQUEST = "Request not found"
"""What the desk says of a request id it does not know, or that is not the caller's."""
_DIGEST = re.compile(r"[0-9a-f]{64}")
"""An arguments digest, as the desk prints and takes it."""

_TYPED = {
    "id": "The request id",
    "answer": "The answer",
    "reason": "--reason",
    "result": "The result",
    "arguments": "The arguments",
    "room": "--room",
    "digest": "--digest",
    "url": "--url (or $ROOMKIT_DESK_URL)",
}
"""The arguments that travel to the desk, as an error names each."""


def check_typed(args: argparse.Namespace) -> None:
    """Exit 2 for a typed argument the desk could never take (each command checks first,
    before it builds a path from them).

    Raises:
        Failure: an argument holds bytes that are not UTF-8, the id is empty, a dot
            segment of a path, too long, or holds a ``/``, a ``\\`` or a control character,
            or ``--digest`` is not one.
    """
    for name, what in _TYPED.items():
        value = getattr(args, name, None)
        if isinstance(value, str) and unencodable_text(value) is not None:
            raise Failure(
                f"{what} holds bytes that are not UTF-8 text: type it again in UTF-8 (check "
                "the terminal's encoding)",
                2,
            )
    digest = getattr(args, "digest", None)
    if isinstance(digest, str) and digest and not _DIGEST.fullmatch(digest):
        raise Failure(
            f"--digest takes the 64 hex digits `roomkit pending show` prints after digest:, "
            f"got {printable(digest, 80)!r}",
            2,
        )
    pending_id = getattr(args, "id", None)
    if isinstance(pending_id, str):
        _check_id(pending_id)


def _check_id(pending_id: str) -> None:
    """Exit 2 for an id no request has, before it is put in a path: there it would name
    another route, and the desk's answer would blame ``--url``."""
    if pending_id in ("", ".", ".."):
        # In a path, "." and ".." name the folder above: the call would reach another route.
        raise Failure(
            f"{pending_id!r} is not a request id: give one `roomkit pending list` shows", 2
        )
    if len(pending_id) > MAX_ID_CHARS:
        raise Failure(
            f"{printable(pending_id, 40)} is not a request id: ids are at most {MAX_ID_CHARS} "
            "characters (`roomkit pending list` shows them)",
            2,
        )
    if "/" in pending_id or "\\" in pending_id or not pending_id.isprintable():
        raise Failure(
            f"'{printable(pending_id, 80)}' is not a request id: ids hold no / or \\ and no "
            "control character (`roomkit pending list` shows them)",
            2,
        )


def _checked_url(url: str) -> str:
    """``url`` without its trailing slashes, once it is an address httpx can call.

    Raises:
        Failure: it is not an ``http://`` or ``https://`` URL with a host, it carries a user
            name or password, its host is no name DNS takes, or its port is not one from 1
            to 65535 (exit 2).
    """
    import httpx

    try:
        parsed: httpx.URL | None = httpx.URL(url)
        # Reading the host decodes an IDNA name (xn--...): one that is not valid raises.
        host = parsed.host if parsed is not None else ""
    except (httpx.InvalidURL, ValueError):
        parsed, host = None, ""
    if parsed is None or parsed.scheme not in ("http", "https") or not host:
        raise Failure(
            f"--url (or $ROOMKIT_DESK_URL) takes the desk's http:// or https:// address, such "
            f"as {DEFAULT_URL}; got {_shown(url, 200)!r}",
            2,
        )
    try:
        parsed.raw_host.decode("ascii").encode("idna")
    except UnicodeError:
        raise Failure(
            f"--url (or $ROOMKIT_DESK_URL) names the host {printable(host, 80)!r}, which is no "
            "name DNS takes (each part between dots is 1 to 63 characters): give the desk's "
            f"address, such as {DEFAULT_URL}",
            2,
        ) from None
    if parsed.userinfo:
        # httpx would send them as Basic credentials in place of the token.
        raise Failure(
            f"--url (or $ROOMKIT_DESK_URL) carries a user name or password ({_shown(url, 200)}), "
            "which the desk does not take: drop them, since the token is what signs in",
            2,
        )
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise Failure(
            f"--url (or $ROOMKIT_DESK_URL) names the port {parsed.port}, and a port is 1 to "
            f"65535: give the one the desk listens on, such as {DEFAULT_URL}",
            2,
        )
    return url.rstrip("/")


def _shown(url: str, limit: int = 120) -> str:
    """``url`` for a message: without the password it may carry (``http://user:pw@host``)."""
    return printable(_PASSWORD.sub(r"\1@", url), limit)


def _unreachable(url: str, error: Exception, timeout: float) -> Failure:
    """The line for a desk at ``url`` that a call could not reach (exit 1)."""
    import httpx

    if isinstance(error, httpx.TimeoutException):
        return Failure(
            f"The desk at {_shown(url)} did not answer within {timeout:g} seconds: check "
            "that it is running there, or give it longer with --timeout"
        )
    # "[Errno 111] Connection refused" says it in its words, after the number.
    why = re.sub(r"^\[Errno -?\d+\] ", "", str(error)) or type(error).__name__
    return Failure(
        f"The desk at {_shown(url)} cannot be reached ({printable(why, 200)}): start it "
        "(`roomkit desk`), or pass --url (or set $ROOMKIT_DESK_URL) to the address it "
        "listens on"
    )


def _token(args: argparse.Namespace) -> str:
    """The token to send: ``--token``, else ``$ROOMKIT_TOKEN``.

    Raises:
        Failure: there is none, or it holds what no header carries (exit 2).
    """
    token: str | None = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise Failure(f"No token: pass --token or set {TOKEN_ENV}", 2)
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise Failure(
            "The token holds characters no desk token has (spaces, line breaks or letters "
            "beyond ASCII): pass it as `roomkit token ACTOR` printed it",
            2,
        )
    return token


def _timeout(args: argparse.Namespace) -> float:
    seconds: float = args.timeout
    if not (math.isfinite(seconds) and seconds > 0):
        raise Failure(f"--timeout takes a positive number of seconds, got {seconds}", 2)
    return seconds


def call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    """The desk's JSON answer to ``method path`` (with ``body`` as JSON).

    Raises:
        Failure: an argument the desk could never take, or a URL no desk can have (exit
            2); the desk cannot be reached, the URL answers as no desk does, or the desk
            refuses the token (401), knows no such request (404), or refuses the call
            (exit 1).
    """
    import httpx

    check_typed(args)
    url = _checked_url(args.url)
    token = _token(args)
    timeout = _timeout(args)
    try:
        response = httpx.request(
            method,
            f"{url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
    except httpx.InvalidURL as error:
        raise Failure(f"Cannot call the desk at {_shown(url)}: {error}", 2) from None
    except httpx.TransportError as error:
        raise _unreachable(url, error, timeout) from None
    try:
        data = response.json()
    except ValueError:
        data = None
    detail = data.get("detail") if isinstance(data, dict) else None
    if response.status_code == 401:
        raise Failure(f"The desk refused the token: {detail or 'unauthorized'}")
    if response.status_code == 404 and detail is None:
        # The desk words every 404 as {"detail": ...}: this server is something else.
        raise Failure(
            f"{_shown(url)} answered 404 Not Found, without the desk's JSON: it is no "
            "roomkit desk; pass --url (or set $ROOMKIT_DESK_URL) to the desk's address"
        )
    if response.status_code == 404 and detail != _NO_REQUEST:
        # The desk's 404 for a path it has no route for: --url names a path no desk is at.
        raise Failure(
            f"{_shown(url)} answered 404 ({printable(str(detail), 80)}) for its API: no desk "
            "is at that path; pass --url (or set $ROOMKIT_DESK_URL) to the desk's address, "
            f"such as {DEFAULT_URL}"
        )
    if response.status_code == 404:
        raise Failure(f"No such request (unknown, or not yours): {printable(args.id)}")
    if response.status_code >= 400 or not isinstance(data, dict):
        why = printable(str(detail or ""), 1000)
        raise Failure(f"The desk refused it: {why}" if why else "The desk refused it")
    return data


def standard_input() -> str:
    """What standard input holds, as UTF-8 text.

    Raises:
        Failure: it is closed, cannot be read, longer than any request's arguments, or not
            UTF-8 (exit 2).
    """
    from roomkit.models.json_limits import MAX_ARGUMENTS_CHARS

    if sys.stdin is None:
        raise Failure(
            "Standard input is closed, so - reads nothing: send the arguments on it "
            "(`roomkit pending edit ID - < arguments.json`)",
            2,
        )
    # However it is spaced or escaped, no request keeps arguments longer than this: reading
    # on (`< /dev/zero`) would only fill the memory.
    most = 12 * MAX_ARGUMENTS_CHARS + 64 * 1024
    try:
        data = sys.stdin.buffer.read(most + 1)
    except OSError as error:
        raise Failure(
            f"Standard input cannot be read ({error.strerror or error}): send the arguments "
            "on it from a file or a pipe (`roomkit pending edit ID - < arguments.json`)",
            2,
        ) from None
    if len(data) > most:
        raise Failure(
            f"Standard input holds more than {most:,} bytes, longer than the arguments of any "
            "request: send the arguments alone, as one JSON object",
            2,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Failure(
            f"Standard input is not UTF-8 text (byte {error.start}): send the arguments as "
            "JSON in UTF-8",
            2,
        ) from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"it names the key {printable(key, 60)!r} twice: give it once")
        found[key] = value
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{printable(text, 40)} is beyond a float's range: send it as a string")
    return number


def strict_json(text: str) -> Any:
    """``text`` as JSON the desk takes: no ``NaN`` or infinity, no key given twice.

    Raises:
        ValueError: it is not such JSON (the message says why).
    """
    try:
        return json.loads(
            text, object_pairs_hook=_unique, parse_constant=_no_constant, parse_float=_finite
        )
    except RecursionError:
        raise ValueError("it nests lists or objects too deep to read: send less depth") from None
