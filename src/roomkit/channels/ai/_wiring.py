"""Wire an external tool handler to the kit's BEFORE_TOOL_USE and ON_TOOL_CALL hooks."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.gate import gate
from roomkit.channels._calls.report import report_event
from roomkit.channels.ai._turn import Turn
from roomkit.models.tool_call import ToolCallEvent
from roomkit.tools.context import current_tool_actor_id
from roomkit.tools.external import BeforeToolDecision, ExternalToolHandler

if TYPE_CHECKING:
    from roomkit.channels.ai.channel import AIChannel
    from roomkit.core.framework import RoomKit

__all__ = ["wire_external"]

logger = logging.getLogger("roomkit.channels.ai")


async def _turn_for(channel: AIChannel, kit: RoomKit, room_id: str | None) -> Turn | None:
    if not room_id:
        return None
    for turn in channel.running_turns():
        if turn.room_id == room_id:
            return turn
    try:
        room = await kit.get_room(room_id)
    except KeyError:
        return None
    return Turn(channel, room, current_tool_actor_id(), channel.tools_by_name())


def wire_external(channel: AIChannel, kit: RoomKit, external: ExternalToolHandler) -> None:
    """Give ``external`` the channel's id and its hooks."""
    previous = external._channel_id
    if previous and previous != channel.channel_id:
        logger.warning(
            "External tool handler %s moves from channel %s to %s: "
            "Give each channel its own handler instance",
            type(external).__name__,
            previous,
            channel.channel_id,
        )
    external._channel_id = channel.channel_id

    async def before_tool_use(
        name: str, arguments: dict[str, Any], tool_call_id: str, room_id: str | None
    ) -> BeforeToolDecision:
        turn = await _turn_for(channel, kit, room_id)
        if turn is None:
            return BeforeToolDecision(True)
        decision = await gate(turn.site(tool_call_id), name, arguments, turn.tools.get(name))
        rewritten = decision.arguments if decision.arguments is not arguments else None
        return BeforeToolDecision(
            decision.allowed, arguments=rewritten, detail=decision.detail, reason=decision.reason
        )

    async def on_tool_call(event: ToolCallEvent) -> None:
        turn = await _turn_for(channel, kit, event.room_id)
        if turn is not None:
            await report_event(turn.site(event.tool_call_id), event)

    external._before_tool_hook = before_tool_use
    external._on_tool_hook = on_tool_call
