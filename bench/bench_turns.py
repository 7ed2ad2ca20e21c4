"""Turns per second through ``RoomKit.process_inbound`` with the scripted model.

Three kinds of turn: text only; one plain tool call then a reply; one AskUserQuestion call
answered at once by the ON_USER_INPUT_REQUIRED hook, then a reply. Two more for approvals:
the plain tool call under an ``Approval`` whose ``when=`` says no (target: at most 5 % over
the plain call), and the plain tool call held for approval and approved at once by the hook
(target: at most 1.2 times the AskUserQuestion turn). Then the growth check: a room that
keeps talking for 600 human-tool turns, first turns against last turns.

Run: python bench/bench_turns.py (``--quick``: fewer turns and paired rounds)
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from typing import Any

from _harness import Row, percentile, start

from roomkit import (
    AITool,
    Approval,
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
from roomkit.tools.approvals import approve

TURNS = 1_000
GROWTH_TURNS = 600
QUICK_TURNS = 300
QUICK_GROWTH_TURNS = 200
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
        ("AskUserQuestion", {"question": "?"}) if kind == "human" else ("lookup", {"q": "x"})
    )
    return [
        AIResponse(tool_calls=[AIToolCall(id="tc-1", name=name, arguments=args)]),
        AIResponse(content="Done."),
    ]


def never(name: str, arguments: dict[str, Any]) -> bool:
    return False


async def build(kind: str) -> tuple[RoomKit, str]:
    kit = RoomKit()
    approvals = {}
    if kind == "unheld":
        approvals = {"lookup": Approval(when=never)}
    elif kind == "approval":
        approvals = {"lookup": Approval()}
    human = HumanInputToolHandler({"AskUserQuestion"}, tool_definitions=[ASK], approvals=approvals)
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
        if event.kind == "approval":
            await human.handler.aresolve(event.pending_id, approve(), by="alice")
        else:
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


async def paired(first: str, second: str, *, rounds: int = 6) -> tuple[float, float]:
    """The median turns of two kinds: blocks of turns of each, in alternation, on fresh kits
    (the load of a shared machine falls on both alike); the median of the blocks' medians."""
    medians: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for kind, found in zip((first, second), medians, strict=True):
            kit, room = await build(kind)
            await time_turns(kit, room, 50)  # warm-up
            found.append(statistics.median(await time_turns(kit, room, 200)) * 1e3)
            await kit.close()
    return statistics.median(medians[0]), statistics.median(medians[1])


async def main(turns: int, rounds: int, growth_turns: int) -> list[Row]:
    gc.collect()
    rows: list[Row] = []
    for kind in ("text", "tool", "human", "unheld", "approval"):
        kit, room = await build(kind)
        await time_turns(kit, room, 50)  # warm-up
        laps = await time_turns(kit, room, turns)
        median = statistics.median(laps) * 1e3
        p99 = percentile(laps, 0.99) * 1e3
        human = kind == "human"
        rows.append(
            Row(
                f"a {kind} turn: median, p99",
                f"{median:.3f} ms, {p99:.3f} ms ({1e3 / median:,.0f} turns/s)",
                f"<= {TARGET_MS} ms" if human else "",
                median <= TARGET_MS if human else None,
                value=median,
                unit="ms",
            )
        )
        await kit.close()
    tool, unheld = await paired("tool", "unheld", rounds=rounds)
    human, approval = await paired("human", "approval", rounds=rounds)
    over = (unheld / tool - 1) * 100
    ratio = approval / human
    rows.append(
        Row(
            "when= says no, beside the plain tool turn (paired medians)",
            f"{unheld:.3f} / {tool:.3f} ms ({over:+.1f} %)",
            "<= +5 %",
            over <= 5,
            value=unheld,
            unit="ms",
            ratio=unheld / tool,
        )
    )
    rows.append(
        Row(
            "approved at once by a hook, beside the AskUserQuestion turn (paired medians)",
            f"{approval:.3f} / {human:.3f} ms ({ratio:.2f}x)",
            "<= 1.2x",
            ratio <= 1.2,
            value=approval,
            unit="ms",
            ratio=ratio,
        )
    )

    kit, room = await build("human")
    laps = await time_turns(kit, room, growth_turns)
    first = statistics.median(laps[:50]) * 1e3
    last = statistics.median(laps[-50:]) * 1e3
    growth = (last / first - 1) * 100
    rows.append(
        Row(
            f"history growth over {growth_turns} human turns: last 50 beside first 50",
            f"{last:.3f} / {first:.3f} ms ({growth:+.0f} %)",
            "flat",
            value=last,
            unit="ms",
            ratio=last / first,
        )
    )
    await kit.close()
    return rows


if __name__ == "__main__":
    run = start("turns", __doc__)
    turns = QUICK_TURNS if run.quick else TURNS
    growth = QUICK_GROWTH_TURNS if run.quick else GROWTH_TURNS
    rows = asyncio.run(main(turns, run.rounds_or(6, 2), growth))
    run.table("Turns through RoomKit", rows, note=f"{turns:,} turns per kind")
    sys.exit(run.finish())
