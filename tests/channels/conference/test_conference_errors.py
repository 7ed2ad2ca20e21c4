"""The conference channel's lifecycle errors are errors of the tree."""

from __future__ import annotations

import pytest
from tests.channels.conference.conference_harness import MakeConference

from roomkit import ChannelClosedError, ChannelNotRegisteredError, ChannelStateError
from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
from roomkit.conference.mock import MockConferenceBackend
from roomkit.voice.realtime.mock import MockRealtimeProvider


async def test_plugging_twice_raises_a_state_error(make: MakeConference) -> None:
    h = await make()
    with pytest.raises(ChannelStateError, match="unplug_realtime"):
        h.conference.plug_realtime(ConferenceRealtimeConfig(MockRealtimeProvider()))


async def test_starting_unplugged_raises_a_state_error(make: MakeConference) -> None:
    h = await make()
    await h.conference.unplug_realtime()
    with pytest.raises(ChannelStateError, match="plug_realtime"):
        await h.conference.start_realtime("r1")


async def test_a_closed_conference_raises_closed(make: MakeConference) -> None:
    h = await make()
    await h.conference.close()
    with pytest.raises(ChannelClosedError, match="plug nothing more"):
        h.conference.plug_realtime(ConferenceRealtimeConfig(MockRealtimeProvider()))
    with pytest.raises(ChannelClosedError):
        await h.conference.join("r1")


async def test_a_room_in_another_conference_raises_a_state_error(make: MakeConference) -> None:
    h = await make()
    with pytest.raises(ChannelStateError, match="leave"):
        await h.conference.join("r1", conference_id="other")


async def test_an_unregistered_conference_raises_not_registered() -> None:
    loose = ConferenceChannel("loose", backend=MockConferenceBackend())
    with pytest.raises(ChannelNotRegisteredError):
        await loose.join("r1")
