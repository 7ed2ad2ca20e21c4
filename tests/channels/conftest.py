"""Fixtures for the channel tests.

Async tests here run on the virtual clock: a bound that nobody meets (a tool waiting on an
event that is never set, a person who never answers) expires at once, in deadline order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
from ai_harness import DONE, Build, Harness, new_human

from roomkit import HookExecution, HookTrigger, RoomKit, ToolCallEvent, WebSocketChannel
from roomkit.channels.ai import AIChannel
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.testing import VirtualClockLoop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], VirtualClockLoop]]:
    return {"virtual_clock": VirtualClockLoop}


@pytest.fixture
async def build() -> AsyncIterator[Build]:
    """``await build(*responses, human=..., **channel_options)`` makes a :class:`Harness`.

    The scripted responses are followed by a final "Done." reply. ``human`` defaults to
    ``new_human()``; pass ``None`` for a channel without human-input tools. The kits are
    closed at the end of the test.
    """
    kits: list[RoomKit] = []
    default = object()

    async def make(
        *responses: AIResponse,
        human: Any = default,
        binding_metadata: dict[str, Any] | None = None,
        **options: Any,
    ) -> Harness:
        kit = RoomKit()
        kits.append(kit)
        provider = MockAIProvider(ai_responses=[*responses, DONE])
        handler = new_human() if human is default else human
        ai = AIChannel(
            "agent",
            provider=provider,
            system_prompt="You help.",
            human_input_handler=handler,
            **options,
        )
        ws = WebSocketChannel("ws")
        kit.register_channel(ai)
        kit.register_channel(ws)
        await kit.create_room("r1")
        await kit.attach_channel("r1", "agent", metadata=binding_metadata)
        await kit.attach_channel("r1", "ws")
        harness = Harness(kit, ai, ws, provider, handler)

        async def send(connection_id: str, event: RoomEvent) -> None:
            harness.delivered.append(event)

        ws.register_connection("c1", send, room_id="r1")

        @kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
        async def record(event: ToolCallEvent, ctx: Any) -> None:
            harness.reports.append(event)

        return harness

    yield make
    for kit in kits:
        await kit.close()
