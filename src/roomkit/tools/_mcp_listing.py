"""The tools an MCP server lists, as a model provider takes them, kept in step with the server.

A tool whose name no provider takes (OpenAI and Anthropic both refuse a whole list of tools
for one name outside letters, digits, ``_`` and ``-``, or over 64 characters: the rule of
:func:`~roomkit.tools.validation.check_tool_name`, which the channels apply too), whose name
the list already holds, or whose input schema a channel refuses
(:func:`~roomkit.tools.validation.check_tool_schema`: no JSON Schema for an object of
arguments, a ``$ref`` that resolves to nothing) is left out with one warning naming the
server, the tool and the problem: offered, it would make the provider, or the channel taking
the list, refuse every tool.

A server that changes its tools says so with ``notifications/tools/list_changed``: pushed on
a 2025-11-25 connection, delivered on a ``subscriptions/listen`` stream at 2026-07-28 (opened
when the server's ``tools.listChanged`` capability says it sends them). Either way the SDK
hands the notification to :meth:`ToolListing.on_message`; the tools are then listed again,
once for a burst of notifications, and the new list goes to ``changed``. A listen stream that
ends (the server closed it, or the connection dropped it) is opened again, after 1 s, then
2 s, 4 s ... up to a minute between tries, back to 1 s once one is open; the tools are listed
again after each reopening, since a change while it was closed went unseen. A tool the server
listed once and lists no more is remembered as dropped, so a call to it gets a refusal the
model can read rather than an error from the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import mcp_types as types
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from roomkit.providers.ai.base import AITool
from roomkit.tools.validation import tool_name_problem, tool_schema_problem

__all__ = ["ToolListing", "server_name"]

logger = logging.getLogger("roomkit.tools.mcp")

_SETTLE = 0.05
"""Seconds a notification waits for the rest of its burst before the tools are listed again."""
_PAGES = 100
"""The most pages one listing reads: a server whose cursor never ends cannot hang it."""
_REOPEN_FIRST = 1.0
"""Seconds before a listen stream that ended is opened again, doubled each time it ends again
before it held for :data:`_REOPEN_MOST` seconds (a server that drops each stream at once is
not asked every second)."""
_REOPEN_MOST = 60.0
"""The most seconds between two tries to open a listen stream again."""


def server_name(client: Client) -> str:
    """The server's name as it gave it, for a log line."""
    info = client.server_info
    return repr(info.name) if info is not None else "(unnamed)"


class ToolListing:
    """The tools an MCP server lists, as offered to a model, and the ones it dropped.

    Args:
        changed: called with the new list each time a re-listing changes it.
    """

    def __init__(self, changed: Callable[[list[AITool]], None]) -> None:
        self._changed = changed
        self._tools: list[AITool] = []
        self._listed: set[str] = set()
        self._left_out: set[str] = set()
        self._stale = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def tools(self) -> list[AITool]:
        """The tools offered now."""
        return list(self._tools)

    def dropped(self, name: str) -> bool:
        """Whether the server listed ``name`` once and lists it no more."""
        return name in self._listed and not any(tool.name == name for tool in self._tools)

    async def on_message(self, message: object) -> None:
        """The SDK's message handler: a tools notification marks the list stale."""
        if isinstance(message, types.ToolListChangedNotification):
            self._stale.set()

    async def start(self, client: Client) -> None:
        """List the tools, then keep the list in step with the server's notifications."""
        capability = client.server_capabilities.tools
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS and (
            capability is not None and capability.list_changed
        ):
            # Listening before the first listing: no change between the two goes unseen.
            listening = asyncio.Event()
            self._tasks.append(asyncio.create_task(self._listen(client, listening)))
            await listening.wait()
        self._tools = self._offerable(client, await _list(client))
        self._listed = {tool.name for tool in self._tools}
        self._tasks.append(asyncio.create_task(self._watch(client)))

    async def stop(self) -> None:
        """Stop following the server's changes."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _listen(self, client: Client, listening: asyncio.Event) -> None:
        """Hold a 2026-07-28 ``subscriptions/listen`` stream open for the tools' changes
        (its events reach :meth:`on_message` too), opening it again whenever it ends, until
        :meth:`stop`; each reopening marks the list stale (a change may have been missed)."""
        loop = asyncio.get_running_loop()
        wait, opened, held_since = _REOPEN_FIRST, False, None
        while True:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    listening.set()
                    if opened:
                        logger.info(
                            "MCP server %s: following its tools' changes again", server_name(client)
                        )
                        self._stale.set()
                    opened, held_since = True, loop.time()
                    async for _event in subscription:
                        self._stale.set()
                ended = "the server closed it"
            except Exception as error:  # the stream is an SDK boundary; the tools stay offered
                ended = f"{type(error).__name__}: {error}"
            finally:
                listening.set()
            if held_since is not None and loop.time() - held_since >= _REOPEN_MOST:
                wait = _REOPEN_FIRST  # it held: this end is news, not a server refusing streams
            held_since = None
            logger.warning(
                "MCP server %s: the stream of its tools' changes ended (%s); opening it "
                "again in %g s",
                server_name(client),
                ended,
                wait,
            )
            await asyncio.sleep(wait)
            wait = min(wait * 2, _REOPEN_MOST)

    async def _watch(self, client: Client) -> None:
        """List the tools again each time the list is stale; a listing that fails is tried
        again, after the same growing waits as a listen stream."""
        wait = _REOPEN_FIRST
        while True:
            await self._stale.wait()
            await asyncio.sleep(_SETTLE)  # the rest of a burst lands in this one listing
            self._stale.clear()
            try:
                tools = self._offerable(client, await _list(client))
            except Exception as error:  # an SDK boundary: the tools offered stay offered
                logger.warning(
                    "MCP server %s: its tools could not be listed again (%s: %s); the tools "
                    "listed before stay offered, and they are listed again in %g s",
                    server_name(client),
                    type(error).__name__,
                    error,
                    wait,
                )
                await asyncio.sleep(wait)
                wait = min(wait * 2, _REOPEN_MOST)
                self._stale.set()
                continue
            wait = _REOPEN_FIRST
            self._listed |= {tool.name for tool in tools}
            if tools != self._tools:
                self._tools = tools
                self._changed(list(tools))

    def _offerable(self, client: Client, listed: list[types.Tool]) -> list[AITool]:
        """The listed tools a model provider and a channel take, warning once about each
        one left out."""
        tools: dict[str, AITool] = {}
        seen: set[str] = set()
        for tool in listed:
            problem = _problem(tool, seen)
            seen.add(tool.name)
            if problem is None:
                tools[tool.name] = AITool(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=tool.input_schema,
                )
            elif tool.name not in self._left_out:
                self._left_out.add(tool.name)
                logger.warning(
                    "MCP server %s: tool %r left out: %s", server_name(client), tool.name, problem
                )
        return list(tools.values())


def _problem(tool: types.Tool, seen: set[str]) -> str | None:
    """Why ``tool`` cannot be offered after the tools named ``seen``, or ``None``."""
    if tool.name in seen:
        return "the server lists that name twice"
    problem = tool_name_problem(tool.name)
    if problem is not None:
        return problem
    problem = tool_schema_problem(tool.input_schema)
    return None if problem is None else f"its inputSchema is refused: {problem}"


async def _list(client: Client) -> list[types.Tool]:
    """Every tool the server lists now, page after page (never from the SDK's cache)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools
