"""Calls of AskUserQuestion the schema lets through but no person could answer: an error
result saying what to send, and nobody asked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.mcp.mcp_kit import served, text_of

NO_QUESTION = (
    "Invalid arguments for 'AskUserQuestion': missing required argument 'question' or "
    "'questions': send the question to ask as 'question', or a list of at least one question "
    "as 'questions'"
)


def error(result: Any) -> str:
    assert result.is_error
    return str(json.loads(text_of(result))["error"])


@pytest.mark.parametrize(
    "arguments",
    [
        {"multiSelect": True},
        {"options": ["Tea", "Coffee"]},
        {"options": ["A", "B"], "multiSelect": False},
    ],
)
async def test_a_call_without_a_question_asks_nobody(arguments: dict[str, Any]) -> None:
    async with served() as (handler, client):
        result = await client.call_tool("AskUserQuestion", arguments)
    assert error(result) == NO_QUESTION
    assert await handler.list_pending() == []


async def test_two_options_with_one_label_ask_nobody() -> None:
    """Within one of ``questions``, as ``uniqueItems`` refuses it in the top-level options."""
    repeated = {
        "questions": [
            {
                "question": "When?",
                "options": [{"label": "Now"}, {"label": "Later"}],
                "multiSelect": False,
            },
            {
                "question": "Where?",
                "options": [{"label": "Paris"}, {"label": "Paris", "description": "Texas"}],
                "multiSelect": False,
            },
        ]
    }
    async with served() as (handler, client):
        result = await client.call_tool("AskUserQuestion", repeated)
    assert error(result) == (
        "Invalid arguments for 'AskUserQuestion': argument 'questions[1].options': the label "
        "'Paris' is given twice; give each option a label of its own, so the person and the "
        "answer can tell them apart"
    )
    assert await handler.list_pending() == []


async def test_one_label_in_two_questions_is_asked() -> None:
    """Nobody answers within the timeout (virtual time): the person was asked."""
    same = {
        "questions": [
            {"question": q, "options": [{"label": "Yes"}, {"label": "No"}], "multiSelect": False}
            for q in ("Tea?", "Coffee?")
        ]
    }
    async with served(timeout=5) as (_, client):
        result = await client.call_tool("AskUserQuestion", same)
    assert "timed out after 5s" in error(result)
