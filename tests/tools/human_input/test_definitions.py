"""The standard human-input tools the library ships, the shapes they take, and what a call
of AskUserQuestion must hold beyond its schema."""

from __future__ import annotations

import pytest

from roomkit.providers.ai.base import AITool
from roomkit.tools.human_input import (
    ASK_USER_QUESTION,
    CONFIRM_ACTION,
    HUMAN_INPUT_TOOLS,
    HumanInputToolHandler,
)
from roomkit.tools.human_input._kinds import Kind, kind_of
from roomkit.tools.human_input.question_rules import question_problem
from roomkit.tools.validation import check_tool_schema, validate_tool_arguments

ASK = ASK_USER_QUESTION["parameters"]
CONFIRM = CONFIRM_ACTION["parameters"]


def test_both_tools_are_valid_tool_definitions() -> None:
    """Each definition makes an AITool and its parameters pass the tool-schema check."""
    for definition in HUMAN_INPUT_TOOLS:
        check_tool_schema(definition["name"], definition["parameters"])
        assert AITool(**definition).name == definition["name"]
    assert [tool["name"] for tool in HUMAN_INPUT_TOOLS] == ["AskUserQuestion", "ConfirmAction"]


def test_a_bare_question_is_enough() -> None:
    """``{"question": ...}`` alone validates and is shown as a free-text question."""
    arguments = {"question": "Which colour?"}
    assert validate_tool_arguments(ASK, arguments) is None
    assert kind_of("AskUserQuestion", arguments) is Kind.QUESTION


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"question": "Size?", "options": ["S", "M"]}, Kind.QUESTION),
        ({"question": "Toppings?", "options": ["Ham", "Egg"], "multiSelect": True}, Kind.QUESTION),
        (
            {
                "questions": [
                    {
                        "question": "When?",
                        "options": [{"label": "Now"}, {"label": "Later"}],
                        "multiSelect": False,
                    }
                ]
            },
            Kind.QUESTIONS,
        ),
    ],
)
def test_every_question_shape_validates(arguments: dict[str, object], kind: Kind) -> None:
    assert validate_tool_arguments(ASK, arguments) is None
    assert kind_of("AskUserQuestion", arguments) is kind


def test_an_empty_or_unknown_argument_is_refused() -> None:
    assert validate_tool_arguments(ASK, {}) is not None
    assert validate_tool_arguments(ASK, {"question": "Hi?", "colour": "red"}) is not None
    assert validate_tool_arguments(ASK, {"question": "Hi?", "options": ["one"]}) is not None


def test_confirm_action_takes_an_action_and_is_a_confirmation() -> None:
    arguments = {"action": "Book the flight", "details": {"price": "120 EUR"}}
    assert validate_tool_arguments(CONFIRM, arguments) is None
    assert validate_tool_arguments(CONFIRM, {"details": {}}) is not None
    assert kind_of("ConfirmAction", arguments) is Kind.CONFIRM


def test_a_tool_handler_serves_the_definitions() -> None:
    human = HumanInputToolHandler(
        {tool["name"] for tool in HUMAN_INPUT_TOOLS},
        tool_definitions=[AITool(**tool) for tool in HUMAN_INPUT_TOOLS],
    )
    assert {tool.name for tool in human.tools} == {"AskUserQuestion", "ConfirmAction"}


SPEC_ASK = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
}
"""AskUserQuestion as the spec declares it."""
QUESTIONS_ONLY = {"type": "object", "properties": {"questions": {"type": "array"}}}
OWN_ARGUMENTS = {"type": "object", "properties": {"prompt": {"type": "string"}}}


@pytest.mark.parametrize(
    ("parameters", "arguments"),
    [
        (ASK, {"question": "Tea?"}),
        (ASK, {"question": "Tea?", "options": ["Green", "Black"], "multiSelect": True}),
        (ASK, {"questions": [{"question": "Tea?", "options": [{"label": "Yes"}]}]}),
        (SPEC_ASK, {"question": "Tea?"}),
        (QUESTIONS_ONLY, {"questions": [{"question": "Tea?"}]}),
        (OWN_ARGUMENTS, {"prompt": "Tea?"}),
    ],
)
def test_a_call_that_asks_a_question_passes(
    parameters: dict[str, object], arguments: dict[str, object]
) -> None:
    assert question_problem("AskUserQuestion", parameters, arguments) is None


@pytest.mark.parametrize(
    ("parameters", "arguments", "problem"),
    [
        (ASK, {"multiSelect": True}, "missing required argument 'question' or 'questions'"),
        (ASK, {"options": ["A", "B"]}, "missing required argument 'question' or 'questions'"),
        (SPEC_ASK, {}, "missing required argument 'question': send the question to ask"),
        (QUESTIONS_ONLY, {"questions": []}, "missing required argument 'questions': send a"),
        (
            SPEC_ASK,
            {"question": "Tea?", "options": ["Green", "Green"]},
            "argument 'options': the label 'Green' is given twice",
        ),
        (
            QUESTIONS_ONLY,
            {"questions": [{"question": "Tea?", "options": ["Yes", {"label": "Yes"}]}]},
            "argument 'questions[0].options': the label 'Yes' is given twice",
        ),
    ],
)
def test_a_call_that_asks_nothing_answerable_is_refused(
    parameters: dict[str, object], arguments: dict[str, object], problem: str
) -> None:
    found = question_problem("AskUserQuestion", parameters, arguments)
    assert found is not None
    assert found.startswith(problem)


def test_another_tool_is_left_to_its_schema() -> None:
    assert question_problem("Ask", ASK, {"multiSelect": True}) is None
    assert question_problem("AskUserQuestion", OWN_ARGUMENTS, {}) is None
