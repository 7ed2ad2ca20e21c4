"""RoomKit: rooms, channels, inbound messages, framework events and human-input routing."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import pytest

from roomkit import (
    HookExecution,
    HookResult,
    HookTrigger,
    HumanInputHandler,
    HumanInputRejectedError,
    InboundMessage,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.channels.base import Channel
from roomkit.models.enums import ChannelType
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.mock import MockAIProvider

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED


async def kit_with_agent(*replies: str) -> tuple[RoomKit, MockAIProvider]:
    kit = RoomKit()
    provider = MockAIProvider(list(replies) or ["Hello."])
    kit.register_channel(AIChannel("agent", provider=provider))
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")
    return kit, provider


async def test_create_room_with_and_without_an_id() -> None:
    kit = RoomKit()

    named = await kit.create_room("r1", metadata={"topic": "colours"})
    fresh = await kit.create_room()

    assert (named.id, named.metadata) == ("r1", {"topic": "colours"})
    assert fresh.id
    assert fresh.id != named.id
    assert await kit.get_room("r1") is named


async def test_room_ids_are_unique_and_unknown_rooms_raise() -> None:
    kit = RoomKit()
    await kit.create_room("r1")

    with pytest.raises(ValueError, match="already exists"):
        await kit.create_room("r1")
    with pytest.raises(KeyError, match=r"create it with kit\.create_room"):
        await kit.get_room("nope")


def test_register_channel_checks_its_argument_and_the_id() -> None:
    kit = RoomKit()
    ws = WebSocketChannel("ws")
    kit.register_channel(ws)
    kit.register_channel(ws)  # the same channel again is harmless

    with pytest.raises(TypeError, match="takes a channel"):
        kit.register_channel("ws")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        kit.register_channel(WebSocketChannel("ws"))
    assert kit.channels == {"ws": ws}
    assert ws.kit is kit


async def test_attach_channel_needs_the_room_and_the_channel() -> None:
    kit = RoomKit()
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")

    with pytest.raises(KeyError, match="No room"):
        await kit.attach_channel("nope", "ws")
    with pytest.raises(KeyError, match=r"kit\.register_channel"):
        await kit.attach_channel("r1", "nope")
    binding = await kit.attach_channel("r1", "ws", category="transport", metadata={"k": 1})

    assert (binding.room_id, binding.channel_id, binding.category) == ("r1", "ws", "transport")
    context = await kit.room_context("r1")
    assert context.bindings == (binding,)
    assert context.room.id == "r1"


async def test_an_unknown_room_or_channel_s_long_id_is_cut_short_in_the_error() -> None:
    kit = RoomKit()
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    long_id = "x" * 10_000

    calls = (
        lambda: kit.get_room(long_id),
        lambda: kit.attach_channel(long_id, "ws"),
        lambda: kit.attach_channel("r1", long_id),
        lambda: kit.process_inbound(
            InboundMessage("ws", "alice", TextContent("hi")), room_id=long_id
        ),
    )
    for call in calls:
        with pytest.raises(KeyError) as raised:
            await call()
        message = str(raised.value)
        assert len(message) < 200
        assert "'xxxxx" in message
        assert "..." in message


async def test_process_inbound_records_the_message_and_the_reply() -> None:
    kit, provider = await kit_with_agent("Hello, alice.")

    result = await kit.process_inbound(InboundMessage("ws", "alice", TextContent("hi")))

    assert [reply.content.body for reply in result.responses] == ["Hello, alice."]
    events = await kit.store.list_events("r1")
    assert [(e.channel_id, e.sender_id, e.content.body) for e in events] == [
        ("ws", "alice", "hi"),
        ("agent", "agent", "Hello, alice."),
    ]
    assert events[0] is result.event
    assert (await kit.room_context("r1")).participant_ids == {"alice"}
    assert provider.calls[0].messages[0].name == "alice"


async def test_an_authorless_message_adds_nobody_to_the_roster() -> None:
    kit, _ = await kit_with_agent()

    await kit.process_inbound(InboundMessage("ws", "", TextContent("scheduled run")))

    assert (await kit.room_context("r1")).participant_ids == frozenset()


async def test_process_inbound_finds_the_room_through_the_binding() -> None:
    kit = RoomKit()
    kit.register_channel(WebSocketChannel("ws"))
    message = InboundMessage("ws", "alice", TextContent("hi"))

    with pytest.raises(TypeError, match="InboundMessage"):
        await kit.process_inbound("hi")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="attached to no room"):
        await kit.process_inbound(message)
    for room_id in ("r1", "r2"):
        await kit.create_room(room_id)
        await kit.attach_channel(room_id, "ws")
    with pytest.raises(ValueError, match="pass room_id="):
        await kit.process_inbound(message)

    result = await kit.process_inbound(message, room_id="r2")

    assert result.event.room_id == "r2"
    assert result.responses == ()


async def test_the_reply_is_delivered_to_the_rooms_transports_but_not_the_senders_echo() -> None:
    kit, _ = await kit_with_agent("Hi!")
    received: list[RoomEvent] = []

    async def send(connection_id: str, event: RoomEvent) -> None:
        received.append(event)

    ws = kit.get_channel("ws")
    assert isinstance(ws, WebSocketChannel)
    ws.register_connection("c1", send, room_id="r1")

    await kit.process_inbound(InboundMessage("ws", "alice", TextContent("hi")))

    assert [(event.channel_id, event.content.body) for event in received] == [("agent", "Hi!")]


async def test_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kit = RoomKit()
    heard: list[Any] = []

    @kit.on("custom")
    async def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    @kit.on("custom")
    async def fine(event: Any) -> None:
        heard.append((event.type, event.data, event.room_id))

    with caplog.at_level(logging.ERROR, logger="roomkit.framework"):
        await kit.emit("custom", {"n": 1}, room_id="r1")

    assert heard == [("custom", {"n": 1}, "r1")]
    assert kit.has_listeners("custom")
    assert not kit.has_listeners("other")
    assert "listener bug" in caplog.text


async def test_route_human_input_fires_the_kits_hooks_for_a_standalone_handler() -> None:
    kit = RoomKit()
    await kit.create_room("r1")
    handler = HumanInputHandler()
    kit.route_human_input(handler, "ext")
    heard: list[Any] = []
    events: list[dict[str, Any]] = []

    @kit.hook(INPUT, channel_ids={"ext"})
    async def notify(event: Any, ctx: Any) -> HookResult:
        heard.append((event.tool_name, event.channel_id, event.room_id, ctx.room.id))
        handler.resolve(event.pending_id, "blue")
        return HookResult.allow()

    @kit.on("user_input_required")
    async def listen(event: Any) -> None:
        events.append(event.data)

    pending = await handler.create("Ask", {"q": "Colour?"}, room_id="r1", channel_id="ext")

    assert await handler.wait(pending.pending_id) == "blue"
    assert heard == [("Ask", "ext", "r1", "r1")]
    assert events == [
        {
            "pending_id": pending.pending_id,
            "tool_name": "Ask",
            "tool_call_id": "",
            "allowed": True,
            "reason": None,
        }
    ]


async def test_a_block_from_the_kits_hook_rejects_a_standalone_request() -> None:
    kit = RoomKit()
    await kit.create_room("r1")
    handler = HumanInputHandler()
    kit.route_human_input(handler, "ext")

    @kit.hook(INPUT)
    async def deny(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("quiet hours")

    pending = await handler.create("Ask", {}, room_id="r1", channel_id="ext")

    with pytest.raises(HumanInputRejectedError, match="Denied by ON_USER_INPUT_REQUIRED hook"):
        await handler.wait(pending.pending_id)


async def test_a_request_without_a_room_runs_no_hooks_and_stays_open() -> None:
    kit = RoomKit()
    handler = HumanInputHandler()
    kit.route_human_input(handler, "ext")
    ran: list[str] = []

    @kit.hook(INPUT)
    async def deny(event: Any, ctx: Any) -> HookResult:
        ran.append("deny")
        return HookResult.block("no")

    @kit.hook(INPUT, execution=HookExecution.ASYNC)
    async def watch(event: Any, ctx: Any) -> None:
        ran.append("watch")

    @kit.on("user_input_required")
    async def listen(event: Any) -> None:
        ran.append("listen")

    pending = await handler.create("Ask", {}, channel_id="ext")
    await asyncio.sleep(0)  # one tick: the notification task runs to its end
    await kit.hooks.drain()

    assert ran == []
    assert handler.pending[pending.pending_id].status == "pending"
    assert handler.resolve(pending.pending_id, "ok") is True


async def test_a_request_for_an_unknown_room_is_allowed_and_announced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kit = RoomKit()
    handler = HumanInputHandler()
    kit.route_human_input(handler, "ext")
    announced = asyncio.Event()
    events: list[dict[str, Any]] = []

    @kit.hook(INPUT)
    async def deny(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("no")  # pragma: no cover - no room, no context, no hook

    @kit.on("user_input_required")
    async def listen(event: Any) -> None:
        events.append(event.data)
        announced.set()

    with caplog.at_level(logging.ERROR, logger="roomkit.framework"):
        pending = await handler.create("Ask", {}, room_id="ghost", channel_id="ext")
        await announced.wait()

    assert events[0]["allowed"] is True
    assert handler.resolve(pending.pending_id, "ok") is True
    assert "No room context" in caplog.text


async def test_route_human_input_returns_the_token_that_closes_the_scope() -> None:
    kit = RoomKit()
    handler = HumanInputHandler()

    old = kit.route_human_input(handler, "ext")
    new = kit.route_human_input(handler, "ext")
    await handler.close(channel_id="ext", registration=old)  # a displaced owner: no effect

    assert not handler.is_closed_for("ext")
    await handler.close(channel_id="ext", registration=new)
    assert handler.is_closed_for("ext")


async def test_add_hook_registers_without_the_decorator() -> None:
    kit, _ = await kit_with_agent()

    async def observe(event: Any, ctx: Any) -> None:
        pass

    registration = kit.add_hook(INPUT, observe, execution=HookExecution.ASYNC, priority=3)

    assert (registration.priority, registration.name) == (3, "observe")
    assert kit.hooks.has_hooks(INPUT)


@pytest.mark.parametrize("method", ["hook", "add_hook"])
def test_the_hook_options_show_in_the_signature_with_their_defaults(method: str) -> None:
    """As upstream's do: ``help()``, editors and ``inspect`` list every option."""
    parameters = inspect.signature(getattr(RoomKit(), method)).parameters
    defaults = {name: parameters[name].default for name in list(parameters)[1:]}
    assert parameters["timeout"].default == 30
    assert {name: value for name, value in defaults.items() if name != "fn"} == {
        "execution": HookExecution.SYNC,
        "priority": 0,
        "name": None,
        "timeout": 30.0,
        "channel_types": None,
        "channel_ids": None,
        "fail_closed": None,
    }
    assert all(
        parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        for name in ("priority", "name", "timeout", "channel_types", "channel_ids")
    )
    assert parameters["timeout"].annotation == "float"


