"""The AI channel's lifecycle errors are errors of the tree."""

from __future__ import annotations

import pytest

from roomkit import ChannelNotRegisteredError, RoomEvent, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.store import OpenTurn
from roomkit.providers.ai.mock import MockAIProvider


async def test_an_unregistered_channel_raises_not_registered() -> None:
    ai = AIChannel("agent", MockAIProvider(ai_responses=[]))
    event = RoomEvent("r1", "ws", "alice", TextContent("hi"))

    with pytest.raises(ChannelNotRegisteredError, match="register_channel"):
        await ai.respond("r1", event)
    with pytest.raises(ChannelNotRegisteredError, match="register_channel"):
        await ai.resume_turn(OpenTurn("t1", "r1", "agent", "alice"))
