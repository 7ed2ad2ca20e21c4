"""A call's bounds are decided once, the same way on every channel."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from roomkit import HumanInputToolHandler
from roomkit.channels._calls.bounds import BoundSettings, CallBounds, decide
from roomkit.channels.ai import AIChannel
from roomkit.channels.conference import ConferenceRealtimeConfig
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

Timeouts = Mapping[str, float | None]


def ai(human: HumanInputToolHandler, timeouts: Timeouts) -> BoundSettings:
    return AIChannel(
        "agent",
        MockAIProvider(ai_responses=[]),
        human_input_handler=human,
        tool_timeout_seconds=10,
        tool_timeouts=timeouts,
    )


def voice(human: HumanInputToolHandler, timeouts: Timeouts) -> BoundSettings:
    return RealtimeVoiceChannel(
        "voice",
        provider=MockRealtimeProvider(),
        transport=MockRealtimeTransport(),
        human_input_handler=human,
        tool_timeout_seconds=10,
        tool_timeouts=timeouts,
    )


def conference(human: HumanInputToolHandler, timeouts: Timeouts) -> BoundSettings:
    return ConferenceRealtimeConfig(
        MockRealtimeProvider(),
        human_input_handler=human,
        tool_timeout_seconds=10,
        tool_timeouts=timeouts,
    )


Build = Callable[[HumanInputToolHandler, Timeouts], BoundSettings]
CHANNELS = pytest.mark.parametrize("build", [ai, voice, conference])


@CHANNELS
def test_a_host_tool_runs_under_the_channel_bound(build: Build) -> None:
    settings = build(HumanInputToolHandler({"Ask"}, timeout=300), {"slow": 60, "free": None})

    assert decide(settings, "lookup") == CallBounds(10.0, 10.0, None)
    assert decide(settings, "slow") == CallBounds(60.0, 60.0, None)
    assert decide(settings, "free") == CallBounds(None, None, None)


@CHANNELS
def test_a_person_has_the_handler_timeout_capped_by_the_tool_bound(build: Build) -> None:
    """A human-input call is never cancelled: its bound becomes the person's deadline."""
    human = HumanInputToolHandler({"Ask", "Short", "Long"}, timeout=300)
    settings = build(human, {"Short": 5, "Long": 900})

    assert decide(settings, "Ask") == CallBounds(None, None, 300)
    assert decide(settings, "Short") == CallBounds(5.0, None, 5.0)
    assert decide(settings, "Long") == CallBounds(900.0, None, 300)


@CHANNELS
def test_the_public_call_bound_is_the_decided_channel_bound(build: Build) -> None:
    settings = build(HumanInputToolHandler({"Ask"}, timeout=300), {"Ask": 5})

    call_bound = getattr(settings, "call_bound")  # noqa: B009 - every channel has one
    for name in ("Ask", "lookup"):
        assert call_bound(name) == decide(settings, name).channel
