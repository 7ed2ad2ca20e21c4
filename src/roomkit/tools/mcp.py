"""MCPTools: an MCP server's tools on an AIChannel, and its elicitations asked of a person.

``MCPTools`` connects to an MCP server through the SDK's :class:`mcp.Client` (an in-process
server, a ``StdioServerParameters`` command, a URL or any transport), lists its tools as
:class:`AITool` definitions and serves calls to them as a tool handler. When the server
asks for input (``elicitation/create``, pushed on a 2025-11-25 connection or embedded in a
2026-07-28 input-required result: the SDK hands both to the same callback), the question
becomes a :class:`HumanInputHandler` request that the desk and the notifications show:

- form mode: a request whose answer schema is the ``requestedSchema``, closed to properties
  it does not name (an ``accept`` carries only what its form asks), so an answer that does
  not match is refused and the request stays open for a correct one;
- URL mode: a confirmation card with the link; confirming means the person went there.

The person's answer goes back as ``accept`` (with the form's content), a rejection as
``decline``, a withdrawal or a timeout as ``cancel``. A requested schema outside the flat
subset MCP allows is declined at once, with the reason in ``_meta["roomkit/reason"]``.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from roomkit._extras import requires_extra

with requires_extra("roomkit.tools.mcp", "mcp"):
    import anyio
    import mcp_types as types
    from mcp import Client, InputRequiredRoundsExceededError
    from mcp.client.extension import UnexpectedClaimedResult
    from mcp.client.session import ClientRequestContext
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    RequestWithdrawnError,
    RoomKitError,
    ToolFailedError,
    ToolRefusedError,
    UnservedToolCallError,
)
from roomkit.models.enums import ChannelType
from roomkit.providers.ai.base import AITool
from roomkit.tools import texts
from roomkit.tools._mcp_forms import form_schema_problem
from roomkit.tools._mcp_listing import ToolListing, server_name
from roomkit.tools.call_clock import CallClock, current_call_clock
from roomkit.tools.context import current_tool_actor_id, current_tool_call, current_tool_room_id
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["ELICITATION_TOOL", "REASON_META", "MCPTools", "form_schema_problem"]

logger = logging.getLogger("roomkit.tools.mcp")

ELICITATION_TOOL = "MCPElicitation"
"""The tool name an elicitation's request carries."""
REASON_META = "roomkit/reason"
"""Where a decline says why, in the result's ``_meta``."""


@dataclass(frozen=True, slots=True)
class _Asker:
    """Whose tool call an elicitation belongs to: where its request goes."""

    room_id: str
    actor_id: str | None
    channel_id: str = ""
    tool_call_id: str = ""
    clock: CallClock | None = None
    """The call's bound, stopped while the person answers."""


_asking: ContextVar[_Asker | None] = ContextVar("roomkit_mcp_asking", default=None)


def _decline(reason: str) -> types.ElicitResult:
    return types.ElicitResult(action="decline", _meta={REASON_META: reason})


