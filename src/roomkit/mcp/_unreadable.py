"""Over stdio, an answer to every line the SDK's parser cannot read.

The SDK's stdio transport parses each line it reads and hands the server what it cannot
parse as an exception, which the server drops: the client that sent it waits for an answer
that never comes. A line that is JSON but holds a lone surrogate (``"\\ud800"``, an escape
JSON allows and a JavaScript client sends for half an emoji) is one of them. So the server
reads through :class:`AnsweringReads`, which answers each such line on the write stream:
a request whose id can be read gets an error under that id saying what is wrong, and any
other line the parse error of an unknown id (``null``), as JSON-RPC has it.
"""

from __future__ import annotations

import contextvars
import json
import logging
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from roomkit._storable import unencodable_text

__all__ = ["AnsweringReads", "error_answer", "readable_id"]

logger = logging.getLogger("roomkit.mcp")


class AnsweringReads:
    """The stdio transport's read stream, with every unreadable line answered on ``write``.

    Args:
        read: what the transport read: messages, and an exception for each unreadable line.
        write: where the server's messages go out.
    """

    def __init__(self, read: Any, write: Any) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, as the transport's stream keeps it."""
        context: contextvars.Context | None = getattr(self._read, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        """The next message the server can read; an unreadable line is answered on the way.

        Raises:
            anyio.EndOfStream: the client closed its side.
        """
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            answer = _answer_to(item)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> AnsweringReads:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReads:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _line_of(error: Exception) -> str | None:
    """The line a parse failure was about, when the error carries it (pydantic's does)."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:
        return None
    line = found[0].get("input") if found and isinstance(found[0], dict) else None
    return line if isinstance(line, str) else None


def _answer_to(error: Exception) -> types.JSONRPCError | None:
    """The error that answers the unreadable line behind ``error``; ``None`` for a
    notification, which is never answered."""
    line = _line_of(error)
    try:
        message: object = json.loads(line) if line is not None else None
    except ValueError:
        message = None
    if isinstance(message, list):
        text = "A batch (a JSON array) is not taken: send each message on a line of its own"
        return error_answer(None, types.INVALID_REQUEST, text)
    if not isinstance(message, dict):
        logger.warning("An MCP message that is no JSON-RPC object was answered with a parse error")
        text = "Parse error: each line must be one JSON object"
        return error_answer(None, types.PARSE_ERROR, text)
    request_id = message.get("id")
    if "method" in message and "id" not in message:
        logger.warning("An MCP notification that cannot be read was dropped")
        return None
    if not readable_id(request_id):
        request_id = None
    problem = unencodable_text(message)
    if problem is None:
        text = "Parse error: the message is no JSON-RPC message this server reads"
        return error_answer(request_id, types.PARSE_ERROR, text)
    logger.warning("An MCP message with text UTF-8 cannot encode was refused")
    text = f"The message's text must be valid Unicode, but it holds {problem}: send it again"
    return error_answer(request_id, types.INVALID_REQUEST, text)


def readable_id(value: object) -> bool:
    """Whether ``value`` is an id an answer can carry back: an integer, or encodable text."""
    if isinstance(value, str):
        return unencodable_text(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


def error_answer(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
