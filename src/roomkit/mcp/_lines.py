"""Over stdio, each line checked as an HTTP body is, before the SDK's parser reads it.

The SDK's parser takes a key given twice as its last value: ``{"id": 1, "id": 2}`` would be
answered as request 2, and a call naming ``arguments`` twice would run with the second. A
message must mean one thing to every reader, so each line goes through
:func:`roomkit.bodies.load_json` first, as every body of ``roomkit mcp --http`` does: a key
given twice, nesting too deep, a number too long or out of range, ``NaN``, or a line over
the size limit is refused. :class:`CheckedLines` answers a refused line on the write
stream and never hands it to the parser: a request that names one readable id gets an
invalid-request error under that id, any other line a parse error under ``null`` (JSON-RPC's
answer when the id cannot be known), and a notification is dropped with a warning, since a
notification is never answered. The next line is served as usual.

:func:`client_stdin` opens stdin for the transport the way the SDK opens it for itself:
fd 0 points at the null device while serving, so that neither a handler nor a child process
reads the client's messages.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
from collections.abc import AsyncIterable, Iterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from roomkit.bodies import DEFAULT_LIMITS, BodyRefusedError, json_depth, load_json
from roomkit.mcp._unreadable import error_answer, readable_id

__all__ = ["CheckedLines", "client_stdin"]

logger = logging.getLogger("roomkit.mcp")


class CheckedLines:
    """The client's lines, each checked (:func:`~roomkit.bodies.load_json`) before the
    transport's parser reads it; a refused line is answered on the write stream instead.

    Give it to the SDK's ``stdio_server(stdin=...)``, then :meth:`answer_on` its write
    stream: a line refused before that is answered once it is given.

    Args:
        lines: the lines read from the client.
    """

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = aiter(lines)
        self._write: Any = None
        self._writable = anyio.Event()

    def answer_on(self, write: Any) -> None:
        """Answer refused lines on ``write``, the transport's write stream."""
        self._write = write
        self._writable.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anext(self._lines)
            try:
                load_json(line, what="The message")
            except BodyRefusedError as refused:
                answer = _answer_to(line, refused)
                if answer is not None:
                    await self._writable.wait()
                    await self._write.send(SessionMessage(answer))
                continue
            return line


def _answer_to(line: str, refused: BodyRefusedError) -> types.JSONRPCError | None:
    """The error answering a refused line; ``None`` for a notification, never answered."""
    found = _top_keys(line)
    if found is not None and "method" in found and "id" not in found:
        logger.warning("An MCP notification that is not taken was dropped: %s", refused)
        return None
    ids = [] if found is None else found.get("id", [])
    logger.warning("An MCP message that is not taken was refused: %s", refused)
    if len(ids) == 1 and readable_id(ids[0]):
        return error_answer(ids[0], types.INVALID_REQUEST, str(refused))
    code = types.PARSE_ERROR if refused.status == 400 else types.INVALID_REQUEST
    return error_answer(None, code, str(refused))


def _top_keys(line: str) -> dict[str, list[Any]] | None:
    """The values each key of the line's object is given, in order; ``None`` when the line
    is no JSON object. A line nesting too deep to read whole gives its keys with only the
    ``id`` values read (:func:`_shallow_keys`)."""
    if json_depth(line) > DEFAULT_LIMITS.max_depth:
        return _shallow_keys(line)
    try:
        pairs = json.loads(line, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None
    if not isinstance(pairs, _Pairs):
        return None
    found: dict[str, list[Any]] = {}
    for key, value in pairs:
        found.setdefault(key, []).append(value)
    return found


def _shallow_keys(line: str) -> dict[str, list[Any]] | None:
    """The keys of the line's object, each with the values of its ``id`` keys (``None`` for
    the other keys' values), read without descending into any value: what nests inside is
    stepped over bracket by bracket, its strings read by the decoder.

    ``None`` when the line is no JSON object, or breaks off before its keys are read.
    """
    text = line.strip()
    if not text.startswith("{"):
        return None
    found: dict[str, list[Any]] = {}
    depth, at, key_next = 0, 0, True
    try:
        while at < len(text):
            char = text[at]
            if char == '"':
                word, end = _DECODER.raw_decode(text, at)
                if depth == 1 and key_next:
                    colon = _after_space(text, end)
                    if text[colon : colon + 1] != ":":
                        return None
                    start = _after_space(text, colon + 1)
                    value = None
                    if word == "id" and text[start : start + 1] not in ("{", "["):
                        value, end = _DECODER.raw_decode(text, start)
                    else:
                        end = start
                    found.setdefault(word, []).append(value)
                    key_next = False
                at = end
                continue
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
            elif char == "," and depth == 1:
                key_next = True
            at += 1
    except (ValueError, RecursionError):
        return None
    return found


def _after_space(text: str, at: int) -> int:
    """Where the first character after JSON's whitespace from ``at`` on is."""
    while text[at : at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


_DECODER = json.JSONDecoder()


class _Pairs(list[tuple[str, Any]]):
    """An object's pairs as read, every key kept (what a ``dict`` would fold)."""


@contextlib.contextmanager
def client_stdin() -> Iterator[AsyncIterable[str]]:
    """stdin's lines as UTF-8 text, with fd 0 pointed at the null device meanwhile.

    Undecodable bytes read as U+FFFD, as the SDK reads them. Where stdin is not fd 0 (or
    cannot be duplicated) it is read in place. The client's end of stdin is never closed:
    a reading thread may still wait on it after the transport stops.
    """
    buffer: Any = sys.stdin.buffer
    wire: int | None = None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        if buffer.fileno() == 0:
            wire = os.dup(0)
    if wire is not None:
        buffer = os.fdopen(wire, "rb", closefd=False)
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, 0)
            finally:
                os.close(null)
    text = io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")
    try:
        yield anyio.wrap_file(text)
    finally:
        # Detached, so that collecting the wrapper closes no buffer of sys.stdin.
        with contextlib.suppress(ValueError):
            text.detach()
        if wire is not None:
            with contextlib.suppress(OSError):
                os.dup2(wire, 0)