class MCPTools:
    """An MCP server's tools for an AIChannel; the server's elicitations ask a person.

    Use it as an async context manager (or call :meth:`connect` and :meth:`close`)::

        async with MCPTools(server, handler=handler, room_id="ops", actor_id="alice") as mcp:
            channel = AIChannel("agent", provider=..., tool_handler=mcp, tools=mcp.tools)
            mcp.on_tools_changed = channel.set_tools

    An elicitation is asked in the room, and of the actor, of the tool call it came
    during (the channel's tool context), when the SDK runs it in that call (2026-07-28), or
    when that call is the only one in flight; otherwise of ``room_id`` and ``actor_id``.
    While the person answers, that call's bound on the channel (``tool_timeout_seconds``,
    30 s on an AIChannel) is stopped: it counts the server's own work, before and after
    the answer, and the person has ``timeout``. An elicitation no call can be told to
    (several in flight on a 2025-11-25 connection) stops no bound.

    Args:
        server: what :class:`mcp.Client` connects to: an SDK ``Server``, a
            ``StdioServerParameters``, a URL, or a transport.
        handler: where the elicitations become requests.
        room_id: the room of those requests when no tool call says.
        actor_id: the person asked when no tool call says (``None``: whoever may answer
            in the room).
        timeout: seconds a person has to answer an elicitation (then ``cancel``).
        mode: how the client negotiates the protocol (the SDK's ``Client(mode=...)``):
            ``"auto"`` (the newest both speak) or ``"legacy"`` (the initialize handshake).
        on_tools_changed: called with the server's new list of tools each time the server
            says it changed (``notifications/tools/list_changed``) and listing it again
            gives another list; ``channel.set_tools`` offers that list from the channel's
            next turn on. A call to a tool the server no longer lists is refused, saying so.
    """

    def __init__(
        self,
        server: Any,
        *,
        handler: HumanInputHandler,
        room_id: str = "",
        actor_id: str | None = None,
        timeout: float = 300,
        mode: str = "auto",
        on_tools_changed: Callable[[list[AITool]], object] | None = None,
    ) -> None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(f"handler must be a HumanInputHandler, got {type(handler).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.handler = handler
        self.room_id = room_id
        self.actor_id = actor_id
        self.timeout = timeout
        self.on_tools_changed = on_tools_changed
        """Called with the server's new list of tools when it changes (``None``: nothing is)."""
        self._listing = ToolListing(self._tools_changed)
        self._client = Client(
            server,
            elicitation_callback=self._elicit,
            message_handler=self._listing.on_message,
            mode=mode,
        )
        self._connected = False
        self._in_flight: dict[int, _Asker] = {}
        self._numbers = itertools.count()

    async def __aenter__(self) -> MCPTools:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connect to the server and read its tools; then follow the server's changes to them.

        A tool whose name no model provider takes (outside letters, digits, ``_`` and
        ``-``, or over 64 characters), whose ``inputSchema`` is no JSON Schema for an
        object of arguments (the channel's check), or that the server lists twice is left
        out, with a warning naming the server, the tool and the problem: offered, it would
        make the provider refuse every tool, or the channel refuse the list.
        """
        await self._client.__aenter__()
        self._connected = True
        await self._listing.start(self._client)

    async def close(self) -> None:
        """Disconnect; an elicitation still waiting is withdrawn by its cancelled wait."""
        if self._connected:
            self._connected = False
            await self._listing.stop()
            await self._client.__aexit__(None, None, None)

    @property
    def tools(self) -> list[AITool]:
        """The server's tools, as the channel declares them to the model: the list read at
        :meth:`connect`, or the one read again after the server said it changed."""
        return self._listing.tools

    def _tools_changed(self, tools: list[AITool]) -> None:
        logger.info(
            "MCP server %s now lists the tools %s",
            server_name(self._client),
            [tool.name for tool in tools],
        )
        if self.on_tools_changed is None:
            return
        try:
            self.on_tools_changed(tools)
        except Exception as error:  # the application's callback; the listing goes on
            logger.warning(
                "on_tools_changed failed on the new tools of MCP server %s (%s: %s)",
                server_name(self._client),
                type(error).__name__,
                error,
            )

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool ``name``; its text content is the result.

        Raises:
            UnservedToolCallError: the server has no such tool (so it composes with
                ``compose_tool_handlers``).
            ToolRefusedError: the server listed the tool once and lists it no more (the
                model reads that it is no longer offered).
            ToolFailedError: the server's result has ``isError`` (the model reads it), or
                the server failed the call: its error message, a result MCP does not
                allow, one that does not match the tool's declared output schema, or an
                extension's result, input asked for past the SDK's rounds, or the
                connection it closed (the model reads which).
        """
        if not any(tool.name == name for tool in self._listing.tools):
            if self._listing.dropped(name):
                raise ToolRefusedError(texts.tool_withdrawn(name, server_name(self._client)))
            raise UnservedToolCallError(f"tool {name!r} is not served by this MCP server")
        call = current_tool_call()
        asker = _Asker(
            current_tool_room_id() or self.room_id,
            current_tool_actor_id() or self.actor_id,
            call.channel_id if call is not None else "",
            call.tool_call_id if call is not None else "",
            current_call_clock(),
        )
        number = next(self._numbers)
        self._in_flight[number] = asker
        token = _asking.set(asker)
        try:
            result = await self._client.call_tool(name, arguments)
        except (
            MCPError,
            ValidationError,
            InputRequiredRoundsExceededError,
            UnexpectedClaimedResult,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ) as error:
            problem = _failure(server_name(self._client), error)
            logger.warning("MCP tool %r failed: %s", name, problem)
            raise ToolFailedError(texts.upstream_failed(name, problem)) from None
        except RuntimeError as error:
            # The SDK checks a result against the tool's output schema and says it only
            # with a plain RuntimeError: only its own messages are the server's fault.
            mismatch = _schema_failure(server_name(self._client), name, error)
            if mismatch is None:
                raise
            logger.warning("MCP tool %r failed: %s", name, mismatch)
            raise ToolFailedError(texts.upstream_failed(name, mismatch)) from None
        finally:
            _asking.reset(token)
            del self._in_flight[number]
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content)
        if result.is_error:
            raise ToolFailedError(text or json.dumps({"error": f"Tool '{name}' failed"}))
        return text

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asker = self._asker()
        # The person's time is theirs (``timeout``), not the tool's: the call's bound stops.
        with asker.clock.stopped() if asker.clock is not None else nullcontext():
            return await self._answer(asker, params)

    async def _answer(self, asker: _Asker, params: types.ElicitRequestParams) -> types.ElicitResult:
        if isinstance(params, types.ElicitRequestURLParams):
            return await self._ask_url(asker, params)
        problem = form_schema_problem(params.requested_schema)
        if problem is not None:
            logger.warning("Declined an elicitation: %s", problem)
            return _decline(problem)
        outcome = await self._ask(
            asker,
            {"message": params.message},
            # Closed: an ``accept`` carries only the form's fields, as MCP has it.
            answer_schema={**params.requested_schema, "additionalProperties": False},
        )
        if isinstance(outcome, types.ElicitResult):
            return outcome
        content = json.loads(outcome)
        return types.ElicitResult(action="accept", content=content)

    async def _ask_url(
        self, asker: _Asker, params: types.ElicitRequestURLParams
    ) -> types.ElicitResult:
        outcome = await self._ask(
            asker,
            {"action": f"Open {params.url}", "details": {"why": params.message, "url": params.url}},
        )
        if isinstance(outcome, types.ElicitResult):
            return outcome
        confirmed = _confirmed(outcome)
        return types.ElicitResult(action="accept" if confirmed else "decline")

    async def _ask(
        self,
        asker: _Asker,
        arguments: dict[str, Any],
        *,
        answer_schema: dict[str, Any] | None = None,
    ) -> str | types.ElicitResult:
        """Ask a person and wait: their answer's text, or the decline / cancel the request
        ended in (:meth:`_outcome`); a decline saying why when the server's elicitation
        cannot be a request (text too long, or not valid Unicode; a schema that is not one)."""
        try:
            pending = await self.handler.create(
                ELICITATION_TOOL, arguments, **self._where(asker), answer_schema=answer_schema
            )
        except (TypeError, ValueError) as error:
            if isinstance(error, RoomKitError):
                problem = f"the elicitation cannot be asked: {error}"
            else:
                problem = f"requestedSchema is not a valid JSON Schema: {error}"
            logger.warning("Declined an elicitation: %s", problem)
            return _decline(problem)
        return await self._outcome(pending.pending_id)

    def _asker(self) -> _Asker:
        """The tool call an elicitation belongs to, or the default room and actor."""
        asker = _asking.get()
        if asker is None and len(self._in_flight) == 1:
            [asker] = self._in_flight.values()
        return _Asker(self.room_id, self.actor_id) if asker is None else asker

    def _where(self, asker: _Asker) -> dict[str, Any]:
        return {
            "room_id": asker.room_id,
            "actor_id": asker.actor_id,
            "channel_id": asker.channel_id,
            "tool_call_id": asker.tool_call_id,
            "channel_type": ChannelType.MCP,
            "timeout": self.timeout if self.handler.durable else None,
        }

    async def _outcome(self, pending_id: str) -> str | types.ElicitResult:
        """The answer's text, or the decline / cancel the request ended in."""
        try:
            return await self.handler.wait(pending_id, timeout=self.timeout)
        except HumanInputRejectedError as rejected:
            return _decline(str(rejected))
        except (TimeoutError, RequestWithdrawnError):
            return types.ElicitResult(action="cancel")


_SAID = 500
"""The most of a server's error message the model reads."""


def _failure(server: str, error: Exception) -> str:
    """What went wrong with the server, in a line the model and the logs can act on."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "result"
        return f"the MCP server {server} sent a result MCP does not allow ({where}: {first['msg']})"
    if isinstance(error, InputRequiredRoundsExceededError):
        return (
            f"the MCP server {server} still asked for more input after {error.max_rounds} "
            "rounds of answers, so the call was given up"
        )
    if isinstance(error, UnexpectedClaimedResult):
        return (
            f"the MCP server {server} answered with a result of an MCP extension this client "
            f"does not use ({type(error.result).__name__})"
        )
    if not isinstance(error, MCPError) or error.code == types.CONNECTION_CLOSED:
        return f"the MCP server {server} closed the connection"
    said = error.message if len(error.message) <= _SAID else error.message[:_SAID] + "…"
    if error.code == types.REQUEST_TIMEOUT:
        return f"the MCP server {server} did not answer in time ({said})"
    return f"the MCP server {server} answered with an error: {said}"


def _schema_failure(server: str, name: str, error: RuntimeError) -> str | None:
    """What the SDK's check of a result against the tool's output schema found, in a line
    the model can act on; ``None`` when ``error`` is none of that check's."""
    said = str(error)
    if said == f"Tool {name} has an output schema but did not return structured content":
        detail = "it has no structured content"
    elif said.startswith(f"Invalid structured content returned by tool {name}: "):
        # jsonschema's own message, without the schema and instance it dumps after it.
        message = getattr(error.__cause__, "message", None)
        detail = message if isinstance(message, str) else said.partition(": ")[2]
    elif said.startswith(f"Invalid schema for tool {name}: "):
        return (
            f"the MCP server {server} declares an output schema for the tool that is no "
            "valid JSON Schema, so its result could not be checked"
        )
    else:
        return None
    detail = detail if len(detail) <= _SAID else detail[:_SAID] + "…"
    return (
        f"the MCP server {server} sent a result that does not match the tool's declared "
        f"output schema ({detail})"
    )


def _confirmed(answer: str) -> bool:
    try:
        reply: Mapping[str, Any] | Any = json.loads(answer)
    except ValueError:
        return False
    return isinstance(reply, Mapping) and reply.get("confirmed") is True
