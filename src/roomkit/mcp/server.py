"""The MCP server that asks a person: each tool call is a request on a HumanInputHandler.

A call to ``AskUserQuestion`` or ``ConfirmAction`` is validated against the tool's schema
(and an ``AskUserQuestion`` must ask a question, its options told apart by their labels),
recorded as a request (room ``room``, door :attr:`ChannelType.MCP`, the caller's actor), and
waits for its outcome; the desk and the notifications show it like any other request. The
result is what an :class:`~roomkit.channels.ai.AIChannel` gives its model: the answer
verbatim, or the rejection / timeout error object with ``isError`` set.

While it waits, the server sends progress notifications (when the client asked for them
with a ``progressToken``) at once and then every ``progress_interval`` seconds, so that a
client's request timeout does not cut the person off. An MCP cancellation withdraws the
request, and so does a client gone, except for a call that carried ``_meta["roomkit/key"]``
on a durable store: that request stays open, and a call with the same key re-attaches to
it, answered or not.

With ``hold=`` (``roomkit mcp`` sets it), on a durable store, a client that speaks the
2026-07-28 protocol gets each round of a call held at most ``hold`` seconds, then "still
waiting" (an ``input_required`` result whose sealed ``requestState`` names the wait): see
:mod:`roomkit.mcp.waits`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from roomkit.auth.names import check_actor_name
from roomkit.core.exceptions import HumanInputRejectedError, RequestWithdrawnError, StoreError
from roomkit.mcp._calls import CallBook
from roomkit.mcp._connections import Call, call_of, connection_lifespan
from roomkit.mcp._options import check_numbers, check_state_options, tools_by_name
from roomkit.mcp.waits import (
    StillWaiting,
    held_wait,
    holds_rounds,
    linked,
    state_boundary,
    state_of,
    wait_key,
)
from roomkit.models.enums import ChannelType
from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify.links import AnswerLinks
from roomkit.tools import texts
from roomkit.tools.human_input import HUMAN_INPUT_TOOLS, HumanInputHandler
from roomkit.tools.human_input.question_rules import question_problem
from roomkit.tools.validation import (
    unencodable_text,
    validate_tool_arguments,
)
from roomkit.version import package_version

__all__ = [
    "ACTOR_SCOPE_KEY",
    "KEY_META",
    "MAX_OPEN_CALLS",
    "PROGRESS_INTERVAL",
    "HumanInputMCPServer",
    "check_room",
]

logger = logging.getLogger("roomkit.mcp")

KEY_META = "roomkit/key"
"""The ``_meta`` entry of a call that names its request, so a reconnect re-attaches."""
ACTOR_SCOPE_KEY = "roomkit.actor"
"""Where the HTTP front door puts the authenticated actor in the ASGI scope."""
PROGRESS_INTERVAL = 10.0
"""Seconds between two progress notifications while a person has not answered."""
MAX_OPEN_CALLS = 64
"""The calls one connection may hold open at once, each a question before a person."""
CHANNEL_ID = "mcp"
"""The channel id every request of the server carries."""
MAX_KEY_CHARS = 256


def check_room(room: object, *, what: str = "room") -> str:
    """``room``, once it is a room every store takes for a request.

    Args:
        room: the room to check.
        what: how the message names it (``"room"``, ``"--room"``).

    Raises:
        ValueError: it is not (the message says why).
    """
    if not isinstance(room, str) or not room:
        raise ValueError(f"{what} must be a non-empty string, got {room!r}")
    # Checked here: a call would read the store's refusal of it as its own arguments'.
    if len(room) > MAX_ID_CHARS:
        raise ValueError(
            f"{what} is {len(room):,} characters, over the {MAX_ID_CHARS} a request's room "
            "may have on every store: pass a shorter one"
        )
    unreadable = unencodable_text(room)
    if unreadable is not None:
        raise ValueError(f"{what} must be valid Unicode text, but it holds {unreadable}")
    return room


def _error(body: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=body)], is_error=True)


def _failed(name: str, error: Exception) -> types.CallToolResult:
    """A request given up (closed handler, released) or a store away, as a channel says it."""
    logger.warning("MCP call of %s failed: %s", name, type(error).__name__)
    return _error(texts.crashed(name, type(error).__name__))


class HumanInputMCPServer:
    """An MCP server whose tools ask a person through ``handler``.

    Args:
        handler: where requests are recorded and answered (its store is the desk's).
        actor: the person asked, when the transport authenticates nobody (stdio): an actor
            name (:mod:`roomkit.auth.names`).
        room: the room every request belongs to: 1 to 256 characters of valid text.
        timeout: seconds a person has to answer a call, at most a century.
        tools: the tool definitions offered (``name``, ``description``, ``parameters``);
            the standard human-input tools by default.
        progress_interval: seconds between progress notifications while waiting (at most
            a century).
        hold: on a client speaking 2026-07-28, the seconds one round of a call is held
            before "still waiting" (:mod:`roomkit.mcp.waits`), at most a century; ``None``
            holds the whole wait in one round. Needs a durable store, where the wait
            outlives the round.
        state_keys: the keys that seal request states (the first seals, all unseal):
            every server on the store must share them; a key of this process when ``None``.
        links: the desk's answer links: with ``hold``, the first "still waiting" of a
            call offers a client that takes URL-mode elicitations a link that answers it.
        max_open_calls: the calls one connection (a stdio client, an HTTP session) may
            hold open at once; a call beyond them gets an error result at once, and nobody
            is asked. A call frees its place when it ends, however it ends.

    Raises:
        TypeError: an argument is of the wrong kind (a number that is none, a bool among
            them; ``tools``, ``state_keys`` or ``links`` of another type); the message
            names it and what to pass.
        ValueError: an argument is out of range (``NaN``, infinite, zero or negative
            seconds, or more than a century, among them), or a tool is one no client can list;
            the message names it and what to pass.
    """

    def __init__(
        self,
        handler: HumanInputHandler,
        *,
        actor: str | None = None,
        room: str = "mcp",
        timeout: float = 300,
        tools: Iterable[Mapping[str, Any]] = HUMAN_INPUT_TOOLS,
        progress_interval: float = PROGRESS_INTERVAL,
        hold: float | None = None,
        state_keys: Sequence[bytes] | None = None,
        links: AnswerLinks | None = None,
        max_open_calls: int = MAX_OPEN_CALLS,
    ) -> None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(f"handler must be a HumanInputHandler, got {type(handler).__name__}")
        check_room(room)
        if actor is not None:
            check_actor_name(actor, what="actor")
        check_numbers(timeout, progress_interval, hold, max_open_calls)
        keys = check_state_options(state_keys, links)
        if hold is not None and not handler.durable:
            raise ValueError(
                "hold= keeps a wait in the store between rounds: give the handler a "
                "durable store (SQLite, Redis, PostgreSQL), or leave hold=None"
            )
        self.hold = hold
        """Seconds one round of a call is held on a 2026-07-28 client; ``None``: no rounds."""
        self.links = links
        """Issues the answer links URL mode offers; ``None``: no URL mode."""
        self.handler = handler
        self.actor = actor
        self.room = room
        self.timeout = timeout
        self.progress_interval = progress_interval
        self._tools = tools_by_name(tools)
        self.server: Server[Any] = Server(
            "roomkit",
            version=package_version(),
            title="roomkit: ask a person",
            instructions=(
                "Use AskUserQuestion to ask the user and ConfirmAction before an action that "
                "needs their consent; each call waits until a person answers on roomkit's desk."
            ),
            lifespan=connection_lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        """The SDK server: run it on any transport (``server.run(read, write, ...)``)."""
        self._calls = CallBook(handler, max_open_calls)
        self.server.middleware.append(self._calls.withdraw_cancelled)
        if hold is not None:
            self.server.middleware.append(state_boundary(keys, self._actor_of))
        self.max_open_calls = max_open_calls
        """The calls one connection may hold open at once."""

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    description=tool.get("description"),
                    input_schema=dict(tool["parameters"]),
                )
                for name, tool in self._tools.items()
            ]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        call = call_of(ctx)
        calls = self._calls
        if call in calls.running:
            # The SDK hands a reused id's cancellation to the newer call only: the older
            # one's request would stay before a person, withdrawn by nobody.
            raise MCPError(
                types.INVALID_REQUEST,
                f"Request id {json.dumps(ctx.request_id)} names a call still running on this "
                "connection: give every request an id of its own",
            )
        if not calls.enter(call):
            # Each call puts a question before a person: a client flooding calls would
            # fill the desk. Refused before anything is recorded.
            waiting = calls.open_calls(call[0])
            logger.warning("Refused an MCP call: %d calls of one connection open", waiting)
            return _error(texts.too_many_waiting(params.name, waiting))
        try:
            return await self._serve_call(ctx, params, call)
        finally:
            calls.leave(call)

    async def _serve_call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, call: Call
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        tool = self._tools.get(name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.arguments or {}
        problem = validate_tool_arguments(tool["parameters"], arguments)
        if problem is None:
            problem = question_problem(name, tool["parameters"], arguments)
        if problem is not None:
            return _error(texts.invalid_arguments(name, problem))
        key = _key_of(ctx.meta)
        if isinstance(key, types.CallToolResult):
            return key
        handler = self.handler
        durable = handler.durable
        hold = self.hold if self.hold is not None and holds_rounds(ctx.protocol_version) else None
        if hold is not None:
            try:
                key = wait_key(params.request_state, key)
            except ValueError as error:
                raise MCPError(types.INVALID_PARAMS, str(error)) from None
        try:
            pending = await handler.create(
                name,
                arguments,
                room_id=self.room,
                tool_call_id="" if ctx.request_id is None else str(ctx.request_id),
                channel_id=CHANNEL_ID,
                channel_type=ChannelType.MCP,
                actor_id=self._actor_of(ctx),
                # A key re-attaches only where a request outlives its caller.
                key=key if durable else None,
                timeout=self.timeout if durable else None,
            )
        except ValueError as error:
            return _error(texts.invalid_arguments(name, str(error)))
        except Exception as error:
            return _failed(name, error)
        if pending.arguments != arguments:
            # The key named an earlier call of this tool that asked something else: its
            # outcome answers that question, not this one.
            return _error(texts.invalid_arguments(name, _other_call(key)))
        self._calls.asks(call, pending.pending_id)
        kept = key is not None and durable
        if hold is None or pending.status is not PendingInputStatus.PENDING:
            # A retry that finds its request settled replays the outcome at once.
            return await self._answer(ctx, name, pending.pending_id, kept=kept)
        try:
            return await self._answer(ctx, name, pending.pending_id, kept=kept, hold=hold)
        except StillWaiting:
            assert key is not None
            offered = linked(params.request_state)
            url = None if offered else self._answer_url(ctx, pending)
            if url is None:
                return types.InputRequiredResult(request_state=state_of(key, linked=offered))
            link = types.ElicitRequestURLParams(
                message="A person is asked; they may answer on the desk at this address.",
                url=url,
            )
            return types.InputRequiredResult(
                input_requests={"desk": types.ElicitRequest(params=link)},
                request_state=state_of(key, linked=True),
            )

    def _answer_url(self, ctx: ServerRequestContext[Any], pending: PendingInput) -> str | None:
        """A single-use desk link answering ``pending`` as its actor, for a client that takes
        URL-mode elicitations; ``None`` when there is no desk, no actor, or no such client."""
        if self.links is None or pending.actor_id is None:
            return None
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or elicitation.url is None:
            return None
        left = self.handler.time_left(pending)
        return self.links.url(pending.pending_id, pending.actor_id, left)

    async def _answer(
        self,
        ctx: ServerRequestContext[Any],
        name: str,
        pending_id: str,
        *,
        kept: bool,
        hold: float | None = None,
    ) -> types.CallToolResult:
        """Wait for the request's outcome, telling the client it waits; the call's result.

        Raises:
            StillWaiting: with ``hold``, nobody answered within it (the request stays open).
        """
        handler = self.handler
        call = call_of(ctx)
        if kept:
            now = asyncio.get_running_loop().time()
            self._calls.keep(call, pending_id, now + self.timeout, now)
        waiting = asyncio.create_task(self._report_progress(ctx, pending_id))
        cancelled = False
        try:
            if hold is None:
                answer = await handler.wait(pending_id, timeout=self.timeout)
            else:
                answer = await held_wait(handler, pending_id, timeout=self.timeout, hold=hold)
        except StillWaiting:
            raise
        except TimeoutError:
            return _error(texts.human_input_timed_out(name, self.timeout))
        except HumanInputRejectedError as rejected:
            return _error(texts.human_input_rejected(rejected))
        except (RequestWithdrawnError, StoreError) as error:
            return _failed(name, error)
        except BaseException:
            # Cancelled: by the client (withdrawn here, or by the call book's middleware for a
            # kept request), or by the connection's end (a kept request stays open for its key).
            cancelled = True
            if not kept:
                with anyio.CancelScope(shield=True):
                    await handler.arelease(pending_id)
            raise
        finally:
            waiting.cancel()
            if not cancelled:
                self._calls.unkeep(call)
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])

    def _actor_of(self, ctx: ServerRequestContext[Any]) -> str | None:
        """The HTTP caller's authenticated actor, else the configured one."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict):
            actor = scope.get(ACTOR_SCOPE_KEY)
            if isinstance(actor, str):
                return actor
        return self.actor

    async def _report_progress(self, ctx: ServerRequestContext[Any], pending_id: str) -> None:
        """Tell the client, now and every ``progress_interval`` seconds, that a person is asked."""
        started = time.monotonic()
        message = f"Waiting for a person to answer (request {pending_id})"
        try:
            while True:
                elapsed = time.monotonic() - started
                await ctx.session.report_progress(elapsed, total=self.timeout, message=message)
                await asyncio.sleep(self.progress_interval)
        except Exception:
            # A progress notification is a courtesy: a transport that cannot carry one
            # does not end the wait.
            logger.debug("A progress notification could not be sent", exc_info=True)


def _other_call(key: str | None) -> str:
    return (
        f'_meta["{KEY_META}"] {json.dumps(key)[:40]} names an earlier call that asked '
        "something else: give this call a key of its own"
    )


def _key_of(meta: Mapping[str, Any] | None) -> str | types.CallToolResult | None:
    """The call's ``_meta["roomkit/key"]``; an error result when it is not a short string."""
    if not meta or KEY_META not in meta:
        return None
    key = meta[KEY_META]
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS:
        return _error(
            texts.error_body(
                f'_meta["{KEY_META}"] must be a non-empty string of at most '
                f"{MAX_KEY_CHARS} characters, got {json.dumps(key, default=str)[:40]}"
            )
        )
    return key
