"""The demo's ladder: a question left waiting is re-announced, then escalated to the manager."""

from __future__ import annotations

import asyncio

from roomkit.desk.demo import DEMO_PERSON, DEMO_ROOM, build_demo
from roomkit.desk.demo_console import DEMO_MANAGER, Console
from roomkit.models.enums import ChannelType
from roomkit.tools.human_input.tool_handler import HumanInputCall


async def test_a_waiting_question_gets_a_reminder_then_an_escalation() -> None:
    escalated = asyncio.Event()

    def say(line: str) -> None:
        if line.startswith(f"[escalated, told {DEMO_MANAGER}]"):
            escalated.set()

    console = Console(say)
    demo = await build_demo(
        None, question_timeout=60, remind_after=0.1, escalate_after=0.2, console=console
    )
    assert demo.human is not None
    call = HumanInputCall(DEMO_ROOM, "agent", ChannelType.AI, "tc-1", DEMO_PERSON)
    try:
        async with demo.app.router.lifespan_context(demo.app):
            asking = asyncio.create_task(
                demo.human.ask("AskUserQuestion", {"question": "Which dates?"}, call=call)
            )
            await escalated.wait()
            [request] = await demo.handler.list_pending()
            assert await demo.handler.aresolve(request.pending_id, '{"answer": "May"}')
            assert await asking == '{"answer": "May"}'
    finally:
        await demo.aclose()
    assert console.lines[:2] == [
        f"[asked {DEMO_PERSON}] Which dates?",
        f"[reminder to {DEMO_PERSON}] still waiting: Which dates?",
    ]
    assert sorted(console.lines[2:4]) == [
        f"[escalated, told {DEMO_MANAGER}] Which dates?",
        f"[escalated, told {DEMO_PERSON}] Which dates?",
    ]
