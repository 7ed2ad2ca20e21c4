"""The spec's "Voice channels" code block runs, its placeholders filled with the mocks."""

from __future__ import annotations

from typing import Any

from tests.channels.ai_harness import new_human

from roomkit import HookTrigger, PendingInputEvent, RoomKit
from roomkit.conference.mock import MockConferenceBackend
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

SPEC_BLOCK = """
from roomkit import ConferenceChannel, ConferenceRealtimeConfig, RealtimeVoiceChannel

voice = RealtimeVoiceChannel(
    "voice",
    provider=provider,
    transport=transport,
    human_input_handler=human,   # declared in every session, served first
)

conference = ConferenceChannel(
    "conf",
    backend=backend,
    realtime=ConferenceRealtimeConfig(provider=provider, human_input_handler=human),
)
"""


async def test_the_voice_channels_block_runs_and_both_channels_ask() -> None:
    provider, transport = MockRealtimeProvider(), MockRealtimeTransport()
    backend = MockConferenceBackend()
    human = new_human()
    scope: dict[str, Any] = {
        "provider": provider,
        "transport": transport,
        "backend": backend,
        "human": human,
    }
    exec(SPEC_BLOCK, scope)

    kit = RoomKit()
    doors: list[tuple[str, str, str | None]] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def notify(event: PendingInputEvent, ctx: Any) -> None:
        doors.append((event.channel_type, event.channel_id, event.actor_id))
        human.handler.resolve(event.pending_id, '{"answer": "blue"}')

    voice, conference = scope["voice"], scope["conference"]
    kit.register_channel(voice)
    kit.register_channel(conference)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "voice")
    await kit.attach_channel("r1", "conf")
    await conference.join("r1")
    await backend.simulate_participant_joined("r1", "bob")
    await backend.simulate_track_published("r1", "bob")
    await backend.simulate_audio("r1", "bob", b"\x00")
    call_session = await voice.start_session("r1", "alice", "alice-phone")

    await provider.simulate_tool_call(call_session, "v-1", "Ask", {"question": "Color?"})
    room_session = conference.realtime_session("r1")
    await provider.simulate_tool_call(room_session, "c-1", "Ask", {"question": "Size?"})

    assert await provider.wait_for_tool_result("v-1") == '{"answer": "blue"}'
    assert await provider.wait_for_tool_result("c-1") == '{"answer": "blue"}'
    assert sorted(doors) == [("conference", "conf", "bob"), ("realtime_voice", "voice", "alice")]
    await kit.close()
