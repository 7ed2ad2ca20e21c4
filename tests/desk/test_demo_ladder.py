"""The demo's ladder: a question left waiting is re-announced, then escalated to the manager."""

from __future__ import annotations

import asyncio

import httpx

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


async def test_the_manager_a_question_was_escalated_to_answers_it_on_the_desk() -> None:
    """Escalation makes the question the manager's to answer, as themselves, on the desk."""
    escalated = asyncio.Event()
    console = Console(lambda line: escalated.set() if line.startswith("[escalated") else None)
    demo = await build_demo(
        None, question_timeout=60, remind_after=0.1, escalate_after=0.2, console=console
    )
    assert demo.human is not None
    call = HumanInputCall(DEMO_ROOM, "agent", ChannelType.AI, "tc-1", DEMO_PERSON)
    headers = {"Authorization": f"Bearer {demo.token_for(DEMO_MANAGER)}"}
    transport = httpx.ASGITransport(app=demo.app)
    try:
        async with (
            demo.app.router.lifespan_context(demo.app),
            httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client,
        ):
            asking = asyncio.create_task(
                demo.human.ask("AskUserQuestion", {"question": "Which dates?"}, call=call)
            )
            await escalated.wait()
            [request] = await demo.handler.list_pending()
            view = await client.get(f"/api/requests/{request.pending_id}", headers=headers)
            assert view.status_code == 200, view.text
            assert view.json()["approvers"] == [DEMO_PERSON, DEMO_MANAGER]
            listed = await client.get("/api/requests", headers=headers)
            assert [r["id"] for r in listed.json()["requests"]] == [request.pending_id]
            answered = await client.post(
                f"/api/requests/{request.pending_id}/answer",
                json={"answer": "June"},
                headers=headers,
            )
            assert answered.status_code == 200, answered.text
            assert await asking == "June"
    finally:
        await demo.aclose()
    settled = await demo.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.settled_by == DEMO_MANAGER
    history = await demo.handler.history(request.pending_id)
    escalations = [entry for entry in history if entry["type"] == "escalated"]
    assert [(entry["approvers"], entry["surface"]) for entry in escalations] == [
        ([DEMO_MANAGER], "ladder")
    ]
