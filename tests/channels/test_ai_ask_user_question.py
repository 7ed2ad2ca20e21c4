"""AskUserQuestion calls its schema lets through but no person could answer: the model reads
what to send, and nobody is asked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ai_harness import Build, round_of, tool_call

from roomkit import HookResult, HookTrigger, HumanInputToolHandler
from roomkit.providers.ai.base import AITool
from roomkit.tools.human_input import ASK_USER_QUESTION, HumanInputHandler

ASK = AITool(**ASK_USER_QUESTION)
NO_QUESTION = (
    "Invalid arguments for 'AskUserQuestion': missing required argument 'question' or "
    "'questions': send the question to ask as 'question', or a list of at least one question "
    "as 'questions'"
)


def human(handler: HumanInputHandler | None = None) -> HumanInputToolHandler:
    return HumanInputToolHandler({"AskUserQuestion"}, handler=handler, tool_definitions=[ASK])


def error(message: str) -> str:
    return json.dumps({"error": message})


def asked(h: Any) -> list[Any]:
    """The ON_USER_INPUT_REQUIRED events of ``h``'s kit, as they come."""
    seen: list[Any] = []

    @h.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def notify(event: Any, ctx: Any) -> None:
        seen.append(event)

    return seen


@pytest.mark.parametrize("arguments", [{"multiSelect": True}, {"options": ["Tea", "Coffee"]}])
async def test_a_call_without_a_question_is_refused(
    build: Build, arguments: dict[str, Any]
) -> None:
    h = await build(round_of(tool_call("AskUserQuestion", arguments)), human=human())
    seen = asked(h)

    await h.say()

    assert h.read() == [(error(NO_QUESTION), True)]
    assert h.report().refused
    assert seen == []


async def test_two_options_with_one_label_are_refused(build: Build) -> None:
    question = {
        "question": "Where?",
        "options": [{"label": "Paris"}, {"label": "Paris", "description": "Texas"}],
        "multiSelect": False,
    }
    call = tool_call("AskUserQuestion", {"questions": [question]})
    h = await build(round_of(call), human=human())
    seen = asked(h)

    await h.say()

    problem = (
        "Invalid arguments for 'AskUserQuestion': argument 'questions[0].options': the label "
        "'Paris' is given twice; give each option a label of its own, so the person and the "
        "answer can tell them apart"
    )
    assert h.read() == [(error(problem), True)]
    assert seen == []


async def test_a_rewrite_without_a_question_is_refused(build: Build) -> None:
    call = tool_call("AskUserQuestion", {"question": "Tea?"})
    h = await build(round_of(call), human=human())
    seen = asked(h)

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"multiSelect": True}})

    await h.say()

    problem = NO_QUESTION.replace("Invalid arguments", "Invalid rewritten arguments")
    assert h.read() == [(error(problem), True)]
    assert seen == []


async def test_a_question_longer_than_a_request_keeps_is_refused(build: Build) -> None:
    """The model reads how long its arguments are and what to send instead (every store
    refuses them alike: ``tests/tools/human_input/durable/test_arguments_size.py``)."""
    handler = HumanInputHandler()
    call = tool_call("AskUserQuestion", {"question": "x" * 60_000})
    h = await build(round_of(call), human=human(handler))
    seen = asked(h)

    await h.say()

    problem = (
        "Invalid arguments for 'AskUserQuestion': the arguments are 60,015 characters as JSON, "
        "over the 56,000 a request keeps: shorten them (the question, its options), or pass "
        "what identifies large content (an id, a URL), not the content"
    )
    assert h.read() == [(error(problem), True)]
    assert h.report().refused
    assert seen == []
    assert await handler.list_pending() == []
