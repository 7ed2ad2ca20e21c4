"""OPA over HTTP: each call is a query of OPA's Data API (``httpx``).

``POST <url>/v1/data/<path>`` with ``{"input": <the call>}``; the response's ``result`` is read
as :func:`~roomkit.policy._base.read_result` reads a Rego result (``{"decision": ...,
"reason": ...}`` or ``{"allow": bool}``); no ``result`` (the rule is undefined) or any other
shape is ``Abstain``. A status other than 200, a body that is not JSON (or nests too deep
to read), a connection that fails, an answer over :data:`MAX_ANSWER_BYTES` (read no
further) or a query slower than ``timeout`` is a failure of the back end: ``on_error``
decides, and the failure is logged and recorded.

The call is sent as UTF-8 JSON, a lone surrogate in its text (which UTF-8 has none of) as
``?``; one in its actor or tool is refused, naming which, as ``?`` could name another.

The policy holds one HTTP client, made when the policy is built (making one blocks the event
loop for a while) and kept for every query, with its connections to OPA, on the event loop of
its first query (another loop's queries get a client of their own).
:meth:`OPAPolicy.aclose` (or ``async with``) closes it; a query after that makes another.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self, Unpack
from urllib.parse import urlsplit

from roomkit._urls import http_url
from roomkit.policy._base import (
    PolicyBase,
    PolicyError,
    PolicyOptions,
    check_ids,
    read_result,
    utf8_json,
)
from roomkit.policy._offloop import checked_timeout
from roomkit.policy.decisions import Abstain, PolicyCall, PolicyDecision

__all__ = ["MAX_ANSWER_BYTES", "OPAPolicy"]

MAX_ANSWER_BYTES = 1024 * 1024
"""The most bytes of an answer read from OPA (1 MiB: a decision takes a few hundred); one
holding more is a failure of the back end, read no further."""


_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
"""A header's name, as HTTP has it (a token)."""

_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t\x21-\x7e]*[\x21-\x7e])?)?")
"""A header's value HTTP carries: no control character, no space or tab at either end."""

_JSON = {"Content-Type": "application/json"}
"""The type of each query's body, which the policy writes itself (as UTF-8 text)."""


