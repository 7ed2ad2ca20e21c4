"""What the AG-UI stream carries when the agent's own words hold text UTF-8 cannot encode."""

from __future__ import annotations

from ag_ui.core import EventType
from agui_front import Front, texts

from roomkit.providers.ai.base import AIResponse


async def test_a_reply_with_a_lone_surrogate_is_streamed_replaced_and_the_run_ends() -> None:
    """A model's reply holding a lone surrogate (JSON's ``"\\ud800"``) reaches the room, and
    the stream, with U+FFFD in its place, and the run still ends with ``RUN_FINISHED``, not a
    stream cut short."""
    front = Front([AIResponse(content="Blue \ud800 it is.")])
    try:
        events = await front.run("Paint it")
    finally:
        await front.close()
    assert texts(events) == ["Blue \ufffd it is."]
    assert events[-1].type == EventType.RUN_FINISHED
