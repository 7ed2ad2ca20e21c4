"""The kit's channels and human-input handlers meet the protocols in ``roomkit.core.ports``."""

from __future__ import annotations

import roomkit.models.kinds
import roomkit.tools.human_input._kinds
from roomkit import (
    AIChannel,
    ConferenceChannel,
    HumanInputHandler,
    RealtimeVoiceChannel,
    WebSocketChannel,
)
from roomkit.conference.mock import MockConferenceBackend
from roomkit.core.ports import (
    DeliveringChannel,
    HumanInputRoute,
    KitChannel,
    RespondingChannel,
    ResumableChannel,
    delivers,
    responds,
    resumes,
)
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport


def test_each_channel_is_what_the_kit_takes_it_for() -> None:
    ai = AIChannel("ai", provider=MockAIProvider())
    ws = WebSocketChannel("ws")
    voice = RealtimeVoiceChannel(
        "voice", provider=MockRealtimeProvider(), transport=MockRealtimeTransport()
    )
    conference = ConferenceChannel("conf", backend=MockConferenceBackend())

    for channel in (ai, ws, voice, conference):
        assert isinstance(channel, KitChannel)
    assert isinstance(ai, RespondingChannel)
    assert isinstance(ai, ResumableChannel)
    assert isinstance(ws, DeliveringChannel)
    for other in (ws, voice, conference):
        assert not isinstance(other, RespondingChannel)
        assert not isinstance(other, ResumableChannel)
    for other in (ai, voice, conference):
        assert not isinstance(other, DeliveringChannel)


def test_the_kits_quick_checks_agree_with_isinstance_for_every_channel() -> None:
    channels = (
        AIChannel("ai", provider=MockAIProvider()),
        WebSocketChannel("ws"),
        RealtimeVoiceChannel(
            "voice", provider=MockRealtimeProvider(), transport=MockRealtimeTransport()
        ),
        ConferenceChannel("conf", backend=MockConferenceBackend()),
        None,
        object(),
    )
    for _ in range(2):  # asked again, the answer found for the class is the same
        for channel in channels:
            assert responds(channel) is isinstance(channel, RespondingChannel)
            assert resumes(channel) is isinstance(channel, ResumableChannel)
            assert delivers(channel) is isinstance(channel, DeliveringChannel)


def test_a_human_input_handler_is_a_route() -> None:
    assert isinstance(HumanInputHandler(), HumanInputRoute)
    assert not isinstance(object(), HumanInputRoute)


def test_the_kinds_keep_their_old_path() -> None:
    old, new = roomkit.tools.human_input._kinds, roomkit.models.kinds
    assert old.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name)
