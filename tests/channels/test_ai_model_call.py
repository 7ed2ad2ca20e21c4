"""The model call: its bound holds whatever the provider does with a cancellation (a provider
that swallows it is left running, and what it gives late never reaches the room), and what
the provider gives is checked before the turn uses it."""

from __future__ import annotations

import asyncio
import logging

import pytest

from roomkit import InboundMessage, InboundResult, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import ProviderResponseError, ProviderTimeoutError
from roomkit.providers.ai.base import AIContext, AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider


class SwallowingModel(MockAIProvider):
    """A model whose first call catches every cancellation and goes on waiting until
    ``release`` is set; later calls read the script."""

    def __init__(self, *responses: AIResponse) -> None:
        super().__init__(ai_responses=list(responses))
        self.release = asyncio.Event()
        self.called = asyncio.Event()
        self.cancels = 0
        self._first = True

    async def generate(self, context: AIContext) -> AIResponse:
        if self._first:
            self._first = False
            self.called.set()
            while not self.release.is_set():
                try:
                    await self.release.wait()
                except asyncio.CancelledError:
                    self.cancels += 1
            return AIResponse(content="Too late.")
        return await super().generate(context)


class SilentModel(MockAIProvider):
    """A model that never answers, and ends at its cancel."""

    async def generate(self, context: AIContext) -> AIResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def agent(model: MockAIProvider) -> tuple[RoomKit, AIChannel]:
    kit = RoomKit()
    channel = AIChannel("agent", provider=model, tool_loop_timeout_seconds=15)
    kit.register_channel(channel)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    return kit, channel


def say(kit: RoomKit, text: str) -> asyncio.Task[InboundResult]:
    message = InboundMessage("ws", "alice", TextContent(text))
    return asyncio.create_task(kit.process_inbound(message, room_id="r1"))


async def abandoned_calls_end(channel: AIChannel) -> None:
    """Wait until every model call the channel stopped waiting for has ended."""
    if channel.abandoned_calls:
        await asyncio.wait(set(channel.abandoned_calls))


async def test_a_provider_swallowing_its_cancel_fails_at_the_turn_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The room's next message gets its reply; the late answer is dropped, logged once."""
    caplog.set_level(logging.WARNING, logger="roomkit.channels.ai")
    model = SwallowingModel(AIResponse(content="Here now."))
    kit, channel = await agent(model)
    first = say(kit, "hi")
    try:
        # On the virtual clock the wait ends at once: at the turn's end, or after 60 s.
        await asyncio.wait({first}, timeout=60)
        assert first.done()
        with pytest.raises(ProviderTimeoutError, match=r"SwallowingModel\.generate\(\) did not"):
            first.result()
        second = await say(kit, "still there?")
        assert [reply.content.body for reply in second.responses] == ["Here now."]
        assert len(channel.abandoned_calls) == 1
    finally:
        model.release.set()
        await asyncio.wait({first})
    await abandoned_calls_end(channel)
    events = await kit.store.recent_events("r1", 10)
    await kit.close()

    assert [event.content.body for event in events] == ["hi", "still there?", "Here now."]
    assert channel.abandoned_calls == set()
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("SwallowingModel.generate() returned")
    assert "after channel agent stopped waiting for it" in warnings[0]


async def test_closing_the_kit_ends_a_turn_whose_provider_swallows_the_cancel() -> None:
    model = SwallowingModel()
    kit, channel = await agent(model)
    turn = say(kit, "hi")
    await model.called.wait()
    closing = asyncio.create_task(kit.close())
    try:
        await asyncio.wait({closing}, timeout=60)
        assert closing.done()
        assert turn.done()
        assert model.cancels >= 1
    finally:
        model.release.set()
        await asyncio.wait({closing, turn})
    await abandoned_calls_end(channel)

    assert turn.result().responses == ()
    assert channel.abandoned_calls == set()


async def test_a_provider_ending_at_its_cancel_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="roomkit.channels.ai")
    kit, channel = await agent(SilentModel())
    turn = say(kit, "hi")
    with pytest.raises(ProviderTimeoutError):
        await turn
    await abandoned_calls_end(channel)
    await kit.close()

    assert channel.abandoned_calls == set()
    assert caplog.records == []


LOOKUP = AITool(name="lookup", parameters={"type": "object"})


class ArgumentsTextModel(MockAIProvider):
    """A model that hands on a call's arguments as the JSON text the model wrote."""

    async def generate(self, context: AIContext) -> AIResponse:
        call = AIToolCall(id="c1", name="lookup")
        call.arguments = '{"q": "blue'  # type: ignore[assignment]
        return AIResponse(tool_calls=[call])


class NumberKeyedModel(MockAIProvider):
    """A model whose call's arguments are a dict keyed by a number, not by texts."""

    async def generate(self, context: AIContext) -> AIResponse:
        call = AIToolCall(id="c1", name="lookup")
        call.arguments = {1: "blue"}  # type: ignore[dict-item]
        return AIResponse(tool_calls=[call])


class BlocksModel(MockAIProvider):
    """A model that hands on its reply as the vendor's content blocks."""

    async def generate(self, context: AIContext) -> AIResponse:
        response = AIResponse()
        response.content = [{"type": "text", "text": "Blue."}]  # type: ignore[assignment]
        return response


class SyncModel(MockAIProvider):
    def generate(self, context: AIContext) -> AIResponse:  # type: ignore[override]
        return AIResponse(content="Blue.")


async def test_a_call_whose_arguments_are_still_text_fails_naming_the_field() -> None:
    ran: list[str] = []

    async def lookup(name: str, arguments: dict[str, object]) -> str:
        ran.append(name)
        return "found"

    kit = RoomKit()
    kit.register_channel(
        AIChannel("agent", provider=ArgumentsTextModel(), tools=[LOOKUP], tool_handler=lookup)
    )
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    with pytest.raises(ProviderResponseError, match=r"tool_calls\.0\.arguments \(str\)"):
        await say(kit, "hi")
    await kit.close()

    assert ran == []


async def test_a_call_whose_arguments_have_a_key_that_is_no_text_fails_naming_it() -> None:
    kit, _ = await agent(NumberKeyedModel())
    with pytest.raises(
        ProviderResponseError, match=r"tool_calls\.0\.arguments\.1\.\[key\] \(int\)"
    ):
        await say(kit, "hi")
    await kit.close()


async def test_a_reply_that_is_no_text_fails_and_is_not_stored() -> None:
    kit, _ = await agent(BlocksModel())
    with pytest.raises(ProviderResponseError, match=r"content \(list\): Input should be"):
        await say(kit, "hi")
    events = await kit.store.recent_events("r1", 10)
    await kit.close()

    assert [event.content.body for event in events] == ["hi"]


async def test_a_provider_whose_generate_is_not_async_is_told_to_make_it_so() -> None:
    kit, _ = await agent(SyncModel())
    with pytest.raises(ProviderResponseError, match=r"define it as async def generate"):
        await say(kit, "hi")
    await kit.close()
