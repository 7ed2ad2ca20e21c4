"""The frameworks' examples run as shipped, offline, on each framework's own test doubles."""

from __future__ import annotations

from pathlib import Path

from tests.test_examples import load

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def test_the_langgraph_example_asks_then_runs_the_edited_call() -> None:
    log = await load(EXAMPLES / "langgraph_approval.py").main()
    assert log == [
        "[asked alice] Which colour should the logo be?",
        "[approval for bob] send_logo {'to': 'bob@example.com', 'colour': 'blue'}",
        "[graph] colour=blue sent={'type': 'edit', 'edited_action': {'name': 'send_logo', "
        "'args': {'to': 'carol@example.com', 'colour': 'blue'}}}",
    ]


async def test_the_pydantic_ai_example_answers_and_edits() -> None:
    log = await load(EXAMPLES / "pydantic_ai_approval.py").main()
    assert log[-1] == '[agent] {"ask_user":"net 30","send_invoice":"invoice sent for 90"}'


async def test_the_openai_agents_example_pauses_and_resumes_once_approved() -> None:
    log = await load(EXAMPLES / "openai_agents_approval.py").main()
    assert log == [
        "[paused] delete_branch {'name': 'old-feature'} for ('alice',)",
        "[resumed] deleted ['old-feature'], still pending: []",
    ]
