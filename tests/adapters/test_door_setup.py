"""What the A2A and AG-UI doors set up on a kit: their own channel, and the handler they serve."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from roomkit import HumanInputToolHandler, RoomKit
from roomkit.adapters.a2a import A2AChannel, RoomKitExecutor
from roomkit.adapters.agui import AGUIChannel, agui_router
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.mock import MockAIProvider

SECRET = "s" * 32


def executor(kit: RoomKit, **options: Any) -> Any:
    return RoomKitExecutor(kit, agent="ai", **options)


def router(kit: RoomKit, **options: Any) -> Any:
    return agui_router(kit, agent="ai", secret=SECRET, **options)


DOORS = [
    pytest.param(executor, A2AChannel, "RoomKitExecutor()", id="a2a"),
    pytest.param(router, AGUIChannel, "agui_router()", id="agui"),
]


def kit_with_handlers(count: int) -> RoomKit:
    """A kit with an agent and ``count`` routed human-input handlers."""
    kit = RoomKit()
    kit.register_channel(AIChannel("ai", provider=MockAIProvider([])))
    for number in range(count):
        kit.route_human_input(HumanInputToolHandler({"Ask"}).handler, f"door-{number}")
    return kit


@pytest.mark.parametrize(("door", "kind", "name"), DOORS)
def test_a_door_registers_its_channel_once_and_refuses_an_id_taken_by_another(
    door: Callable[..., Any], kind: type, name: str
) -> None:
    kit = kit_with_handlers(1)
    door(kit, channel_id="front")
    channel = kit.get_channel("front")
    assert isinstance(channel, kind)
    door(kit, channel_id="front")
    assert kit.get_channel("front") is channel
    with pytest.raises(
        ValueError, match=r"registered, as a channel of kind AIChannel: give .* a channel id"
    ):
        door(kit, channel_id="ai")


@pytest.mark.parametrize(("door", "kind", "name"), DOORS)
def test_a_door_without_a_handler_serves_the_kits_only_routed_one(
    door: Callable[..., Any], kind: type, name: str
) -> None:
    with pytest.raises(ValueError, match=rf"no human-input handler: .* to {name}"):
        door(kit_with_handlers(0))
    with pytest.raises(ValueError, match="routes 2 human-input handlers: pass handler="):
        door(kit_with_handlers(2))
    kit = kit_with_handlers(1)
    door(kit)
    assert len(kit.human_input_handlers) == 1