async def test_add_participant_and_the_room_context() -> None:
    kit = RoomKit()
    await kit.create_room("r1")

    participant = await kit.add_participant("r1", "bob", name="Bob")

    assert (participant.id, participant.room_id, participant.name) == ("bob", "r1", "Bob")
    assert (await kit.room_context("r1")).participant_ids == {"bob"}
    with pytest.raises(KeyError):
        await kit.add_participant("nope", "bob")


async def test_close_closes_the_channels_and_stops_the_observers() -> None:
    kit, _ = await kit_with_agent()
    ws = kit.get_channel("ws")
    assert isinstance(ws, WebSocketChannel)

    async def send(connection_id: str, event: RoomEvent) -> None:
        pass

    ws.register_connection("c1", send, room_id="r1")

    await kit.close()

    assert ws.connections("r1") == []
    result = await kit.process_inbound(InboundMessage("ws", "alice", TextContent("hi")))
    assert result.responses == ()


async def test_a_channel_that_fails_to_close_leaves_no_other_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kit, _ = await kit_with_agent()

    class Broken(Channel):
        async def close(self) -> None:
            raise OSError("socket gone")

    kit.register_channel(Broken("broken"))
    kit.register_channel(WebSocketChannel("ws2"))  # closed after the broken one
    ws2 = kit.get_channel("ws2")
    assert isinstance(ws2, WebSocketChannel)

    async def send(connection_id: str, event: RoomEvent) -> None:
        pass

    ws2.register_connection("c2", send, room_id="r1")
    with (
        caplog.at_level(logging.ERROR, "roomkit.framework"),
        pytest.raises(OSError, match="socket gone"),
    ):
        await kit.close()

    assert ws2.connections("r1") == []
    assert "'broken' failed to close" in caplog.text


