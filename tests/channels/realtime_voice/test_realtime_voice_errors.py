"""The voice channel's lifecycle errors are errors of the tree, each saying what to do."""

from __future__ import annotations

import pytest
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit import ChannelClosedError, ChannelNotRegisteredError, ChannelStateError
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.core.exceptions import SessionNotOpenError
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport


async def test_an_unregistered_channel_starts_no_session() -> None:
    voice = RealtimeVoiceChannel(
        "voice", provider=MockRealtimeProvider(), transport=MockRealtimeTransport()
    )
    with pytest.raises(ChannelNotRegisteredError, match="register_channel"):
        await voice.start_session("r1", "alice", None)


async def test_a_closed_channel_raises_closed(make: MakeVoice) -> None:
    h = await make()
    await h.voice.close()
    with pytest.raises(ChannelClosedError, match="start no new sessions"):
        await h.voice.start_session("r1", "bob", None)


async def test_reasoning_without_a_backend_raises_a_state_error(make: MakeVoice) -> None:
    h = await make(reasoning_backend=None)
    with pytest.raises(ChannelStateError, match="pass reasoning_backend="):
        await h.voice.reason(h.session, "anything")


async def test_reasoning_in_an_ended_session_raises_not_open(make: MakeVoice) -> None:
    h = await make()
    await h.voice.end_session(h.session)
    with pytest.raises(SessionNotOpenError, match="start_session"):
        await h.voice.reason(h.session, "anything")
