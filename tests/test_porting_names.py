"""Names RoomKit 0.109 code uses resolve here too, next to the paths the spec fixes."""

from __future__ import annotations

from typing import Any

import pytest

import roomkit
from roomkit import (
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIToolResultPart
from roomkit.providers.ai.mock import MockAIProvider


def test_a_tool_result_part_takes_and_reads_result() -> None:
    part = AIToolResultPart(tool_call_id="tc-1", name="lookup", result="42")

    assert (part.content, part.result) == ("42", "42")
    assert part.model_dump()["content"] == "42"
    assert AIToolResultPart.model_validate(part.model_dump()) == part
    assert AIToolResultPart(tool_call_id="tc-1", name="lookup", content="42") == part


def test_tools_reexports_the_human_input_handlers() -> None:
    import roomkit.tools
    from roomkit.tools import human_input

    assert roomkit.tools.HumanInputHandler is human_input.HumanInputHandler
    assert roomkit.tools.HumanInputToolHandler is human_input.HumanInputToolHandler
    assert {"HumanInputHandler", "HumanInputToolHandler"} <= set(roomkit.tools.__all__)


def test_the_top_level_exports_the_binding_and_the_policy() -> None:
    from roomkit.models.room import ChannelBinding
    from roomkit.tools.policy import ToolPolicy

    assert roomkit.ChannelBinding is ChannelBinding
    assert roomkit.ToolPolicy is ToolPolicy
    assert {"ChannelBinding", "ToolPolicy"} <= set(roomkit.__all__)


def test_the_enums_module_holds_the_hook_enums() -> None:
    """RoomKit 0.109 code imports the hook enums from ``roomkit.models.enums``."""
    from roomkit.models import enums, hooks
    from roomkit.models.enums import HookExecution, HookTrigger

    assert HookTrigger is roomkit.HookTrigger is hooks.HookTrigger
    assert HookExecution is roomkit.HookExecution is hooks.HookExecution
    assert {"ChannelType", "HookExecution", "HookTrigger"} <= set(enums.__all__)


def test_the_channels_package_exports_the_channels() -> None:
    """``from roomkit.channels import RealtimeVoiceChannel`` (RoomKit 0.109's path) works."""
    import roomkit.channels
    from roomkit.channels import (
        AIChannel,
        Channel,
        ConferenceChannel,
        RealtimeVoiceChannel,
        WebSocketChannel,
    )

    assert RealtimeVoiceChannel is roomkit.RealtimeVoiceChannel
    assert AIChannel is roomkit.AIChannel
    assert WebSocketChannel is roomkit.WebSocketChannel
    assert ConferenceChannel is roomkit.ConferenceChannel
    assert Channel is roomkit.channels.base.Channel
    assert sorted(roomkit.channels.__all__) == sorted(
        ["AIChannel", "Channel", "ConferenceChannel", "RealtimeVoiceChannel", "WebSocketChannel"]
    )
    with pytest.raises(AttributeError, match="has no attribute 'SmsChannel'"):
        roomkit.channels.SmsChannel  # noqa: B018 - the lookup is the test


def test_the_reference_model_paths_alias_ours() -> None:
    from roomkit.models.channel import ChannelBinding
    from roomkit.models.context import RoomContext
    from roomkit.models.hooks import RoomContext as OurRoomContext
    from roomkit.models.room import ChannelBinding as OurChannelBinding

    assert ChannelBinding is OurChannelBinding
    assert RoomContext is OurRoomContext


def test_the_reference_event_and_delivery_paths_alias_ours() -> None:
    """A channel or app written for 0.109 imports its messages from these modules."""
    from roomkit.models import room
    from roomkit.models.delivery import InboundMessage, InboundResult
    from roomkit.models.event import RoomEvent, TextContent
    from roomkit.models.framework_event import FrameworkEvent
    from roomkit.models.hook import HookResult
    from roomkit.models.participant import Participant

    assert (InboundMessage, InboundResult) == (room.InboundMessage, room.InboundResult)
    assert (RoomEvent, TextContent) == (room.RoomEvent, room.TextContent)
    assert FrameworkEvent is room.FrameworkEvent
    assert Participant is room.Participant
    assert HookResult is roomkit.HookResult


async def test_the_reference_anthropic_path_aliases_ours() -> None:
    from roomkit.providers import anthropic
    from roomkit.providers.ai import anthropic as ours

    provider = anthropic.AnthropicAIProvider(
        anthropic.AnthropicConfig(api_key="sk-test", model="claude-opus-5")
    )

    assert anthropic.AnthropicAIProvider is ours.AnthropicAIProvider
    assert anthropic.AnthropicConfig is ours.AnthropicConfig
    assert provider.model_name == "claude-opus-5"
    await provider.close()


async def test_hook_takes_the_execution_by_position() -> None:
    kit = RoomKit()

    @kit.hook(HookTrigger.ON_TOOL_CALL, HookExecution.ASYNC)
    async def observe(event: Any, ctx: Any) -> None:
        pass

    assert kit.hooks.has_hooks(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
    assert not kit.hooks.has_hooks(HookTrigger.ON_TOOL_CALL, execution=HookExecution.SYNC)
    await kit.close()


async def test_unregister_channel_returns_it_and_frees_its_id() -> None:
    kit = RoomKit()
    ws = WebSocketChannel("ws")
    kit.register_channel(ws)

    assert kit.unregister_channel("ws") is ws
    assert kit.get_channel("ws") is None
    assert kit.unregister_channel("ws") is None
    again = WebSocketChannel("ws")
    kit.register_channel(again)
    assert kit.get_channel("ws") is again
    await kit.close()


async def test_a_replaced_channels_close_withdraws_none_of_the_new_ones_requests() -> None:
    kit = RoomKit()
    human = HumanInputToolHandler({"Ask"})
    old = AIChannel("agent", provider=MockAIProvider(), human_input_handler=human)
    kit.register_channel(old)
    kit.unregister_channel("agent")
    kit.register_channel(AIChannel("agent", provider=MockAIProvider(), human_input_handler=human))
    pending = await human.handler.create("Ask", {}, channel_id="agent")

    await old.close()

    assert pending.pending_id in human.handler.pending
    await kit.close()


async def test_attach_channel_keeps_a_group_on_the_binding() -> None:
    kit = RoomKit()
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")

    binding = await kit.attach_channel("r1", "ws", group="lobby")

    assert binding.group == "lobby"
    assert await kit.store.list_bindings("r1") == [binding]
    with pytest.raises(TypeError, match="group must be a string"):
        await kit.attach_channel("r1", "ws", group=3)  # type: ignore[arg-type]
    await kit.close()


async def test_a_channel_written_for_0109_gets_the_rooms_messages() -> None:
    """A ``Channel`` subclass with 0.109's ``deliver(event, binding, context)`` is delivered to,
    with its binding and the room."""
    from roomkit.channels.base import Channel
    from roomkit.models.channel import ChannelBinding
    from roomkit.models.context import RoomContext
    from roomkit.models.enums import ChannelType

    class SmsChannel(Channel):
        channel_type = ChannelType.WEBSOCKET

        def __init__(self, channel_id: str) -> None:
            super().__init__(channel_id)
            self.sent: list[tuple[str, ChannelBinding, RoomContext]] = []

        async def handle_inbound(self, message: Any, context: Any) -> Any:
            raise NotImplementedError

        async def deliver(self, event: Any, binding: ChannelBinding, context: RoomContext) -> None:
            self.sent.append((event.content.body, binding, context))

    kit = RoomKit()
    sms = SmsChannel("sms")
    kit.register_channel(sms)
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "sms", group="texts")
    await kit.attach_channel("r1", "ws")

    await kit.process_inbound(InboundMessage("ws", "alice", TextContent("hello")), room_id="r1")

    [(body, binding, context)] = sms.sent
    assert (body, binding.channel_id, binding.group) == ("hello", "sms", "texts")
    assert context.room.id == "r1"
    assert [p.id for p in context.participants] == ["alice"]
    await kit.close()


def test_a_deliver_of_another_shape_is_refused_when_registered() -> None:
    from roomkit.channels.base import Channel
    from roomkit.models.enums import ChannelType

    class Odd(Channel):
        channel_type = ChannelType.WEBSOCKET

        async def deliver(self, event: Any, binding: Any) -> None:
            pass

    kit = RoomKit()
    with pytest.raises(TypeError, match=r"deliver must take \(event\) or \(event, binding"):
        kit.register_channel(Odd("odd"))
    assert kit.get_channel("odd") is None