async def test_the_store_pages_and_windows_the_history() -> None:
    kit, _ = await kit_with_agent("a", "b", "c")
    for text in ("one", "two", "three"):
        await kit.process_inbound(InboundMessage("ws", "alice", TextContent(text)))

    page = await kit.store.list_events("r1", offset=1, limit=2)
    recent = await kit.store.recent_events("r1", 2)

    assert [event.content.body for event in page] == ["a", "two"]
    assert [event.content.body for event in recent] == ["three", "c"]
    assert await kit.store.recent_events("r1", 0) == []


async def test_detaching_a_channel_tells_it_and_unbinds_it() -> None:
    detached: list[str] = []

    class Recorder(Channel):
        async def on_detach(self, room_id: str) -> None:
            detached.append(room_id)

    kit = RoomKit()
    kit.register_channel(Recorder("rec"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "rec")

    assert await kit.detach_channel("r1", "rec") is True
    assert await kit.detach_channel("r1", "rec") is False

    assert detached == ["r1"]
    assert await kit.store.list_bindings("r1") == []


def test_route_human_input_checks_the_handler_and_the_door() -> None:
    kit = RoomKit()

    with pytest.raises(TypeError, match="takes a HumanInputHandler"):
        kit.route_human_input(object(), "ext")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a ChannelType"):
        kit.route_human_input(HumanInputHandler(), "ext", channel_type="ai")  # type: ignore[arg-type]
    assert kit.human_input_handlers == []


async def test_each_request_fires_with_the_door_it_came_through() -> None:
    """The door a handler is routed with does not steer its hooks: the request's own does."""
    kit = RoomKit()
    await kit.create_room("r1")
    handler = HumanInputHandler()
    kit.route_human_input(handler, "ext", channel_type=ChannelType.CONFERENCE)
    doors: list[ChannelType] = []
    announced: list[str] = []
    both = asyncio.Event()

    @kit.hook(INPUT, channel_types={ChannelType.REALTIME_VOICE})
    async def voice_only(event: Any, ctx: Any) -> None:
        doors.append(event.channel_type)

    @kit.on("user_input_required")
    async def listen(event: Any) -> None:
        announced.append(event.data["pending_id"])
        if len(announced) == 2:
            both.set()

    for door in (ChannelType.AI, ChannelType.REALTIME_VOICE):
        await handler.create("Ask", {}, room_id="r1", channel_id="ext", channel_type=door)
    await both.wait()

    assert doors == [ChannelType.REALTIME_VOICE]


async def test_a_channel_needs_no_base_class() -> None:
    """Any object with the members the kit uses is a channel: this one delivers and replies."""
    delivered: list[str] = []

    class Echo:
        channel_id = "echo"

        def set_framework(self, kit: RoomKit) -> None:
            self.kit = kit

        async def close(self) -> None:
            pass

        async def on_detach(self, room_id: str) -> None:
            pass

        async def deliver(self, event: RoomEvent) -> None:
            delivered.append(event.content.body)

        async def respond(
            self, room_id: str, event: RoomEvent, *, turn: object = None
        ) -> RoomEvent:
            said = TextContent(f"echo {event.content.body}")
            return RoomEvent(room_id, self.channel_id, "", said)

    kit = RoomKit()
    echo = Echo()
    kit.register_channel(echo)
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "echo")
    await kit.attach_channel("r1", "ws")

    result = await kit.process_inbound(InboundMessage("ws", "u1", TextContent("hi")), room_id="r1")

    assert echo.kit is kit
    assert [reply.content.body for reply in result.responses] == ["echo hi"]
    assert delivered == ["hi"]
