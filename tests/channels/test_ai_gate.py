"""Declare, validate, gate: what stops a call before it is served, and what the model reads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai_harness import ASK, LOOKUP, Build, ask, round_of, tool_call

from roomkit import HookResult, HookTrigger, HumanInputToolHandler
from roomkit.providers.ai.base import AITool

BEFORE = HookTrigger.BEFORE_TOOL_USE
INPUT = HookTrigger.ON_USER_INPUT_REQUIRED


def error(message: str) -> str:
    return json.dumps({"error": message})


async def test_a_block_refuses_the_call_and_the_model_reads_the_reason(build: Build) -> None:
    h = await build(round_of(ask()))
    asked: list[Any] = []

    @h.kit.hook(BEFORE)
    async def rate_limit(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("rate limited")

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.append(event)

    await h.say()

    assert h.read() == [(error("rate limited"), True)]
    report = h.report()
    assert (report.refused, report.is_error, report.error_detail) == (True, True, None)
    assert asked == []
    assert h.human is not None
    assert h.human.handler.pending == {}


async def test_a_block_without_a_reason_reads_the_default_denial(build: Build) -> None:
    h = await build(round_of(ask()))

    @h.kit.hook(BEFORE)
    async def deny(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("")

    await h.say()

    assert h.read() == [(error("Tool 'Ask' denied by pre-execution hook."), True)]
    assert h.report().refused


@pytest.mark.parametrize(
    ("behaviour", "detail"),
    [
        ("raise", "crashing: hook crashed"),
        ("timeout", "crashing: timed out after 2 s"),
        ("junk", "crashing: returned int instead of HookResult"),
    ],
)
async def test_a_failing_gate_hook_fails_closed(build: Build, behaviour: str, detail: str) -> None:
    h = await build(round_of(ask()))
    never = asyncio.Event()
    asked: list[Any] = []

    @h.kit.hook(BEFORE, timeout=2)
    async def crashing(event: Any, ctx: Any) -> Any:
        if behaviour == "raise":
            raise RuntimeError("hook crashed")
        if behaviour == "timeout":
            await never.wait()
        return 42

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.append(event)

    await h.say()

    assert h.read() == [(error("Tool 'Ask' denied by pre-execution hook."), True)]
    report = h.report()
    assert (report.refused, report.error_detail) == (True, detail)
    assert asked == []


async def test_a_rewrite_reaches_the_notification_and_the_answer(build: Build) -> None:
    h = await build(round_of(ask("Colour?")))
    seen = h.answer_from_hook()

    @h.kit.hook(BEFORE)
    async def reword(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"question": "Favourite colour?"}})

    await h.say()

    assert seen[0].arguments == {"question": "Favourite colour?"}
    assert h.report().arguments == {"question": "Favourite colour?"}
    assert h.read() == [('{"answer": "blue"}', False)]


async def test_a_rewrite_reaches_the_host_tool(build: Build) -> None:
    h = await build(round_of(tool_call("lookup", {"key": "a"})), tools=[LOOKUP], human=None)
    received: list[dict[str, Any]] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        received.append(arguments)
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(BEFORE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"key": "b"}})

    await h.say()

    assert received == [{"key": "b"}]


async def test_an_invalid_rewrite_is_refused(build: Build) -> None:
    h = await build(round_of(ask()))
    asked: list[Any] = []

    @h.kit.hook(BEFORE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"question": 7}})

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.append(event)

    await h.say()

    problem = "Invalid rewritten arguments for 'Ask': argument 'question' must be of type string"
    assert h.read() == [(error(problem), True)]
    assert h.report().refused
    assert asked == []


async def test_a_non_object_rewrite_is_denied(build: Build) -> None:
    h = await build(round_of(ask()))

    @h.kit.hook(BEFORE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": ["not", "an", "object"]})

    await h.say()

    assert h.read() == [(error("Tool 'Ask' denied by pre-execution hook."), True)]
    assert h.report().refused


async def test_an_undeclared_tool_is_refused_before_any_hook(build: Build) -> None:
    h = await build(round_of(tool_call("ConfirmAction", {"action": "delete"})))
    ran: list[str] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        ran.append("before")

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        ran.append("input")

    @h.kit.on("before_tool_use")
    async def listen(event: Any) -> None:
        ran.append("event")

    await h.say()

    assert h.read() == [(error("Tool 'ConfirmAction' is not declared."), True)]
    report = h.report()
    assert (report.refused, report.is_error) == (True, True)
    assert ran == []
    assert h.human is not None
    assert h.human.handler.pending == {}


async def test_a_human_name_the_turn_never_offers_is_not_asked(build: Build) -> None:
    human = HumanInputToolHandler({"Ask", "ConfirmAction"}, tool_definitions=[ASK])
    h = await build(round_of(tool_call("ConfirmAction", {"action": "x"})), human=human)
    asked: list[Any] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.append(event)

    await h.say()

    assert h.read() == [(error("Tool 'ConfirmAction' is not declared."), True)]
    assert asked == []


SURVEY = AITool(
    name="Survey",
    description="Ask several questions.",
    parameters={
        "type": "object",
        "$defs": {
            "option": {
                "type": "object",
                "properties": {"label": {"type": "string"}},
                "required": ["label"],
            }
        },
        "properties": {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "kind": {"enum": ["single", "multi"]},
                        "options": {"type": "array", "items": {"$ref": "#/$defs/option"}},
                    },
                    "required": ["question"],
                },
            }
        },
        "required": ["questions"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing required argument 'questions'"),
        ({"questions": "x"}, "argument 'questions' must be of type array"),
        (
            {"questions": [{"question": 1}]},
            "argument 'questions[0].question' must be of type string",
        ),
        (
            {"questions": [{"question": "q", "kind": "some"}]},
            "argument 'questions[0].kind' must be one of ['single', 'multi']",
        ),
        (
            {"questions": [{"question": "q", "options": [{}]}]},
            "missing required argument 'questions[0].options[0].label'",
        ),
        (
            {"questions": [], "extra": 1},
            "unknown argument 'extra' (this tool accepts: questions)",
        ),
    ],
)
async def test_invalid_arguments_are_refused_with_the_problem(
    build: Build, arguments: dict[str, Any], problem: str
) -> None:
    human = HumanInputToolHandler({"Survey"}, tool_definitions=[SURVEY])
    h = await build(round_of(tool_call("Survey", arguments)), human=human)
    ran: list[str] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        ran.append("before")

    await h.say()

    assert h.read() == [(error(f"Invalid arguments for 'Survey': {problem}"), True)]
    assert h.report().refused
    assert ran == []
    assert human.handler.pending == {}


async def test_arguments_a_pattern_takes_too_long_on_are_refused(build: Build) -> None:
    """Matched by re, forty "a" and a "!" against this pattern would hold the loop for hours."""
    code = {"type": "string", "pattern": "^(a|a)+$"}
    tool = AITool(
        name="Redeem",
        description="Redeem a code.",
        parameters={"type": "object", "properties": {"code": code}, "required": ["code"]},
    )
    human = HumanInputToolHandler({"Redeem"}, tool_definitions=[tool])
    h = await build(round_of(tool_call("Redeem", {"code": "a" * 40 + "!"})), human=human)

    await h.say()

    problem = (
        "arguments: the tool's schema pattern '^(a|a)+$' took too long to check against them; "
        "write them again, shorter or plainer"
    )
    assert h.read() == [(error(f"Invalid arguments for 'Redeem': {problem}"), True)]
    assert h.report().refused
    assert human.handler.pending == {}


async def test_valid_nested_arguments_reach_the_person(build: Build) -> None:
    human = HumanInputToolHandler({"Survey"}, tool_definitions=[SURVEY])
    arguments = {"questions": [{"question": "q", "kind": "multi", "options": [{"label": "a"}]}]}
    h = await build(round_of(tool_call("Survey", arguments)), human=human)
    seen = h.answer_from_hook("a")

    await h.say()

    assert seen[0].arguments == arguments
    assert h.read() == [("a", False)]
