"""Serve: run a gated call, human-input names first, then the host's tool handler.

Each call runs under its bound: ``tool_timeouts[name]`` when set, otherwise none for a
human-input name (the handler's own timeout applies) and ``tool_timeout_seconds`` for the
rest. A human-input call's bound becomes its request's deadline rather than a cancellation,
so an answer that lands with the bound is taken, never lost. Whatever the tool raises
becomes the outcome the model reads; a bug's message stays out of the model's view and
goes to the observers as ``error_detail``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from roomkit.channels.ai._outcome import CallOutcome, as_text, error_body, failed, refused, served
from roomkit.core.exceptions import (
    ToolFailedError,
    ToolRefusedError,
    ToolTimeoutError,
    UnservedToolCallError,
)
from roomkit.models.enums import ChannelType
from roomkit.tools.compose import ToolHandler
from roomkit.tools.context import ToolCallContext, _serving
from roomkit.tools.human_input import HumanInputToolHandler

if TYPE_CHECKING:
    from roomkit.channels.ai._turn import Turn

__all__ = ["run_tool", "serve"]


class _Serving(Protocol):
    human_input_handler: HumanInputToolHandler | None

    @property
    def tool_handler(self) -> ToolHandler | None: ...

    def call_bound(self, name: str) -> float | None: ...


async def serve(turn: Turn, call_id: str, name: str, arguments: dict[str, Any]) -> CallOutcome:
    """Run the call of an AI turn, as the current tool call, and map how it ended."""
    channel = turn.channel
    with _serving(ToolCallContext(turn.room_id, call_id, channel.channel_id)):
        return await run_tool(channel, name, arguments, ChannelType.AI)


async def run_tool(
    channel: _Serving, name: str, arguments: dict[str, Any], door: ChannelType
) -> CallOutcome:
    """Serve ``name`` on ``channel`` (human-input names first) under its bound.

    The caller has set the tool context (room, call, actor) the tool reads.
    """
    human = channel.human_input_handler
    bound = channel.call_bound(name)
    asks_person = human is not None and name in human.tool_names
    timeout = asyncio.timeout(None if asks_person else bound)
    try:
        async with timeout:
            if human is not None and asks_person:
                limit = human.timeout if bound is None else min(bound, human.timeout)
                result = await human.ask(name, arguments, channel_type=door, timeout=limit)
            elif channel.tool_handler is not None:
                result = await channel.tool_handler(name, arguments)
            else:
                raise UnservedToolCallError(f"tool {name!r} is not served here")
    except ToolRefusedError as refusal:
        return refused(refusal.message, arguments)
    except ToolFailedError as failure:
        return failed(failure.message, arguments, detail=failure.message)
    except UnservedToolCallError as unserved:
        body = error_body(f"Tool '{name}' has no handler on this channel.")
        return failed(body, arguments, detail=f"UnservedToolCallError: {unserved}")
    except TimeoutError as error:
        if bound is not None and timeout.expired():
            late = ToolTimeoutError(name, bound)
            return failed(error_body(str(late)), arguments, detail=f"ToolTimeoutError: {late}")
        return _crashed(name, arguments, error)
    except Exception as error:
        return _crashed(name, arguments, error)
    return served(as_text(result), arguments)


def _crashed(name: str, arguments: dict[str, Any], error: Exception) -> CallOutcome:
    kind = type(error).__name__
    body = error_body(f"Tool '{name}' failed ({kind})")
    return failed(body, arguments, detail=f"{kind}: {error}")
