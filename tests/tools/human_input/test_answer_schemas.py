"""An answer schema that no answer could be checked against is refused where it is given."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from roomkit import InvalidAnswerError
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler


class Colour(BaseModel):
    colour: str


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/nowhere"},
        {"type": "object", "properties": {"colour": {"$ref": "#/$defs/Colour"}}},
    ],
)
async def test_a_ref_to_nowhere_is_refused_and_nothing_is_stored(
    handler: HumanInputHandler, schema: dict[str, object]
) -> None:
    """A ``$ref`` that resolves to nothing failed with jsonschema's own error, or was stored
    and failed the person's answer later."""
    for create in (handler.create, handler.create_detached):
        with pytest.raises(ValueError, match=r"^answer_schema holds a \$ref .*'#/") as caught:
            await create("Ask", {"question": "Which colour?"}, answer_schema=schema)
        assert "pass " in str(caught.value)
    assert await handler.list_pending() == []


@pytest.mark.parametrize("schema", [5, "string", ["type", "string"], int, Colour(colour="red")])
async def test_a_schema_of_no_known_form_is_refused_saying_what_to_pass(
    handler: HumanInputHandler, schema: object
) -> None:
    with pytest.raises(TypeError, match=r"^answer_schema must be a JSON Schema dict or a Pydantic"):
        await handler.create("Ask", {}, answer_schema=schema)  # type: ignore[arg-type]
    assert await handler.list_pending() == []


async def test_an_invalid_schema_is_refused_saying_what_to_pass(
    handler: HumanInputHandler,
) -> None:
    with pytest.raises(ValueError, match=r"^answer_schema is no valid JSON Schema \(.*\): pass"):
        await handler.create("Ask", {}, answer_schema={"type": 12})
    assert await handler.list_pending() == []


def test_the_tool_handler_names_the_tool_of_a_ref_to_nowhere() -> None:
    with pytest.raises(ValueError, match=re.escape("answer_schemas['Ask'] holds a $ref")):
        HumanInputToolHandler({"Ask"}, answer_schemas={"Ask": {"$ref": "#/nowhere"}})


async def test_a_ref_inside_the_schema_is_taken(handler: HumanInputHandler) -> None:
    schema = {
        "type": "object",
        "$defs": {"C": {"type": "string"}},
        "properties": {"c": {"$ref": "#/$defs/C"}},
    }
    asked = await handler.create("Ask", {}, answer_schema=schema)
    with pytest.raises(InvalidAnswerError, match=r"answer\.c"):
        await handler.aresolve(asked.pending_id, '{"c": 5}')
    assert await handler.aresolve(asked.pending_id, '{"c": "red"}')


# Each doubles its time per "a" under re: forty of them and a "!" would hold the process for
# hours, in the engine of the interpreter, where no other task of the loop runs.
SLOW = {"type": "string", "pattern": "^(a|a)+$"}
NESTED = {"type": "string", "pattern": "^(a+)+$"}
STUCK = "a" * 40 + "!"


async def test_an_answer_a_pattern_takes_too_long_on_is_refused(
    handler: HumanInputHandler,
) -> None:
    request = await handler.create("custom_tool", {"question": "n?"}, answer_schema=SLOW)
    with pytest.raises(InvalidAnswerError, match=re.escape("pattern '^(a|a)+$' took too long")):
        await handler.aresolve(request.pending_id, json.dumps(STUCK))
    assert (await handler.get_request(request.pending_id)).status == "pending"
    assert await handler.aresolve(request.pending_id, json.dumps("aaa"))
    assert await handler.wait(request.pending_id) == '"aaa"'


async def test_an_answer_a_nested_repeat_misses_is_refused(handler: HumanInputHandler) -> None:
    request = await handler.create("custom_tool", {"question": "n?"}, answer_schema=NESTED)
    with pytest.raises(InvalidAnswerError, match=re.escape("does not match '^(a+)+$'")):
        await handler.aresolve(request.pending_id, json.dumps(STUCK))
    assert (await handler.get_request(request.pending_id)).status == "pending"
