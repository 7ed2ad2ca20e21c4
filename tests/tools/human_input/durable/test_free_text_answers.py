"""A person's free text is text, on every store: ``42`` typed as an answer is the text ``42``
when the answer schema takes a string; structured answers still arrive as JSON text."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import InvalidAnswerError

TEXT = {"type": "string"}


async def answered(
    make_handler: HandlerFactory, schema: dict[str, Any], text: str, **asked: Any
) -> str:
    """Ask with ``schema``, answer ``text`` through ``aresolve``; what the wait returns."""
    handler = make_handler()
    arguments = asked or {"question": "Anything to add?"}
    request = await handler.create("AskUserQuestion", arguments, answer_schema=schema)
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))
    assert await handler.aresolve(request.pending_id, text, by="alice") is True
    return await waiting


@pytest.mark.parametrize("text", ["42", "1", "true", "null", "-0.5", "[1, 2]", '{"a": 1}', '"hi"'])
async def test_free_text_that_reads_as_json_is_taken_as_text(
    make_handler: HandlerFactory, text: str
) -> None:
    assert await answered(make_handler, TEXT, text) == text


async def test_a_choice_labelled_42_is_taken(make_handler: HandlerFactory) -> None:
    schema = {"type": "string", "enum": ["42", "7"]}
    result = await answered(make_handler, schema, "42", question="Pick", options=["42", "7"])
    assert result == "42"


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        ({"type": "integer"}, "42"),
        ({"type": "boolean"}, "true"),
        ({"type": "null"}, "null"),
        ({"type": "object", "required": ["n"]}, '{"n": 2}'),
        ({"type": "array", "items": {"type": "integer"}}, "[1, 2]"),
        ({"type": ["integer", "string"]}, "42"),
        ({"enum": ["a", "b"]}, '"a"'),
    ],
)
async def test_a_structured_answer_still_arrives_as_json_text(
    make_handler: HandlerFactory, schema: dict[str, Any], text: str
) -> None:
    assert await answered(make_handler, schema, text) == text


@pytest.mark.parametrize(
    ("schema", "text", "problem"),
    [
        # The schema takes no text: the problem is the JSON value's.
        ({"type": "integer", "minimum": 10}, "5", "answer: 5 is less than the minimum of 10"),
        ({"type": "object", "required": ["n"]}, "{}", "answer: 'n' is a required property"),
        ({"type": "integer"}, "forty-two", "answer: 'forty-two' is not of type 'integer'"),
        # The schema takes text: the problem is the text's, not "42 is not a string".
        ({"type": "string", "minLength": 5}, "42", "answer: '42' is too short"),
        ({"type": "string", "enum": ["a"]}, "true", "answer: 'true' is not one of ['a']"),
    ],
)
async def test_an_answer_that_fits_neither_way_names_the_problem(
    make_handler: HandlerFactory, schema: dict[str, Any], text: str, problem: str
) -> None:
    handler = make_handler()
    request = await handler.create("Form", {"form": "x"}, answer_schema=schema)

    with pytest.raises(InvalidAnswerError) as refused:
        await handler.aresolve(request.pending_id, text)

    assert str(refused.value).endswith(problem)
    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.status == "pending"