class OPAPolicy(PolicyBase):
    """An OPA server deciding each call through its Data API.

    Args:
        url: the server's base URL (``http://127.0.0.1:8181``).
        path: the rule's path under ``/v1/data`` (``roomkit/decision``).
        timeout: seconds a query may take (connecting included).
        headers: sent with each query (an ``Authorization`` header, say).
        **options: ``name``, ``shadow`` and ``on_error`` (:class:`PolicyOptions`).

    Raises:
        PolicyError: ``url`` is not an http(s) URL (or holds a user name or password, a query
            or a fragment, names no host, or a port outside 1 to 65535), ``path`` names no
            rule, a header is not ASCII text or not one HTTP carries (a value with a line
            break, or a space at either end), or ``timeout`` is not a positive number of
            seconds, at most a century.
        ImportError: ``httpx`` is not installed (the ``opa`` extra).
    """

    engine = ("opa", "httpx", "opa")

    def __init__(
        self,
        url: str,
        path: str = "roomkit/decision",
        *,
        timeout: float = 2.0,
        headers: Mapping[str, str] | None = None,
        **options: Unpack[PolicyOptions],
    ) -> None:
        super().__init__(**options)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise PolicyError(f"OPAPolicy url is an http(s) URL, got {url!r}")
        _check_url(url)
        if not isinstance(path, str) or not path.strip("/"):
            raise PolicyError(
                f"OPAPolicy path is the rule's path under /v1/data (roomkit/decision), got {path!r}"
            )
        self.timeout = checked_timeout(timeout, "OPAPolicy")
        self.endpoint = f"{url.rstrip('/')}/v1/data/{path.strip('/')}"
        self.headers = dict(headers or {})
        for key, value in self.headers.items():
            if not (isinstance(key, str) and isinstance(value, str) and (key + value).isascii()):
                shown = repr(key)[:40] if isinstance(key, str) else f"named by {type(key).__name__}"
                raise PolicyError(
                    f"OPAPolicy headers name and give each as ASCII text, and the header {shown} "
                    "does not (a token read from a variable that is not set is None)"
                )
            if not (_NAME.fullmatch(key) and _VALUE.fullmatch(value)):
                # HTTP refuses it at every query: the policy would never decide.
                raise PolicyError(
                    f"OPAPolicy header {repr(key)[:40]}: a header's name is one word of letters, "
                    "digits and -, and its value printable text with no space at either end "
                    "(a token read with its line break, say): strip it"
                )
        self.version = self.endpoint
        self._client: Any = self._new_client()
        """The HTTP client the queries share (``None`` once closed)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop of the client's first query: its connections belong to it."""

    def _new_client(self) -> Any:
        """An HTTP client whose queries say their body is JSON (unless ``headers`` say else)."""
        return self.module.AsyncClient(timeout=self.timeout, headers=_JSON)

    def _http(self) -> Any:
        """The client for a query on the running loop (made when there is none for it)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop not in (None, loop):
            # A client used on another loop is left as it is: its connections are that loop's.
            self._client = self._new_client()
        self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client and its connections (a later query makes a new one)."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def decide(self, call: PolicyCall) -> PolicyDecision:
        """OPA's result on ``call``, as one of the four decisions.

        Raises:
            RuntimeError: OPA answered with an error status, a body that is not JSON, one
                nesting too deep to read, or one over :data:`MAX_ANSWER_BYTES`.
            httpx.HTTPError: the query failed.
            TimeoutError: the whole query took longer than ``timeout`` (httpx's own bound
                is on each read: an answer trickling in a byte at a time never meets it).
            ValueError: the call holds a number JSON cannot carry (NaN, an infinity).
            InvalidTextError: the call's ``actor`` or ``tool`` holds text UTF-8 cannot
                encode (a lone surrogate); the message names it.
        """
        check_ids(call, "an OPA call", "no OPA input can hold")
        body = utf8_json({"input": call.to_input()}).encode()
        client = self._http()
        try:
            async with (
                asyncio.timeout(self.timeout),
                client.stream(
                    "POST", self.endpoint, content=body, headers=self.headers
                ) as response,
            ):
                if response.status_code != 200:
                    raise RuntimeError(f"OPA answered {response.status_code} at {self.endpoint}")
                text = await self._read(response)
        except TimeoutError:
            raise TimeoutError(
                f"OPA took longer than {self.timeout:g} s to answer at {self.endpoint}"
            ) from None
        try:
            body = json.loads(text)
        except ValueError:
            raise RuntimeError(f"OPA's answer at {self.endpoint} is not JSON") from None
        except RecursionError:
            # A decision document nests a level or two; this one cannot be one.
            raise RuntimeError(
                f"OPA's answer at {self.endpoint} nests too deep to read, and is no decision "
                "document: point the policy's path at the rule that gives the decision"
            ) from None
        if not isinstance(body, dict) or "result" not in body:
            return Abstain(f"{self.endpoint} is undefined")
        return read_result(body["result"])

    async def _read(self, response: Any) -> bytes:
        """The answer's body, at most :data:`MAX_ANSWER_BYTES` of it.

        Raises:
            RuntimeError: the answer holds more (or says it will).
        """
        too_big = (
            f"OPA's answer at {self.endpoint} holds more than {MAX_ANSWER_BYTES} bytes: "
            "point the policy's path at the rule that gives the decision"
        )
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > MAX_ANSWER_BYTES:
            raise RuntimeError(too_big)
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > MAX_ANSWER_BYTES:
                raise RuntimeError(too_big)
        return bytes(data)


def _check_url(url: str) -> None:
    """Refuse a URL the rule's path cannot follow, or one holding credentials (the endpoint
    is each decision's recorded ``version``): the message does not quote it.

    Raises:
        PolicyError: ``url`` holds a user name or password, a query or a fragment, names no
            host, or a port that is no number from 1 to 65535.
    """
    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # an IPv6 host's bracket left open: told below
        netloc = ""
    if "@" in netloc:
        raise PolicyError(
            "OPAPolicy url holds a user name or password, which every decision's history "
            "would record: give the server's URL without them, and the credentials as "
            "headers={'Authorization': ...}"
        )
    for mark, name in (("?", "query"), ("#", "fragment")):
        if mark in url:
            raise PolicyError(
                f"OPAPolicy url holds a {name} ({mark}...), which the rule's path would follow "
                "(each query would go elsewhere): give the server's URL alone, the rule's "
                "path as path= and a token as headers={'Authorization': ...}"
            )
    try:
        # Checked here: a port out of range or no number would fail every decision in httpx.
        http_url(url, "OPAPolicy url")
    except ValueError as error:
        raise PolicyError(str(error)) from None
