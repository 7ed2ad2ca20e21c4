"""Turns per second through ``RoomKit.process_inbound`` with the scripted model.

Three kinds of turn: text only; one plain tool call then a reply; one AskUserQuestion call
answered at once by the ON_USER_INPUT_REQUIRED hook, then a reply. Then the growth check: a
room that keeps talking for 600 human-tool turns, first turns against last turns.

Run: python bench/bench_turns.py
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from typing import Any

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

TURNS = 1_000
GROWTH_TURNS = 600
TARGET_MS = 2.0

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)
LOOKUP = AITool(
    name="lookup",
    description="Look something up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


async def lookup(name: str, arguments: dict[str, Any]) -> str:
    return '{"found": true}'


def script(kind: str) -> list[AIResponse]:
    if kind == "text":
        return [AIResponse(content="Hello.")]
    name, args = (
        ("lookup", {"q": "x"}) if kind == "tool" else ("AskUserQuestion", {"question": "?"})
    )
    return [
        AIResponse(tool_calls=[AIToolCall(id="tc-1", name=name, arguments=args)]),
        AIResponse(content="Done."),
    ]


async def build(kind: str) -> tuple[RoomKit, str]:
    kit = RoomKit()
    human = HumanInputToolHandler({"AskUserQuestion"}, tool_definitions=[ASK])
    ai = AIChannel(
        "agent",
        provider=MockAIProvider(ai_responses=script(kind)),
        tool_handler=lookup,
        tools=[LOOKUP],
        human_input_handler=human,
    )
    kit.register_channel(ai)

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def answer(event: PendingInputEvent, ctx: object) -> None:
        human.handler.resolve(event.pending_id, '{"answer": "blue"}')

    await kit.create_room("r")
    await kit.attach_channel("r", "agent")
    return kit, "r"


async def time_turns(kit: RoomKit, room_id: str, count: int) -> list[float]:
    message = InboundMessage("web", "alice", TextContent("hi"))
    laps = []
    for _ in range(count):
        start = time.perf_counter()
        await kit.process_inbound(message, room_id=room_id)
        laps.append(time.perf_counter() - start)
    return laps


async def main() -> None:
    gc.collect()
    print(f"{'turn':<12}{'median ms':>11}{'p99 ms':>9}{'turns/s':>10}{'target':>14}")
    for kind in ("text", "tool", "human"):
        kit, room = await build(kind)
        await time_turns(kit, room, 50)  # warm-up
        laps = await time_turns(kit, room, TURNS)
        median = statistics.median(laps) * 1e3
        p99 = statistics.quantiles(laps, n=100)[98] * 1e3
        target = f"<= {TARGET_MS} ms" if kind == "human" else "-"
        verdict = ("pass" if median <= TARGET_MS else "MISS") if kind == "human" else ""
        print(f"{kind:<12}{median:>11.3f}{p99:>9.3f}{1e3 / median:>10.0f}{target:>14} {verdict}")
        await kit.close()

    kit, room = await build("human")
    laps = await time_turns(kit, room, GROWTH_TURNS)
    first = statistics.median(laps[:50]) * 1e3
    last = statistics.median(laps[-50:]) * 1e3
    growth = (last / first - 1) * 100
    print(
        f"\nhistory growth over {GROWTH_TURNS} human turns in one room: first 50 median "
        f"{first:.3f} ms, last 50 median {last:.3f} ms ({growth:+.0f} %; target: flat)"
    )
    await kit.close()


if __name__ == "__main__":
    asyncio.run(main())
