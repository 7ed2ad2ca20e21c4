"""Serve: run a gated (and approved) call, human-input names first, then the host's handler.

The call runs under the bounds :func:`~roomkit.channels._calls.bounds.decide` fixed for it,
on a :class:`~roomkit.tools.call_clock.CallClock` that a tool stops while it waits for a
person (an MCP server's elicitation), so the bound counts the tool's own work alone; and
inside the tool context of its site (the room, the actor, the tools offered, the call
itself), set for the call and reset when it ends, so a tool reads its own call through
``current_tool_call()`` and nothing of it outlives the call. A human-input name is asked
with the call site passed explicitly and the person's deadline as the request's. Whatever
the tool raises becomes the outcome the model reads; a bug's message stays out of the
model's view and goes to the observers as ``error_detail``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from roomkit.channels._calls.bounds import BoundSettings, decide
from roomkit.channels._calls.outcome import CallOutcome, as_text, failed, refused, served
from roomkit.core.exceptions import (
    ToolFailedError,
    ToolRefusedError,
    ToolTimeoutError,
    UnservedToolCallError,
)
from roomkit.core.tasks import cancelled_from_within
from roomkit.models.pending_input import arguments_digest
from roomkit.tools import texts
from roomkit.tools.call_clock import CallClock
from roomkit.tools.context import ToolCallContext, tool_turn_context
from roomkit.tools.human_input.tool_handler import HumanInputCall

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite
    from roomkit.tools.compose import ToolHandler

__all__ = ["ToolServer", "serve"]


class ToolServer(BoundSettings, Protocol):
    """What serving reads of the channel (or plugged config) that serves a call."""

    @property
    def tool_handler(self) -> ToolHandler | None:
        """The host's tool handler, read at every call."""
        ...


async def serve(
    site: CallSite,
    server: ToolServer,
    name: str,
    arguments: dict[str, Any],
    *,
    approved: str | None = None,
) -> CallOutcome:
    """Serve ``name`` at ``site`` under its bounds, as the current tool call.

    Args:
        approved: the digest a person approved; the arguments are digested again at
            dispatch and the call is refused, never run, when they differ.
    """
    if approved is not None:
        ran = arguments_digest(name, arguments)
        if ran != approved:
            detail = f"ApprovalMismatch: approved {approved}, dispatched {ran}"
            return refused(texts.approval_mismatch(name), arguments, detail=detail)
    this_call = ToolCallContext(site.room_id, site.tool_call_id, site.channel_id)
    with tool_turn_context(
        room=site.room, actor_id=site.actor_id, tools=list(site.tools), call=this_call
    ):
        return await _run(site, server, name, arguments)


async def _run(
    site: CallSite, server: ToolServer, name: str, arguments: dict[str, Any]
) -> CallOutcome:
    bounds = decide(server, name)
    human = server.human_input_handler
    asked = HumanInputCall(
        site.room_id, site.channel_id, site.channel_type, site.tool_call_id, site.actor_id
    )
    clock = CallClock(bounds.cancel_after)
    try:
        async with clock:
            if human is not None and bounds.person is not None:
                result = await human.ask(name, arguments, call=asked, timeout=bounds.person)
            elif server.tool_handler is not None:
                result = await server.tool_handler(name, arguments)
            else:
                raise UnservedToolCallError(f"tool {name!r} is not served here")
    except ToolRefusedError as refusal:
        return refused(refusal.message, arguments)
    except ToolFailedError as failure:
        return failed(failure.message, arguments, detail=failure.message)
    except UnservedToolCallError as unserved:
        detail = f"UnservedToolCallError: {unserved}"
        return failed(texts.unserved(name), arguments, detail=detail)
    except TimeoutError as error:
        bound = bounds.cancel_after
        if bound is not None and clock.expired():
            late = ToolTimeoutError(name, bound)
            return failed(texts.timed_out(str(late)), arguments, detail=f"ToolTimeoutError: {late}")
        return crashed(name, arguments, error)
    except Exception as error:
        return crashed(name, arguments, error)
    except asyncio.CancelledError as error:
        # Raised by the tool itself (it awaited work someone else cancelled): the tool
        # failed. A cancel of the call itself goes on.
        if not cancelled_from_within():
            raise
        return crashed(name, arguments, error)
    return served(as_text(result), arguments)


def crashed(name: str, arguments: dict[str, Any], error: BaseException) -> CallOutcome:
    """The outcome of a call whose tool (or whose channel) raised ``error``."""
    kind = type(error).__name__
    return failed(texts.crashed(name, kind), arguments, detail=f"{kind}: {error}")
