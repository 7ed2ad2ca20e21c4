"""The kit's step for a new human-input request: ON_USER_INPUT_REQUIRED, then the event.

A handler routed in the kit calls this before it announces a request. A request outside a
room passes. In a room, the SYNC hooks of ON_USER_INPUT_REQUIRED (filtered by the request's
door and channel) decide whether it may be asked; when they allow it, the ASYNC hooks observe
it. Either way the kit's ``"user_input_required"`` listeners hear the verdict. A room whose
context cannot be read skips the hooks and lets the request through, logged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from roomkit.core.hooks import HookEngine
from roomkit.models.hooks import HookTrigger, RoomContext
from roomkit.models.pending_input import PendingInputEvent

__all__ = ["gate_input_required"]

logger = logging.getLogger("roomkit.framework")

Emit = Callable[..., Awaitable[None]]
"""The kit's ``emit(event_type, data, *, room_id=...)``."""


async def gate_input_required(
    event: PendingInputEvent,
    hooks: HookEngine,
    room_context: Callable[[str], Awaitable[RoomContext]],
    emit: Emit,
) -> bool:
    """Run ON_USER_INPUT_REQUIRED for ``event``; ``False`` when a hook rejects it.

    Args:
        event: the new request.
        hooks: the kit's hook engine.
        room_context: reads the room's context, as hooks receive it.
        emit: the kit's framework-event emitter.
    """
    if not event.room_id:
        return True
    allowed, reason = True, None
    trigger = HookTrigger.ON_USER_INPUT_REQUIRED
    channel_type, channel_id = event.channel_type, event.channel_id
    if hooks.has_hooks(trigger, channel_type=channel_type, channel_id=channel_id):
        try:
            ctx: RoomContext | None = await room_context(event.room_id)
        except Exception:
            logger.exception("No room context for pending %s: notifying skipped", event.pending_id)
            ctx = None
        if ctx is not None:
            outcome = await hooks.run_sync(
                trigger, event, ctx, channel_type=channel_type, channel_id=channel_id
            )
            allowed, reason = outcome.allowed, outcome.reason
            if allowed:
                hooks.run_async(
                    trigger, event, ctx, channel_type=channel_type, channel_id=channel_id
                )
    data: dict[str, Any] = {
        "pending_id": event.pending_id,
        "tool_name": event.tool_name,
        "tool_call_id": event.tool_call_id,
        "allowed": allowed,
        "reason": reason,
    }
    await emit("user_input_required", data, room_id=event.room_id)
    return allowed
